package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrInvalidArguments is wrapped by the errors of a call whose arguments are
// not what the tool's schema asks for: not an object, an unknown or missing
// field, or a field of the wrong type.
var ErrInvalidArguments = errors.New("invalid arguments")

// param is one argument of a tool: a string, or with list a list of
// strings. params give both the schema and the decoding.
type param struct {
	name        string
	description string
	required    bool
	pattern     string
	list        bool
}

// args holds the decoded arguments that were present.
type args struct {
	strs  map[string]string
	lists map[string][]string
}

// str returns a required argument.
func (a args) str(name string) string { return a.strs[name] }

// opt returns an optional argument, or nil when it was absent.
func (a args) opt(name string) *string {
	v, ok := a.strs[name]
	if !ok {
		return nil
	}
	return &v
}

// list returns a list argument, nil when it was absent.
func (a args) list(name string) []string { return a.lists[name] }

// parseArgs decodes a JSON object of string and string-list fields. Unknown
// fields are refused, and so are missing required ones; a null field counts
// as absent.
// Empty input and null count as {} since some models send them for tools
// without arguments.
func parseArgs(raw json.RawMessage, params []param) (args, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return args{}, fmt.Errorf("%w: expected a JSON object", ErrInvalidArguments)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return args{}, fmt.Errorf("%w: %v", ErrInvalidArguments, err)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.ContainsFunc(params, func(p param) bool { return p.name == name }) {
			return args{}, fmt.Errorf("%w: unknown field %q", ErrInvalidArguments, name)
		}
	}
	a := args{strs: make(map[string]string, len(params))}
	for _, p := range params {
		v, ok := fields[p.name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if p.required {
				return args{}, fmt.Errorf("%w: missing required field %q", ErrInvalidArguments, p.name)
			}
			continue
		}
		if p.list {
			var l []string
			if err := json.Unmarshal(v, &l); err != nil {
				return args{}, fmt.Errorf("%w: field %q must be a list of strings", ErrInvalidArguments, p.name)
			}
			if a.lists == nil {
				a.lists = make(map[string][]string)
			}
			a.lists[p.name] = l
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return args{}, fmt.Errorf("%w: field %q must be a string", ErrInvalidArguments, p.name)
		}
		a.strs[p.name] = s
	}
	return a, nil
}

// schema returns the JSON Schema of an object of the given params.
func schema(params []param) json.RawMessage {
	type item struct {
		Type string `json:"type"`
	}
	type property struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
		Pattern     string `json:"pattern,omitempty"`
		Items       *item  `json:"items,omitempty"`
	}
	props := make(map[string]property, len(params))
	required := []string{}
	for _, p := range params {
		prop := property{Type: "string", Description: p.description, Pattern: p.pattern}
		if p.list {
			prop.Type, prop.Pattern, prop.Items = "array", "", &item{Type: "string"}
		}
		props[p.name] = prop
		if p.required {
			required = append(required, p.name)
		}
	}
	b, err := json.Marshal(struct {
		Type                 string              `json:"type"`
		Properties           map[string]property `json:"properties"`
		Required             []string            `json:"required"`
		AdditionalProperties bool                `json:"additionalProperties"`
	}{"object", props, required, false})
	if err != nil {
		panic(fmt.Sprintf("tools: schema: %v", err)) // plain strings always marshal
	}
	return b
}

// compact encodes v as compact JSON without HTML escaping, so that a model
// reads "<" and "&" as they are.
func compact(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// Arguments shared by several tools.
var (
	slugParam = param{
		name:        "slug",
		description: "The page's slug: 1 to 64 characters of a-z, 0-9 and -.",
		required:    true,
		pattern:     "^[a-z0-9-]{1,64}$",
	}
)

// slugArg returns the slug argument, refusing a malformed one before it
// reaches the workspace.
func slugArg(a args) (string, error) {
	slug := a.str("slug")
	if !ValidSlug(slug) {
		return "", slugError(slug)
	}
	return slug, nil
}
