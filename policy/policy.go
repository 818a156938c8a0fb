// Package policy decides, call by call, whether a person must approve a
// tool call of an agent: by the agent's rules, whose conditions are CEL
// expressions over the call's arguments and its run, then by the tool's own
// marker and the standing grants operators gave. It implements
// engine.Policy, so the engine stays free of any rule language.
//
// A rule names a tool, says whether its calls need a person (approval
// always or never) and may hold a condition (when) under which alone it
// applies. The rules of the call's tool are tried in the order given; the
// first that applies decides. When none applies, a call needs a person when
// its tool's author marked it RequiresApproval, unless an active grant
// allows it. A rule that says always is never overridden by a grant.
//
// A condition that cannot be evaluated for a call (a missing argument, a
// wrong type) asks a person: the safe answer. Check does not return that
// error, since the call can still be decided; it is logged with the rule's
// name.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"

	"countersign/engine"
)

// Approval says whether the calls a rule applies to need a person.
type Approval string

// The approvals of a rule.
const (
	// Always asks a person, even for a read tool and despite any grant.
	Always Approval = "always"
	// Never lets the call run without a person, even for a tool marked
	// RequiresApproval. The call's tool_started event names the rule.
	Never Approval = "never"
)

// Rule is one rule of an agent.
type Rule struct {
	// Name identifies the rule in the audit record: unique per agent.
	Name string
	// Tool is the tool whose calls the rule is about.
	Tool string
	// Approval is what the rule decides when it applies.
	Approval Approval
	// When, if not empty, is a CEL condition: the rule applies only to the
	// calls for which it holds. It sees args (the call's arguments, a map
	// from name to value), tool, agent, initiator and run (strings), and
	// must be a bool.
	When string
}

// costLimit bounds the work of one evaluation, so that a condition over
// large arguments cannot hold up a run.
const costLimit = 100_000

// GrantStore finds the standing grant, if any, that allows calls of tool by
// agent in run runID at now. The store implements it.
type GrantStore interface {
	ActiveGrant(ctx context.Context, agent, runID, tool string, now time.Time) (engine.Grant, bool, error)
}

// Config is what New needs.
type Config struct {
	// Agent is the agent whose calls the policy decides: the value of the
	// condition variable agent, and the agent its grants are looked up for.
	Agent string
	// Rules are the agent's rules, in the order they are tried.
	Rules []Rule
	// AcceptsGrants says whether grants may spare a person (not for an
	// agent that needs a second approver); Grants is where they are looked
	// up, nil for none.
	AcceptsGrants bool
	Grants        GrantStore
	// Now is the clock grants are checked against; nil is time.Now.
	Now func() time.Time
	// Logger gets the conditions that fail to evaluate; nil is
	// slog.Default().
	Logger *slog.Logger
}

// Policy is an agent's compiled rules. It is safe for concurrent use.
type Policy struct {
	cfg   Config
	rules map[string][]rule // by tool, in order
}

var _ engine.Policy = (*Policy)(nil)

// rule is a Rule with its condition compiled.
type rule struct {
	Rule
	cond cel.Program // nil without a condition
}

// New checks and compiles the rules. Its error is a RuleErrors listing every
// rule that is wrong.
func New(cfg Config) (*Policy, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Policy{cfg: cfg, rules: map[string][]rule{}}
	var env *cel.Env
	var errs RuleErrors
	bad := func(i int, field, format string, a ...any) {
		errs = append(errs, &RuleError{Index: i, Rule: cfg.Rules[i].Name, Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	seen := map[string]bool{}
	for i, r := range cfg.Rules {
		switch {
		case r.Name == "":
			bad(i, "name", "a rule needs a name")
		case seen[r.Name]:
			bad(i, "name", "two rules are named %q", r.Name)
		}
		seen[r.Name] = true
		if r.Tool == "" {
			bad(i, "tool", "a rule needs a tool")
		}
		switch r.Approval {
		case Always, Never:
		case "":
			bad(i, "approval", "a rule needs an approval: always or never")
		default:
			bad(i, "approval", "want always or never, got %q", r.Approval)
		}
		compiled := rule{Rule: r}
		if strings.TrimSpace(r.When) != "" {
			if env == nil {
				var err error
				if env, err = newEnv(); err != nil {
					return nil, fmt.Errorf("policy: condition environment: %w", err)
				}
			}
			prg, cerrs := compile(env, r.When)
			for _, e := range cerrs {
				e.Index, e.Rule, e.Field = i, r.Name, "when"
				errs = append(errs, e)
			}
			compiled.cond = prg
		}
		p.rules[r.Tool] = append(p.rules[r.Tool], compiled)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// newEnv declares the variables a condition may use, with CEL's string
// extensions (lowerAscii, split, …).
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("initiator", cel.StringType),
		cel.Variable("run", cel.StringType),
		ext.Strings(),
	)
}

// compile parses and type-checks a condition, which must be a bool.
func compile(env *cel.Env, expr string) (cel.Program, []*RuleError) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		var out []*RuleError
		for _, e := range iss.Errors() {
			msg := strings.ReplaceAll(e.Message, " (in container '')", "")
			out = append(out, &RuleError{Line: e.Location.Line(), Column: e.Location.Column() + 1, Msg: msg})
		}
		return nil, out
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		msg := fmt.Sprintf("the condition must be true or false, but it is a %s", t)
		if t.IsExactType(cel.DynType) {
			msg += `: compare it, as in args.draft == true`
		}
		return nil, []*RuleError{{Msg: msg}}
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, []*RuleError{{Msg: err.Error()}}
	}
	return prg, nil
}

// Check decides one call: the first of its tool's rules that applies, else
// the tool's marker and, for a call that needs a person, an active grant.
// A condition that fails to evaluate asks a person and is no error; an
// error of the grant store is returned with a result that asks a person.
func (p *Policy) Check(ctx context.Context, c engine.PolicyCall) (engine.PolicyResult, error) {
	var args map[string]any
	var argsErr error
	decoded := false
	for _, r := range p.rules[c.Call.Name] {
		if r.cond != nil {
			if !decoded {
				args, argsErr = decodeArgs(c.Call.Arguments)
				decoded = true
			}
			holds, err := r.holds(ctx, p.cfg.Agent, c, args, argsErr)
			if err != nil {
				p.cfg.Logger.Warn("policy condition failed: asking a person", "agent", p.cfg.Agent, "run", c.RunID,
					"tool", c.Call.Name, "rule", r.Name, "err", err)
				return engine.PolicyResult{Person: true, Rule: r.Name}, nil
			}
			if !holds {
				continue
			}
		}
		return engine.PolicyResult{Person: r.Approval == Always, Rule: r.Name}, nil
	}
	if !c.Marked || !p.cfg.AcceptsGrants || p.cfg.Grants == nil {
		return engine.PolicyResult{Person: c.Marked}, nil
	}
	now := p.cfg.Now()
	g, ok, err := p.cfg.Grants.ActiveGrant(ctx, p.cfg.Agent, c.RunID, c.Call.Name, now)
	if err != nil {
		return engine.PolicyResult{Person: true}, fmt.Errorf("policy: grant for %s: %w", c.Call.Name, err)
	}
	if !ok || !g.Active(now) {
		return engine.PolicyResult{Person: true}, nil
	}
	return engine.PolicyResult{Grant: strconv.FormatInt(g.ID, 10)}, nil
}

// holds evaluates the rule's condition for a call.
func (r rule) holds(ctx context.Context, agent string, c engine.PolicyCall, args map[string]any, argsErr error) (bool, error) {
	if argsErr != nil {
		return false, argsErr
	}
	out, _, err := r.cond.ContextEval(ctx, map[string]any{
		"args": args, "tool": c.Call.Name, "agent": agent, "initiator": c.Initiator, "run": c.RunID,
	})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the condition gave %v, not true or false", out.Value())
	}
	return b, nil
}

// errArgs says the arguments are not a JSON object, so no condition on them
// can be evaluated.
var errArgs = errors.New("the arguments are not a JSON object")

// decodeArgs reads a call's arguments; empty ones are an empty object.
func decodeArgs(raw string) (map[string]any, error) {
	if strings.TrimSpace(raw) == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
		return nil, errArgs
	}
	return args, nil
}

// RuleError is what is wrong with one rule.
type RuleError struct {
	// Index is the rule's position in Config.Rules; Rule its name.
	Index int
	Rule  string
	// Field is the part of the rule at fault: name, tool, approval or when.
	Field string
	// Line and Column locate a mistake inside the condition, from 1; zero
	// when the mistake is the whole condition or another field.
	Line, Column int
	Msg          string
}

func (e *RuleError) Error() string {
	var b strings.Builder
	if e.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", e.Rule)
	} else {
		fmt.Fprintf(&b, "rule %d: ", e.Index+1)
	}
	b.WriteString(e.Field + ": " + e.Msg)
	if e.Column > 0 {
		fmt.Fprintf(&b, " (at %d:%d of the condition)", e.Line, e.Column)
	}
	return b.String()
}

// RuleErrors lists every mistake New found.
type RuleErrors []*RuleError

func (l RuleErrors) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}
