package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestTokenCommands(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"COUNTERSIGN_DB": filepath.Join(t.TempDir(), "tokens.db"), "COUNTERSIGN_PASSWORD": "correct horse battery"}
	cmd := func(args ...string) (string, error) {
		t.Helper()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"countersign"}, args...), envOf(vars), &out)
		return out.String(), err
	}
	if _, err := cmd("user", "add", "bob", "operator"); err != nil {
		t.Fatal(err)
	}

	out, err := cmd("token", "create", "bob", "deploy bot")
	m := regexp.MustCompile(`^created token (\d+) "deploy bot" for bob \(operator\); it is shown only now:\n(cs_[A-Za-z0-9_-]{43})\n$`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("token create: %v, output %q", err, out)
	}
	id, secret := m[1], m[2]

	out, err = cmd("token", "list", "bob")
	if err != nil || strings.Contains(out, secret) {
		t.Fatalf("token list: %v; it must never print the secret:\n%s", err, out)
	}
	if !strings.Contains(out, "deploy bot") || !strings.Contains(out, secret[:9]+"…") || !strings.Contains(out, "never") || !strings.Contains(out, "active") {
		t.Fatalf("token list does not show the token, its start, never used and active:\n%s", out)
	}

	if out, err = cmd("token", "revoke", id); err != nil || out != "revoked token "+id+"\n" {
		t.Fatalf("token revoke: %v, output %q", err, out)
	}
	if out, _ = cmd("token", "list"); !strings.Contains(out, "revoked") {
		t.Fatalf("after revoking, token list:\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token"}, "usage"},
		{[]string{"token", "rotate"}, "unknown token command"},
		{[]string{"token", "create", "bob"}, "usage"},
		{[]string{"token", "create", "nobody", "x"}, "user nobody"},
		{[]string{"token", "create", "bob", " "}, "invalid token name"},
		{[]string{"token", "revoke", "x1"}, "not a number"},
		{[]string{"token", "revoke", id}, "already revoked"},
		{[]string{"token", "revoke", "999"}, "not found"},
		{[]string{"token", "list", "nobody"}, "user nobody"},
	} {
		if out, err := cmd(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v (output %q); want one containing %q", tc.args, err, out, tc.want)
		}
	}
}
