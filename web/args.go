package web

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"countersign/views"
)

// argViews lists the arguments of a call, in the order the model gave
// them, when they are a JSON object: a string as text, anything else as
// compact JSON. It returns nil for arguments that are not an object, which
// are shown as they came.
func argViews(raw string) []views.ArgView {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []views.ArgView
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		a := views.ArgView{Key: key}
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			a.Value, a.Text = s, true
		} else {
			var buf bytes.Buffer
			if json.Compact(&buf, v) != nil {
				return nil
			}
			a.Value = buf.String()
		}
		out = append(out, a)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil // something after the object
	}
	return out
}

// summaryValue and summaryLen bound a call's arguments in short: each value
// to summaryValue characters, the whole to summaryLen.
const (
	summaryValue = 40
	summaryLen   = 120
)

// callSummary is a call's arguments on one line, for a list of calls:
// `slug: "about", body: "Hello…" (1,204 chars)`. Arguments that are not a
// JSON object are cut as they came.
func callSummary(raw string) string {
	args := argViews(raw)
	if args == nil {
		s, _ := cutRunes(strings.Join(strings.Fields(raw), " "), summaryLen)
		if s == "{}" {
			return ""
		}
		return s
	}
	parts := make([]string, len(args))
	for i, a := range args {
		v := a.Value
		if a.Text {
			one := strings.Join(strings.Fields(v), " ")
			if cut, clipped := cutRunes(one, summaryValue); clipped || one != v {
				n := utf8.RuneCountInString(v)
				v = `"` + cut + `"`
				if clipped {
					v += " (" + thousandsOf(n) + " chars)"
				}
			} else {
				v = `"` + v + `"`
			}
		} else {
			v, _ = cutRunes(v, summaryValue)
		}
		parts[i] = a.Key + ": " + v
	}
	s, _ := cutRunes(strings.Join(parts, ", "), summaryLen)
	return s
}

// cutRunes cuts s to at most n characters, the last an ellipsis when cut.
func cutRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	r := []rune(s)
	return string(r[:n-1]) + "…", true
}

// thousandsOf formats n with comma separators.
func thousandsOf(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
