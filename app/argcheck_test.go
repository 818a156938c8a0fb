package app

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"slug":{"type":"string","minLength":1},
		"price":{"type":"number"}},"required":["slug"],"additionalProperties":false}`)
	cases := []struct {
		args string
		want string // "" when valid; else a part of the message
	}{
		{`{"slug":"pricing"}`, ""},
		{`{"slug":"pricing","price":14}`, ""},
		{`{"slug":7}`, "at /slug"},
		{`{"price":14}`, "slug"},
		{`{"slug":"x","colour":"red"}`, "colour"},
		{`{"slug":""}`, "at /slug"},
		{`not json`, "not valid JSON"},
	}
	for _, tc := range cases {
		err := checkArgs(schema, json.RawMessage(tc.args))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	if err := checkArgs(json.RawMessage(`{"type":"objekt"}`), json.RawMessage(`{}`)); err == nil {
		t.Error("a schema that does not compile let an edit through")
	}
}
