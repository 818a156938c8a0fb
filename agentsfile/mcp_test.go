package agentsfile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/mcptools"
)

// mcpEnv is env with the variables of the MCP tests: DATA_DIR from the app,
// the rest from a fake environment, which also has a DATA_DIR that must
// lose.
func mcpEnv() Env {
	e := env()
	e.Vars = map[string]string{"DATA_DIR": "/data"}
	vars := map[string]string{"DATA_DIR": "/wrong", "TOOLS": "/opt/mcp", "FS_KEY": "k-123", "ACME_HOST": "crm.acme.example",
		"ACME_MCP_TOKEN": "s3cret", "ACME_TENANT": "t1", "EMPTY": "", "BAD_URL": "not a url s3cret"}
	e.Getenv = func(name string) string { return vars[name] }
	return e
}

// Both transports become the server configs of the agent, in the order of
// the file, with every variable expanded; an alias shares the declaration,
// not the server.
func TestLoadServers(t *testing.T) {
	file := `
agents:
  - name: files
    title: Files
    instructions: x
    tools: [current_time]
    mcp_servers: &servers
      - name: filesystem
        command: ${TOOLS}/mcp-server-filesystem
        args: ["${DATA_DIR}/sandbox", "--price=$$5", "${DATA_DIR}${DATA_DIR}"]
        env:
          LOG_LEVEL: debug
          API_KEY: key-${FS_KEY}
        dir: work
        tools: [read_text_file, write_file, edit_file]
        previews:
          - tool: edit_file
            dry_run: dryRun
          - tool: write_file
            diff_against: read_text_file
            path: file
            content: text
        connect_timeout: 5s
        call_timeout: 90s
      - name: acme-crm
        url: https://${ACME_HOST}/mcp
        headers:
          Authorization: Bearer ${ACME_MCP_TOKEN}
          X-Tenant: ${ACME_TENANT}
    rules:
      - {name: edits-ask, tool: edit_file, approval: always}
      - {name: crm-reads, tool: crm_search, approval: never}
  - name: plain
    title: Plain
    instructions: y
  - name: again
    title: Again
    instructions: z
    mcp_servers: *servers
`
	agents, err := Load("a.yaml", []byte(file), mcpEnv())
	if err != nil {
		t.Fatal(err)
	}
	fs := mcptools.ServerConfig{Agent: "files", Name: "filesystem", Command: "/opt/mcp/mcp-server-filesystem",
		Args: []string{"/data/sandbox", "--price=$5", "/data/data"}, Env: map[string]string{"LOG_LEVEL": "debug", "API_KEY": "key-k-123"},
		Dir: "work", Tools: []string{"read_text_file", "write_file", "edit_file"},
		Previews: map[string]mcptools.PreviewSpec{
			"edit_file":  {DryRun: "dryRun"},
			"write_file": {DiffAgainst: "read_text_file", PathArg: "file", ContentArg: "text"},
		},
		ConnectTimeout: 5 * time.Second, CallTimeout: 90 * time.Second}
	crm := mcptools.ServerConfig{Agent: "files", Name: "acme-crm", URL: "https://crm.acme.example/mcp",
		Headers: map[string]string{"Authorization": "Bearer s3cret", "X-Tenant": "t1"}}
	fs2, crm2 := fs, crm
	fs2.Agent, crm2.Agent = "again", "again"
	servers := Servers(agents)
	var got []mcptools.ServerConfig
	for _, s := range servers {
		got = append(got, s.Config())
	}
	if want := []mcptools.ServerConfig{fs, crm, fs2, crm2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("servers\n %+v\nwant\n %+v", got, want)
	}
	files, plain := agents[0], agents[1]
	if len(files.Toolsets) != 2 || files.Toolsets[0] != engine.Toolset(servers[0]) || files.Toolsets[1] != engine.Toolset(servers[1]) {
		t.Errorf("toolsets of files: %v", files.Toolsets)
	}
	if plain.Toolsets != nil {
		t.Errorf("toolsets of plain: %v", plain.Toolsets)
	}
	for _, tt := range []struct {
		tool string
		want engine.PolicyResult
	}{
		{"edit_file", engine.PolicyResult{Person: true, Rule: "edits-ask"}},
		{"crm_search", engine.PolicyResult{Rule: "crm-reads"}},
		{"write_file", engine.PolicyResult{Person: true}},
	} {
		res, err := files.Policy.Check(context.Background(), engine.PolicyCall{RunID: "r", Agent: "files", Initiator: "olga", Marked: true,
			Call: engine.ToolCall{Name: tt.tool, Arguments: `{"path":"a"}`}})
		if err != nil || res != tt.want {
			t.Errorf("%s: %+v, %v; want %+v", tt.tool, res, err, tt.want)
		}
	}
}

// An agent may offer the tools of its servers only: it needs no tools key.
func TestLoadServerOnly(t *testing.T) {
	agents, err := Load("a.yaml", []byte(agent("mcp_servers:", "  - {name: fs, command: mcp-fs}")), mcpEnv())
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 1 || agents[0].Tools != nil || len(Servers(agents)) != 1 || Servers(agents)[0].Config().Command != "mcp-fs" {
		t.Fatalf("agents %+v", agents)
	}
}

// Each mistake in the MCP servers of an agent is reported at its line, all
// of them at once; no message shows the value of a variable.
func TestLoadServerErrors(t *testing.T) {
	srv := func(lines ...string) string { return agent(append([]string{"mcp_servers:"}, lines...)...) }
	tests := []struct {
		name string
		file string
		want []string // "line: part of the message", in order
	}{
		{"not a list", agent("mcp_servers: {name: fs}"), []string{"5: mcp_servers: want a list, got keys and values"}},
		{"not a mapping", srv("  - fs"), []string{`6: an MCP server: want keys and values, got "fs"`}},
		{"unknown key", srv("  - name: fs", "    cmd: x"),
			[]string{`6: MCP server "fs": give a command (stdio) or a url (Streamable HTTP)`,
				`7: an MCP server: unknown key "cmd" (the keys are name, command, args, env, dir, url, headers, tools, previews, connect_timeout, call_timeout)`}},
		{"no name", srv("  - command: x"), []string{"6: MCP server 1: missing key name"}},
		{"bad name", srv("  - name: File System", "    command: x"),
			[]string{`6: MCP server 1: name: want lower-case letters, digits and dashes, as in filesystem, got "File System"`}},
		{"null name", srv("  - name:", "    command: x"), []string{"6: an MCP server's name: want a value, got nothing"}},
		{"two of one name", srv("  - {name: fs, command: x}", "  - {name: fs, command: y}"),
			[]string{`7: two MCP servers of the agent "a" are named "fs" (the first at line 6)`}},
		{"neither command nor url", srv("  - name: fs"), []string{`6: MCP server "fs": give a command (stdio) or a url (Streamable HTTP)`}},
		{"both command and url", srv("  - name: fs", "    command: x", "    url: https://mcp.example.com/mcp"),
			[]string{`8: MCP server "fs": give a command (stdio) or a url (Streamable HTTP), not both`}},
		{"args with a url", srv("  - name: h", "    url: https://mcp.example.com/mcp", "    args: [a]", "    dir: /tmp"),
			[]string{`8: MCP server "h": args goes with command (stdio) only`, `9: MCP server "h": dir goes with command (stdio) only`}},
		{"headers with a command", srv("  - name: fs", "    command: x", "    headers: {Authorization: '${ACME_MCP_TOKEN}'}"),
			[]string{`8: MCP server "fs": headers goes with url (Streamable HTTP) only`}},
		{"empty command", srv("  - name: fs", `    command: ""`), []string{`7: MCP server "fs": command: is empty`}},
		{"command a list", srv("  - name: fs", "    command: [npx, fs]"), []string{`7: MCP server "fs": command: want a value, got a list`}},
		{"args not a list", srv("  - name: fs", "    command: x", "    args: -v"), []string{`8: MCP server "fs": args: want a list, got "-v"`}},
		{"an argument a mapping", srv("  - name: fs", "    command: x", "    args:", "      - {a: b}"),
			[]string{`9: MCP server "fs": args: want a value, got keys and values`}},
		{"env not a mapping", srv("  - name: fs", "    command: x", "    env: [A]"),
			[]string{`8: MCP server "fs": env: want keys and values, got a list`}},
		{"env bad name", srv("  - name: fs", "    command: x", "    env:", "      BAD-NAME: x"),
			[]string{`9: MCP server "fs": env: "BAD-NAME": a variable's name is letters, digits and underscores`}},
		{"env key twice", srv("  - name: fs", "    command: x", "    env:", "      A: x", "      A: y"),
			[]string{`10: MCP server "fs": env: the key A is given twice (the first at line 9)`}},
		{"env value null", srv("  - name: fs", "    command: x", "    env:", "      A:"),
			[]string{`9: MCP server "fs": env.A: want a value, got nothing`}},
		{"unset variable", srv("  - name: fs", "    command: x", `    args: ["${NOPE}/x"]`),
			[]string{`8: MCP server "fs": args: ${NOPE} is not set or is empty: set the environment variable NOPE`}},
		{"empty variable", srv("  - name: fs", "    command: x", "    env:", "      A: ${EMPTY}"),
			[]string{`9: MCP server "fs": env.A: ${EMPTY} is not set or is empty`}},
		{"unset variable in dir", srv("  - name: fs", "    command: x", "    dir: ${HOME}/x"),
			[]string{`8: MCP server "fs": dir: ${HOME} is not set or is empty`}},
		{"unclosed variable", srv("  - name: fs", `    command: "${TOOLS/x"`),
			[]string{`7: MCP server "fs": command: a ${ without its closing }`}},
		{"lone dollar", srv("  - name: fs", "    command: x", `    args: ["$HOME"]`),
			[]string{`8: MCP server "fs": args: a lone $: write ${NAME} for a variable, or $$ for a dollar sign`}},
		{"bad variable name", srv("  - name: fs", "    command: x", `    args: ["${1X}"]`),
			[]string{`8: MCP server "fs": args: ${1X}: a variable's name is letters, digits and underscores`}},
		{"literal header", srv("  - name: h", "    url: https://mcp.example.com/mcp", "    headers:", "      Authorization: Bearer abc"),
			[]string{`9: MCP server "h": headers.Authorization: write ${NAME}: secrets come from the environment, never from the file`}},
		{"literal header with a dollar", srv("  - name: h", "    url: https://mcp.example.com/mcp", "    headers:", "      X-Price: $$5"),
			[]string{`9: MCP server "h": headers.X-Price: write ${NAME}: secrets come from the environment`}},
		{"header with an unset variable", srv("  - name: h", "    url: https://mcp.example.com/mcp", "    headers:", "      Authorization: Bearer ${NOPE}"),
			[]string{`9: MCP server "h": headers.Authorization: ${NOPE} is not set or is empty`}},
		{"bad header name", srv("  - name: h", "    url: https://mcp.example.com/mcp", "    headers:", "      Bad Header: ${ACME_MCP_TOKEN}"),
			[]string{`9: MCP server "h": headers: "Bad Header": a header's name is letters, digits and dashes`}},
		{"relative url", srv("  - name: h", "    url: /mcp"),
			[]string{`7: MCP server "h": url: want an absolute http or https URL such as https://mcp.example.com/mcp, got "/mcp"`}},
		{"ftp url", srv("  - name: h", "    url: ftp://mcp.example.com/"), []string{`7: MCP server "h": url: want an absolute http or https URL`}},
		{"url from a bad variable", srv("  - name: h", "    url: ${BAD_URL}"),
			[]string{`7: MCP server "h": url: want an absolute http or https URL such as https://mcp.example.com/mcp, got "${BAD_URL}"`}},
		{"empty allowlist", srv("  - name: fs", "    command: x", "    tools: []"),
			[]string{`8: MCP server "fs": tools: the list is empty; leave it out to offer all the server's tools`}},
		{"tool listed twice", srv("  - name: fs", "    command: x", "    tools: [a, a]"), []string{`8: MCP server "fs": tools: "a" is listed twice`}},
		{"allowlist shadowed by a built-in", agent("tools: [get_page]", "mcp_servers:", "  - name: fs", "    command: x", "    tools: [read, get_page]"),
			[]string{`9: MCP server "fs": tools: "get_page" is also a built-in tool of the agent, which would hide the server's`}},
		{"two servers list a tool", srv("  - {name: fs, command: x, tools: [read]}", "  - name: gs", "    command: y", "    tools:",
			"      - write", "      - read"),
			[]string{`11: MCP server "gs": tools: "read" is also listed by the server "fs", whose tool would hide this one's`}},
		{"preview both ways", srv("  - name: fs", "    command: x", "    previews:", "      - tool: write_file", "        dry_run: dryRun",
			"        diff_against: read_text_file"),
			[]string{`11: MCP server "fs": preview of write_file: give dry_run or diff_against, not both`}},
		{"preview no way", srv("  - name: fs", "    command: x", "    previews:", "      - tool: write_file"),
			[]string{`9: MCP server "fs": preview of write_file: give dry_run (an argument of the tool) or diff_against (a tool that reads)`}},
		{"preview path with dry_run", srv("  - name: fs", "    command: x", "    previews:", "      - tool: edit_file", "        dry_run: dryRun",
			"        path: file"),
			[]string{`11: MCP server "fs": preview of edit_file: path goes with diff_against only`}},
		{"preview without tool", srv("  - name: fs", "    command: x", "    previews:", "      - dry_run: dryRun"),
			[]string{`9: MCP server "fs": a preview: missing key tool`}},
		{"preview unknown key", srv("  - name: fs", "    command: x", "    previews:", "      - {tool: edit_file, dryrun: dryRun}"),
			[]string{`9: MCP server "fs": a preview: unknown key "dryrun" (the keys are tool, dry_run, diff_against, path, content)`,
				`9: MCP server "fs": preview of edit_file: give dry_run`}},
		{"preview twice", srv("  - name: fs", "    command: x", "    previews:", "      - {tool: edit_file, dry_run: dryRun}",
			"      - {tool: edit_file, dry_run: dry}"),
			[]string{`10: MCP server "fs": previews: edit_file is previewed twice`}},
		{"preview empty argument", srv("  - name: fs", "    command: x", "    previews:", `      - {tool: edit_file, dry_run: ""}`),
			[]string{`9: MCP server "fs": dry_run: is empty`}},
		{"preview of a tool not listed", srv("  - name: fs", "    command: x", "    tools: [read_text_file]", "    previews:",
			"      - {tool: write_file, diff_against: read_text_file}"),
			[]string{`10: MCP server "fs": previews: "write_file" is not among the server's tools (read_text_file)`}},
		{"preview against a tool not listed", srv("  - name: fs", "    command: x", "    tools: [write_file]", "    previews:",
			"      - {tool: write_file, diff_against: read_text_file}"),
			[]string{`10: MCP server "fs": previews: write_file diffs against "read_text_file", which is not among the server's tools (write_file)`}},
		{"preview of a built-in", agent("tools: [update_page]", "mcp_servers:", "  - name: fs", "    command: x", "    previews:",
			"      - {tool: update_page, dry_run: dryRun}"),
			[]string{`10: MCP server "fs": previews: "update_page" is a built-in tool of the agent, not the server's`}},
		{"timeout too short", srv("  - name: fs", "    command: x", "    connect_timeout: 500ms"),
			[]string{`8: MCP server "fs": connect_timeout: want a duration from 1s to 10m, such as 30s, got "500ms"`}},
		{"timeout too long", srv("  - name: fs", "    command: x", "    call_timeout: 1h"),
			[]string{`8: MCP server "fs": call_timeout: want a duration from 1s to 10m, such as 30s, got "1h"`}},
		{"timeout not a duration", srv("  - name: fs", "    command: x", "    call_timeout: soon"),
			[]string{`8: MCP server "fs": call_timeout: want a duration from 1s to 10m, such as 30s, got "soon"`}},
		{"rule for a tool no allowlist names", agent("mcp_servers:", "  - {name: fs, command: x, tools: [read_text_file]}", "rules:",
			"  - {name: r, tool: write_file, approval: never}"),
			[]string{`8: rule "r": unknown tool "write_file" (the tools are ask_operator, create_page, current_time, delete_page, get_page, list_pages, publish_page, search_pages, update_page, word_count; a tool of an MCP server counts when the server lists it under tools)`}},
		{"rule for a built-in not offered", agent("mcp_servers:", "  - {name: fs, command: x, tools: [read_text_file]}", "rules:",
			"  - {name: r, tool: delete_page, approval: never}"),
			[]string{`8: rule "r": the agent "a" does not offer the tool "delete_page": add it to its tools or to an MCP server's tools, or drop the rule`}},
		{"rule for a question with a server", agent("tools: [ask_operator]", "mcp_servers:", "  - {name: fs, command: x}", "rules:",
			"  - {name: r, tool: ask_operator, approval: never}"),
			[]string{`9: rule "r": ask_operator asks the operator a question, which always waits for an answer`}},
		{"many mistakes, in line order", srv("  - name: fs", "    url: http://", "    headers: {Authorization: x}", "    call_timeout: 0s",
			"  - name: fs", "    command: ${NOPE}"),
			[]string{`7: MCP server "fs": url: want an absolute http or https URL`, `8: MCP server "fs": headers.Authorization: write ${NAME}`,
				`9: MCP server "fs": call_timeout: want a duration`, `10: two MCP servers of the agent "a" are named "fs" (the first at line 6)`,
				`11: MCP server "fs": command: ${NOPE} is not set or is empty`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agents, err := Load("agents.yaml", []byte(tt.file), mcpEnv())
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Load = %v, %v; want an ErrorList", agents, err)
			}
			var got []string
			for _, e := range list {
				got = append(got, fmt.Sprintf("%d: %s", e.Line, e.Msg))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("mistakes:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("mistake %d = %q, want %q", i+1, got[i], w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

// A rule may name a tool of a server that lists it, or any tool when a
// server lists none; it is not known before the server runs.
func TestLoadServerRules(t *testing.T) {
	tests := []struct {
		name string
		file string
	}{
		{"listed", agent("mcp_servers:", "  - {name: fs, command: x, tools: [write_file]}", "rules:",
			"  - {name: r, tool: write_file, approval: never}")},
		{"listed by the second server", agent("mcp_servers:", "  - {name: fs, command: x, tools: [read]}",
			"  - {name: gs, command: y, tools: [write_file]}", "rules:", "  - {name: r, tool: write_file, approval: never}")},
		{"a server lists none", agent("mcp_servers:", "  - {name: fs, command: x, tools: [read]}", "  - {name: gs, command: y}", "rules:",
			"  - {name: r, tool: anything, approval: always}")},
		{"a built-in not offered, a server lists none", agent("mcp_servers:", "  - {name: fs, command: x}", "rules:",
			"  - {name: r, tool: delete_page, approval: always}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agents, err := Load("a.yaml", []byte(tt.file), mcpEnv())
			if err != nil {
				t.Fatal(err)
			}
			if agents[0].Policy == nil {
				t.Fatal("no policy")
			}
		})
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B_2": "two", "DOLLAR": "$x"}
	get := func(name string) string { return vars[name] }
	tests := []struct {
		in, want string
		names    []string
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "1", names: []string{"A"}},
		{in: "x${A}y${B_2}z", want: "x1ytwoz", names: []string{"A", "B_2"}},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$$${A}", want: "$$1", names: []string{"A"}},
		{in: "${DOLLAR}", want: "$x", names: []string{"DOLLAR"}}, // a value is not expanded again
		{in: "${C}", names: []string{"C"}, err: "${C} is not set or is empty"},
		{in: "${A", err: "a ${ without its closing }"},
		{in: "${}", err: "${}: a variable's name"},
		{in: "${a b}", err: "${a b}: a variable's name"},
		{in: "$A", err: "a lone $"},
		{in: "5$", err: "a lone $"},
	}
	for _, tt := range tests {
		got, names, err := expand(tt.in, get)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expand(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
		case err != nil || got != tt.want || !reflect.DeepEqual(names, tt.names):
			t.Errorf("expand(%q) = %q, %v, %v; want %q, %v", tt.in, got, names, err, tt.want, tt.names)
		}
	}
}
