package agentsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"countersign/engine"
	"countersign/policy"
)

// The keys of each level of the file, in the order the documentation gives
// them.
var (
	fileKeys  = []string{"agents"}
	agentKeys = []string{"name", "title", "description", "instructions", "default_model", "tools", "mcp_servers", "rules",
		"second_approver", "approval_deadline", "max_repeat_denials", "max_iterations", "examples"}
	ruleKeys = []string{"name", "tool", "approval", "when"}
)

// reName is an agent's name: it is stored with every run and written in
// links, so it stays plain.
var reName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// parser walks the YAML nodes of one file, keeping every mistake it finds.
type parser struct {
	file   string
	env    Env
	errs   ErrorList
	merges int // mappings merged so far
}

// errorf records a mistake at line.
func (p *parser) errorf(line int, format string, a ...any) {
	e := &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, a...)}
	for _, old := range p.errs {
		if *old == *e { // a node shared through an alias is checked once per user
			return
		}
	}
	p.errs = append(p.errs, e)
}

// reYAMLLine is how the YAML library places its syntax errors.
var reYAMLLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the YAML library's messages whose line it counts
// from 0 (they are the parser's; the scanner's count from 1). Their line is
// where the mapping or list that holds the mistake starts.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected key", "did not find expected node content",
	"found duplicate %TAG directive", "found duplicate %YAML directive", "found incompatible YAML document",
}

// yamlError records an error of the YAML library at its line.
func (p *parser) yamlError(err error, data []byte) {
	msg, line := strings.TrimPrefix(err.Error(), "yaml: "), 0
	if m := reYAMLLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if slices.Contains(parserProblems, msg) {
		line++
	}
	if m := reAnchor.FindStringSubmatch(msg); m != nil && line == 0 {
		line = lineOf(data, "*"+m[1])
	}
	p.errorf(line, "%s", msg)
}

// reAnchor is the YAML library's message for an alias of no anchor, which
// it gives without a line.
var reAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// lineOf returns the first line of data that holds s, or 0.
func lineOf(data []byte, s string) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(s)) {
			return i + 1
		}
	}
	return 0
}

// parseFile reads the one document of data: a mapping with the list of
// agents.
func (p *parser) parseFile(data []byte) []engine.Agent {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errorf(1, "the file is empty: list the agents under the key agents")
		} else {
			p.yamlError(err, data)
		}
		return nil
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		p.errorf(more.Line, "a second YAML document: the file holds one")
	case !errors.Is(err, io.EOF):
		p.yamlError(err, data)
	}
	if len(doc.Content) == 0 || isNull(deref(doc.Content[0])) {
		p.errorf(max(doc.Line, 1), "the file is empty: list the agents under the key agents")
		return nil
	}
	root := deref(doc.Content[0])
	top, ok := p.mapping(root, "the file", fileKeys)
	if !ok {
		return nil
	}
	list, ok := top["agents"]
	if !ok {
		p.errorf(root.Line, "missing key agents: the list of agents")
		return nil
	}
	items, ok := p.sequence(list, "agents")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.errorf(list.value.Line, "agents: the list is empty; declare at least one agent")
	}
	var agents []engine.Agent
	first := map[string]int{} // name → line
	for _, n := range items {
		a, line, ok := p.agent(n)
		if a.Name != "" {
			if at, dup := first[a.Name]; dup {
				p.errorf(line, "two agents are named %q (the first at line %d)", a.Name, at)
			} else {
				first[a.Name] = line
			}
		}
		if ok {
			agents = append(agents, a)
		}
	}
	return agents
}

// agent reads one agent, and returns it with the line of its name and
// whether it is free of mistakes.
func (p *parser) agent(n *yaml.Node) (engine.Agent, int, bool) {
	before := len(p.errs)
	var a engine.Agent
	f, ok := p.mapping(n, "an agent", agentKeys)
	if !ok {
		return a, n.Line, false
	}
	line := n.Line
	if e, ok := f["name"]; ok {
		line = e.value.Line
	}
	a.Name = p.required(f, n, "name")
	if a.Name != "" && !reName.MatchString(a.Name) {
		p.errorf(line, "name: want lower-case letters, digits and dashes, as in editor-4eyes, got %q", a.Name)
	}
	a.Title = p.required(f, n, "title")
	a.Description = p.text(f, "description")
	a.Instructions = p.required(f, n, "instructions")
	if e, ok := f["default_model"]; ok {
		if m := p.text(f, "default_model"); m != "" && !slices.Contains(p.env.Models, m) {
			p.errorf(e.value.Line, "default_model: %q is not offered on this server (it offers %s): add it to COUNTERSIGN_MODELS or leave it out",
				m, strings.Join(p.env.Models, ", "))
		} else {
			a.DefaultModel = m
		}
	}
	a.Tools = p.tools(f)
	servers := p.servers(f, a)
	a.SecondApprover = p.boolean(f, "second_approver")
	a.ApprovalDeadline = p.deadline(f)
	a.MaxRepeatDenials = p.number(f, "max_repeat_denials", MaxRepeatDenials)
	a.MaxIterations = p.number(f, "max_iterations", MaxIterations)
	a.Examples = p.examples(f)
	rules, nodes := p.rules(f, a, servers)
	pol := p.policy(a, rules, nodes)
	if len(p.errs) > before {
		return a, line, false
	}
	a.Policy = pol
	a.Toolsets = p.build(servers)
	return a, line, true
}

// ruleNodes are the nodes of one rule, to place the policy's errors.
type ruleNodes struct {
	rule   *yaml.Node
	fields map[string]entry
}

// rules reads the agent's rules and checks their tools against the ones a
// offers: its built-in tools, and those of its MCP servers. A server's tools
// are not known before it starts, so a tool no built-in and no server's
// tools list names is taken to be one of a server that lists none.
func (p *parser) rules(f map[string]entry, a engine.Agent, servers []server) ([]policy.Rule, []ruleNodes) {
	e, ok := f["rules"]
	if !ok {
		return nil, nil
	}
	items, ok := p.sequence(e, "rules")
	if !ok {
		return nil, nil
	}
	var rules []policy.Rule
	var nodes []ruleNodes
	for _, n := range items {
		rf, ok := p.mapping(n, "a rule", ruleKeys)
		if !ok {
			continue
		}
		r := policy.Rule{Name: p.text(rf, "name"), Tool: p.text(rf, "tool"), Approval: policy.Approval(p.text(rf, "approval")),
			When: p.text(rf, "when")}
		if te, ok := rf["tool"]; ok && r.Tool != "" {
			t, known := p.env.Tools[r.Tool]
			served := slices.ContainsFunc(servers, func(s server) bool { return s.offers(r.Tool) })
			switch {
			case builtin(a, r.Tool):
				if engine.KindOf(t) == engine.CallQuestion {
					p.errorf(te.value.Line, "rule %q: %s asks the operator a question, which always waits for an answer: no rule applies to it", r.Name, r.Tool)
				}
			case served:
			case !known:
				p.errorf(te.value.Line, "rule %q: unknown tool %q (the tools are %s; a tool of an MCP server counts when the server lists it under tools)",
					r.Name, r.Tool, p.toolNames())
			default:
				p.errorf(te.value.Line, "rule %q: the agent %q does not offer the tool %q: add it to its tools or to an MCP server's tools, or drop the rule",
					r.Name, a.Name, r.Tool)
			}
		}
		rules = append(rules, r)
		nodes = append(nodes, ruleNodes{rule: n, fields: rf})
	}
	return rules, nodes
}

// policy compiles the agent's rules into its policy, placing each mistake
// at its line. An agent with no rules and no grants to look up has none.
func (p *parser) policy(a engine.Agent, rules []policy.Rule, nodes []ruleNodes) engine.Policy {
	grants := !a.SecondApprover && !p.env.FourEyes
	if len(rules) == 0 && (!grants || p.env.Grants == nil) {
		return nil
	}
	pol, err := policy.New(policy.Config{Agent: a.Name, Rules: rules, AcceptsGrants: grants, Grants: p.env.Grants,
		Now: p.env.Now, Logger: p.env.Logger})
	var errs policy.RuleErrors
	switch {
	case err == nil:
		return pol
	case !errors.As(err, &errs):
		p.errorf(0, "%v", err)
		return nil
	}
	for _, e := range errs {
		rn := nodes[e.Index]
		line := rn.rule.Line
		if fe, ok := rn.fields[e.Field]; ok {
			line = fe.value.Line
			if e.Field == "when" && e.Line > 0 {
				line += e.Line - 1
				if fe.value.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
					line++ // a block starts on the line after its indicator
				}
			}
		}
		p.errorf(line, "%s", e.Error())
	}
	return nil
}

// tools reads the names of the agent's tools and returns the tools.
func (p *parser) tools(f map[string]entry) []engine.Tool {
	e, ok := f["tools"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, "tools")
	if !ok {
		return nil
	}
	var out []engine.Tool
	seen := map[string]bool{}
	for _, n := range items {
		name, ok := p.scalar(n, "tools")
		if !ok {
			continue
		}
		t, known := p.env.Tools[name]
		switch {
		case !known:
			p.errorf(n.Line, "tools: unknown tool %q (the tools are %s)", name, p.toolNames())
		case seen[name]:
			p.errorf(n.Line, "tools: %q is listed twice", name)
		default:
			out = append(out, t)
		}
		seen[name] = true
	}
	return out
}

// toolNames lists the tools an agent may offer, for messages.
func (p *parser) toolNames() string {
	return strings.Join(slices.Sorted(maps.Keys(p.env.Tools)), ", ")
}

// examples reads the example prompts: each one some text, once.
func (p *parser) examples(f map[string]entry) []string {
	e, ok := f["examples"]
	if !ok {
		return nil
	}
	items, ok := p.sequence(e, "examples")
	if !ok {
		return nil
	}
	var out []string
	for _, n := range items {
		s, ok := p.scalar(n, "examples")
		switch {
		case !ok:
		case strings.TrimSpace(s) == "":
			p.errorf(n.Line, "examples: an example is empty")
		case slices.Contains(out, s):
			p.errorf(n.Line, "examples: %q is given twice", s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// deadline reads approval_deadline: zero (none) or a duration in range.
func (p *parser) deadline(f map[string]entry) time.Duration {
	e, ok := f["approval_deadline"]
	if !ok {
		return 0
	}
	s, ok := p.scalar(e.value, "approval_deadline")
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	switch {
	case err != nil:
		p.errorf(e.value.Line, "approval_deadline: want a duration such as 2m or 1h30m, got %q", s)
	case d != 0 && (d < MinDeadline || d > MaxDeadline):
		p.errorf(e.value.Line, "approval_deadline: want 0 (no deadline) or from %s to %s, got %s", MinDeadline, fmtHours(MaxDeadline), s)
	default:
		return d
	}
	return 0
}

// fmtHours writes a duration of whole hours as 720h.
func fmtHours(d time.Duration) string { return fmt.Sprintf("%dh", int(d.Hours())) }

// number reads a whole number from 1 to most; absent is zero (the
// engine's default).
func (p *parser) number(f map[string]entry, key string, most int) int {
	e, ok := f[key]
	if !ok {
		return 0
	}
	s, ok := p.scalar(e.value, key)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || e.value.Tag != "!!int" || n < 1 || n > most {
		p.errorf(e.value.Line, "%s: want a whole number from 1 to %d, got %q", key, most, s)
		return 0
	}
	return n
}

// boolean reads true or false; absent is false.
func (p *parser) boolean(f map[string]entry, key string) bool {
	e, ok := f[key]
	if !ok {
		return false
	}
	s, ok := p.scalar(e.value, key)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil || e.value.Tag != "!!bool" {
		p.errorf(e.value.Line, "%s: want true or false, got %q", key, s)
		return false
	}
	return b
}

// required reads text that must be there and not blank; it reports a
// missing key at the line of n, the mapping.
func (p *parser) required(f map[string]entry, n *yaml.Node, key string) string {
	e, ok := f[key]
	if !ok {
		p.errorf(n.Line, "missing key %s", key)
		return ""
	}
	s := p.text(f, key)
	if strings.TrimSpace(s) == "" && !isNull(e.value) && e.value.Kind == yaml.ScalarNode {
		p.errorf(e.value.Line, "%s: is empty", key)
	}
	return s
}

// text reads the text under key, "" when absent.
func (p *parser) text(f map[string]entry, key string) string {
	e, ok := f[key]
	if !ok {
		return ""
	}
	s, _ := p.scalar(e.value, key)
	return s
}

// scalar reads a value that must be a single value, not null.
func (p *parser) scalar(n *yaml.Node, key string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || isNull(n) {
		p.errorf(n.Line, "%s: want a value, got %s", key, kindOf(n))
		return "", false
	}
	return n.Value, true
}

// entry is a key of a mapping and its value.
type entry struct {
	key, value *yaml.Node
}

// mapping reads the keys of n, which must be a mapping whose keys are all
// known (any key when known is nil). A merge key (<<) brings in the keys of the mappings it names, which
// the mapping's own keys override.
func (p *parser) mapping(n *yaml.Node, what string, known []string) (map[string]entry, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, "%s: want keys and values, got %s", what, kindOf(n))
		return nil, false
	}
	out := map[string]entry{}
	p.pairs(n, what, known, out, map[*yaml.Node]bool{})
	return out, true
}

// pairs adds the keys of the mapping n to out, those of its merges first.
func (p *parser) pairs(n *yaml.Node, what string, known []string, out map[string]entry, visiting map[*yaml.Node]bool) {
	if visiting[n] {
		return
	}
	visiting[n] = true
	defer delete(visiting, n)
	own := map[string]entry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k.Line, "%s: a key must be a word, got %s", what, kindOf(k))
			continue
		}
		if k.Tag == "!!merge" {
			p.merge(v, what, known, out, visiting)
			continue
		}
		if first, dup := own[k.Value]; dup {
			p.errorf(k.Line, "%s: the key %s is given twice (the first at line %d)", what, k.Value, first.key.Line)
			continue
		}
		if known != nil && !slices.Contains(known, k.Value) {
			p.errorf(k.Line, "%s: unknown key %q (the keys are %s)", what, k.Value, strings.Join(known, ", "))
			continue
		}
		own[k.Value] = entry{key: k, value: v}
	}
	maps.Copy(out, own)
}

// maxMerges bounds the mappings merged in one file, which aliases could
// otherwise make grow exponentially.
const maxMerges = 1000

// merge adds the keys of the mapping, or the list of mappings, that a merge
// key names.
func (p *parser) merge(v *yaml.Node, what string, known []string, out map[string]entry, visiting map[*yaml.Node]bool) {
	v = deref(v)
	var maps []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{v}
	case yaml.SequenceNode:
		// Earlier mappings win over later ones.
		for i := len(v.Content) - 1; i >= 0; i-- {
			maps = append(maps, deref(v.Content[i]))
		}
	}
	for _, m := range maps {
		if m.Kind != yaml.MappingNode {
			p.errorf(m.Line, "%s: << merges a mapping or a list of them, got %s", what, kindOf(m))
			continue
		}
		if p.merges++; p.merges > maxMerges {
			p.errorf(m.Line, "%s: more than %d merges in the file", what, maxMerges)
			return
		}
		p.pairs(m, what, known, out, visiting)
	}
	if len(maps) == 0 {
		p.errorf(v.Line, "%s: << merges a mapping or a list of them, got %s", what, kindOf(v))
	}
}

// sequence reads the list under e.
func (p *parser) sequence(e entry, key string) ([]*yaml.Node, bool) {
	n := deref(e.value)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n.Line, "%s: want a list, got %s", key, kindOf(n))
		return nil, false
	}
	return n.Content, true
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// kindOf names what n is, for messages.
func kindOf(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "keys and values"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an alias"
}
