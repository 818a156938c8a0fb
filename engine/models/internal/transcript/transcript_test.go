package transcript

import (
	"testing"

	"countersign/engine"
)

func TestSystem(t *testing.T) {
	sys := func(s string) engine.Message { return engine.Message{Role: engine.RoleSystem, Content: s} }
	user := engine.Message{Role: engine.RoleUser, Content: "Hi"}
	tests := []struct {
		name string
		msgs []engine.Message
		want string
	}{
		{"none", []engine.Message{user}, ""},
		{"one", []engine.Message{sys("Be brief."), user}, "Be brief."},
		{"joined in order", []engine.Message{sys("You are an agent."), sys("Be brief."), user}, "You are an agent.\n\nBe brief."},
		{"blank left out", []engine.Message{sys(" \n"), sys("A"), sys(""), sys("B")}, "A\n\nB"},
		{"anywhere", []engine.Message{sys("A"), user, sys("B")}, "A\n\nB"},
	}
	for _, tc := range tests {
		if got := System(tc.msgs); got != tc.want {
			t.Errorf("%s: System = %q, want %q", tc.name, got, tc.want)
		}
	}
}
