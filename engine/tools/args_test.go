package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	params := []param{
		{name: "slug", required: true},
		{name: "title"},
	}
	tests := []struct {
		raw     string
		want    string // slug|title, "-" for an absent title
		wantErr string
	}{
		{raw: `{"slug":"a"}`, want: "a|-"},
		{raw: ` {"slug":"a","title":"T"} `, want: "a|T"},
		{raw: `{"slug":"a","title":null}`, want: "a|-"},
		{raw: `{"slug":"","title":""}`, want: "|"},
		{raw: `{}`, wantErr: `missing required field "slug"`},
		{raw: ``, wantErr: `missing required field "slug"`},
		{raw: `null`, wantErr: `missing required field "slug"`},
		{raw: `{"slug":null}`, wantErr: `missing required field "slug"`},
		{raw: `{"slug":"a","colour":"red"}`, wantErr: `unknown field "colour"`},
		{raw: `{"slug":1}`, wantErr: `field "slug" must be a string`},
		{raw: `{"slug":"a","title":["x"]}`, wantErr: `field "title" must be a string`},
		{raw: `["a"]`, wantErr: "expected a JSON object"},
		{raw: `"a"`, wantErr: "expected a JSON object"},
		{raw: `{"slug":`, wantErr: "invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			a, err := parseArgs(json.RawMessage(tt.raw), params)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidArguments) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidArguments saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			title := "-"
			if p := a.opt("title"); p != nil {
				title = *p
			}
			if got := a.str("slug") + "|" + title; got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestArgsWithoutParams(t *testing.T) {
	for _, raw := range []string{``, `null`, `{}`, ` { } `} {
		if _, err := parseArgs(json.RawMessage(raw), nil); err != nil {
			t.Errorf("parseArgs(%q): %v", raw, err)
		}
	}
	if _, err := parseArgs(json.RawMessage(`{"x":"y"}`), nil); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("unknown field accepted: %v", err)
	}
}
