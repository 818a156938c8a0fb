package agentsfile

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"countersign/engine"
	"countersign/engine/mcptools"
)

// The keys of an MCP server and of one of its previews, in the order the
// documentation gives them.
var (
	serverKeys = []string{"name", "command", "args", "env", "dir", "url", "headers", "tools", "previews",
		"connect_timeout", "call_timeout"}
	previewKeys = []string{"tool", "dry_run", "diff_against", "path", "content"}
)

// The keys that go with one transport only.
var (
	stdioKeys = []string{"args", "env", "dir"}
	httpKeys  = []string{"headers"}
)

// reHeader is the name of an HTTP header (a token of RFC 9110).
var reHeader = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// server is an MCP server of an agent as read from the file.
type server struct {
	cfg mcptools.ServerConfig
	// line is where the server is declared.
	line int
}

// offers reports whether the server may offer the tool name: it lists
// it under tools, or it lists none.
func (s server) offers(name string) bool {
	return len(s.cfg.Tools) == 0 || slices.Contains(s.cfg.Tools, name)
}

// servers reads the MCP servers of the agent a, whose built-in tools are
// already read. It returns every server it could read, mistakes or not,
// so that the rules are checked against them.
func (p *parser) servers(f map[string]entry, a engine.Agent) []server {
	e, ok := f["mcp_servers"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, "mcp_servers")
	if !ok {
		return nil
	}
	var out []server
	first := map[string]int{}     // name → line
	listed := map[string]string{} // tool → the server that lists it
	for i, n := range items {
		s, ok := p.server(n, i, a, listed)
		if !ok {
			continue
		}
		if s.cfg.Name != "" {
			if at, dup := first[s.cfg.Name]; dup {
				p.errorf(s.line, "two MCP servers of the agent %q are named %q (the first at line %d)", a.Name, s.cfg.Name, at)
			} else {
				first[s.cfg.Name] = s.line
			}
		}
		out = append(out, s)
	}
	return out
}

// server reads the i-th MCP server of a; listed holds the tools the
// servers before it list, by the server.
func (p *parser) server(n *yaml.Node, i int, a engine.Agent, listed map[string]string) (server, bool) {
	f, ok := p.mapping(n, "an MCP server", serverKeys)
	if !ok {
		return server{}, false
	}
	s := server{line: deref(n).Line}
	s.cfg.Agent = a.Name
	what := fmt.Sprintf("MCP server %d", i+1)
	if e, ok := f["name"]; !ok {
		p.errorf(s.line, "%s: missing key name", what)
	} else if name, ok := p.scalar(e.value, "an MCP server's name"); ok {
		s.line = e.value.Line
		if !reName.MatchString(name) {
			p.errorf(s.line, "%s: name: want lower-case letters, digits and dashes, as in filesystem, got %q", what, name)
		} else {
			s.cfg.Name = name
			what = fmt.Sprintf("MCP server %q", name)
		}
	}

	cmd, hasCmd := f["command"]
	u, hasURL := f["url"]
	switch {
	case hasCmd && hasURL:
		p.errorf(u.key.Line, "%s: give a command (stdio) or a url (Streamable HTTP), not both", what)
	case !hasCmd && !hasURL:
		p.errorf(s.line, "%s: give a command (stdio) or a url (Streamable HTTP)", what)
	}
	p.onlyWith(f, what, stdioKeys, hasCmd, "command (stdio)")
	p.onlyWith(f, what, httpKeys, hasURL, "url (Streamable HTTP)")
	if hasCmd {
		s.cfg.Command = p.expanded(cmd.value, what, "command")
		s.cfg.Args = p.args(f, what)
		s.cfg.Env = p.variables(f, what, "env", func(k string) bool { return reVar.MatchString(k) },
			"a variable's name is letters, digits and underscores", false)
		if e, ok := f["dir"]; ok {
			s.cfg.Dir = p.expanded(e.value, what, "dir")
		}
	}
	if hasURL && !hasCmd {
		s.cfg.URL = p.url(u.value, what)
		s.cfg.Headers = p.variables(f, what, "headers", reHeader.MatchString,
			"a header's name is letters, digits and dashes", true)
	}
	s.cfg.Tools = p.allowlist(f, what, a, listed)
	for _, t := range s.cfg.Tools {
		listed[t] = s.cfg.Name
	}
	s.cfg.Previews = p.previews(f, what, a, s.cfg.Tools)
	s.cfg.ConnectTimeout = p.timeout(f, what, "connect_timeout")
	s.cfg.CallTimeout = p.timeout(f, what, "call_timeout")
	return s, true
}

// onlyWith reports the keys of f that go with another, with, when that
// one is absent (has is false).
func (p *parser) onlyWith(f map[string]entry, what string, keys []string, has bool, with string) {
	if has {
		return
	}
	for _, k := range keys {
		if e, ok := f[k]; ok {
			p.errorf(e.key.Line, "%s: %s goes with %s only", what, k, with)
		}
	}
}

// expanded reads the text of n, which must not be blank, with its
// variables expanded.
func (p *parser) expanded(n *yaml.Node, what, key string) string {
	s, ok := p.scalar(n, what+": "+key)
	if !ok {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		p.errorf(deref(n).Line, "%s: %s: is empty", what, key)
		return ""
	}
	v, _, err := expand(s, p.lookup)
	if err != nil {
		p.errorf(deref(n).Line, "%s: %s: %v", what, key, err)
		return ""
	}
	return v
}

// args reads the arguments of a stdio server's command.
func (p *parser) args(f map[string]entry, what string) []string {
	e, ok := f["args"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, what+": args")
	if !ok {
		return nil
	}
	out := []string{}
	for _, n := range items {
		s, ok := p.scalar(n, what+": args")
		if !ok {
			continue
		}
		v, _, err := expand(s, p.lookup)
		if err != nil {
			p.errorf(deref(n).Line, "%s: args: %v", what, err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// variables reads a mapping of names to values (a command's environment,
// a request's headers), each name checked with valid and each value
// expanded. With secret, every value must refer to a variable.
func (p *parser) variables(f map[string]entry, what, key string, valid func(string) bool, rule string, secret bool) map[string]string {
	e, ok := f[key]
	if !ok {
		return nil
	}
	m, ok := p.mapping(e.value, what+": "+key, nil)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv := m[k]
		if !valid(k) {
			p.errorf(kv.key.Line, "%s: %s: %q: %s", what, key, k, rule)
			continue
		}
		s, ok := p.scalar(kv.value, what+": "+key+"."+k)
		if !ok {
			continue
		}
		v, names, err := expand(s, p.lookup)
		switch {
		case err != nil:
			p.errorf(deref(kv.value).Line, "%s: %s.%s: %v", what, key, k, err)
		case secret && len(names) == 0:
			p.errorf(deref(kv.value).Line, "%s: %s.%s: write ${NAME}: secrets come from the environment, never from the file",
				what, key, k)
		default:
			out[k] = v
		}
	}
	return out
}

// url reads the address of a Streamable HTTP server: an absolute http or
// https URL once expanded. Messages quote the file, never the expanded
// value, which may hold a secret.
func (p *parser) url(n *yaml.Node, what string) string {
	v := p.expanded(n, what, "url")
	if v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.errorf(deref(n).Line, "%s: url: want an absolute http or https URL such as https://mcp.example.com/mcp, got %q",
			what, deref(n).Value)
		return ""
	}
	return v
}

// allowlist reads the tools of a server that the agent offers; none
// offers all of them. A name of a built-in tool of the agent, or of a tool
// an earlier server lists, is refused: that tool would hide the server's.
func (p *parser) allowlist(f map[string]entry, what string, a engine.Agent, listed map[string]string) []string {
	e, ok := f["tools"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, what+": tools")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.errorf(deref(e.value).Line, "%s: tools: the list is empty; leave it out to offer all the server's tools", what)
	}
	var out []string
	for _, n := range items {
		name, ok := p.scalar(n, what+": tools")
		switch {
		case !ok:
		case strings.TrimSpace(name) == "":
			p.errorf(deref(n).Line, "%s: tools: a tool's name is empty", what)
		case slices.Contains(out, name):
			p.errorf(deref(n).Line, "%s: tools: %q is listed twice", what, name)
		case builtin(a, name):
			p.errorf(deref(n).Line, "%s: tools: %q is also a built-in tool of the agent, which would hide the server's: drop it from one of them",
				what, name)
		case listed[name] != "":
			p.errorf(deref(n).Line, "%s: tools: %q is also listed by the server %q, whose tool would hide this one's: drop it from one of them",
				what, name, listed[name])
		default:
			out = append(out, name)
		}
	}
	return out
}

// builtin reports whether the agent a offers the built-in tool name.
func builtin(a engine.Agent, name string) bool {
	return slices.ContainsFunc(a.Tools, func(t engine.Tool) bool { return t.Name() == name })
}

// previews reads how to preview calls of the server's tools, by tool.
func (p *parser) previews(f map[string]entry, what string, a engine.Agent, allow []string) map[string]mcptools.PreviewSpec {
	e, ok := f["previews"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, what+": previews")
	if !ok {
		return nil
	}
	out := map[string]mcptools.PreviewSpec{}
	for _, n := range items {
		pf, ok := p.mapping(n, what+": a preview", previewKeys)
		if !ok {
			continue
		}
		line := deref(n).Line
		te, ok := pf["tool"]
		if !ok {
			p.errorf(line, "%s: a preview: missing key tool", what)
			continue
		}
		tool, ok := p.scalar(te.value, what+": previews: tool")
		if !ok {
			continue
		}
		line = deref(te.value).Line
		spec := mcptools.PreviewSpec{DryRun: p.word(pf, what, "dry_run"), DiffAgainst: p.word(pf, what, "diff_against")}
		_, dry := pf["dry_run"]
		_, diff := pf["diff_against"]
		switch {
		case dry && diff:
			p.errorf(pf["diff_against"].key.Line, "%s: preview of %s: give dry_run or diff_against, not both", what, tool)
		case !dry && !diff:
			p.errorf(line, "%s: preview of %s: give dry_run (an argument of the tool) or diff_against (a tool that reads)", what, tool)
		case diff:
			spec.PathArg, spec.ContentArg = "path", "content"
			if s := p.word(pf, what, "path"); s != "" {
				spec.PathArg = s
			}
			if s := p.word(pf, what, "content"); s != "" {
				spec.ContentArg = s
			}
		default:
			p.onlyWith(pf, what+": preview of "+tool, []string{"path", "content"}, false, "diff_against")
		}
		switch _, dup := out[tool]; {
		case dup:
			p.errorf(line, "%s: previews: %s is previewed twice", what, tool)
		case builtin(a, tool):
			p.errorf(line, "%s: previews: %q is a built-in tool of the agent, not the server's", what, tool)
		case len(allow) > 0 && !slices.Contains(allow, tool):
			p.errorf(line, "%s: previews: %q is not among the server's tools (%s)", what, tool, strings.Join(allow, ", "))
		case len(allow) > 0 && spec.DiffAgainst != "" && !slices.Contains(allow, spec.DiffAgainst):
			p.errorf(line, "%s: previews: %s diffs against %q, which is not among the server's tools (%s)",
				what, tool, spec.DiffAgainst, strings.Join(allow, ", "))
		}
		out[tool] = spec
	}
	return out
}

// word reads a name under key that must not be blank; "" when absent.
func (p *parser) word(f map[string]entry, what, key string) string {
	e, ok := f[key]
	if !ok {
		return ""
	}
	s, ok := p.scalar(e.value, what+": "+key)
	if ok && strings.TrimSpace(s) == "" {
		p.errorf(deref(e.value).Line, "%s: %s: is empty", what, key)
	}
	return s
}

// The bounds of an MCP server's timeouts.
const (
	MinServerTimeout = time.Second
	MaxServerTimeout = 10 * time.Minute
)

// timeout reads a duration from MinServerTimeout to MaxServerTimeout;
// absent is zero (the default of package mcptools).
func (p *parser) timeout(f map[string]entry, what, key string) time.Duration {
	e, ok := f[key]
	if !ok {
		return 0
	}
	s, ok := p.scalar(e.value, what+": "+key)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < MinServerTimeout || d > MaxServerTimeout {
		p.errorf(deref(e.value).Line, "%s: %s: want a duration from 1s to 10m, such as 30s, got %q", what, key, s)
		return 0
	}
	return d
}

// build makes the toolsets of the servers of a.
func (p *parser) build(servers []server) []engine.Toolset {
	var out []engine.Toolset
	for _, s := range servers {
		out = append(out, mcptools.New(s.cfg, mcptools.Options{Logger: p.env.Logger, Now: p.env.Now}))
	}
	return out
}
