package engine

import (
	"context"
	"time"
)

// Policy says, for each call of a model turn, whether a person must decide
// it, and if not, why. The engine declares it and stays free of any rule
// language; a separate package implements it (rules on arguments, standing
// grants). An agent without a policy asks a person for every call of a tool
// that requires approval, as before.
type Policy interface {
	Check(ctx context.Context, c PolicyCall) (PolicyResult, error)
}

// PolicyCall is one call a policy is asked about, with the run it belongs
// to.
type PolicyCall struct {
	RunID, Agent, Initiator string
	Call                    ToolCall
	// Marked says the tool's author marked it RequiresApproval: it runs
	// without a person only when a rule or a grant says so for this call.
	Marked bool
}

// PolicyResult is a policy's answer for one call. Rule or Grant names what
// decided, for the audit record: a call that runs without a person because
// of it records that name on its tool_started event.
type PolicyResult struct {
	Person bool
	Rule   string
	Grant  string
}

// GrantScope is how far a standing grant reaches.
type GrantScope string

// The scopes of a grant.
const (
	// GrantRun allows the tool for the rest of one run.
	GrantRun GrantScope = "run"
	// GrantAgent allows the tool for every run of the agent, for a period.
	GrantAgent GrantScope = "agent"
)

// Periods of grants.
const (
	// DefaultGrantPeriod is how long an agent-wide grant lasts unless the
	// operator says otherwise.
	DefaultGrantPeriod = time.Hour
	// MaxAgentGrant bounds an agent-wide grant.
	MaxAgentGrant = 24 * time.Hour
	// MaxRunGrant is when a run-wide grant ends at the latest; it ends in
	// effect with its run.
	MaxRunGrant = 30 * 24 * time.Hour
)

// GrantRequest asks, with an approval, to allow the same tool from now on
// without a person: for the rest of this run or for the agent for a period.
type GrantRequest struct {
	Tool  string        `json:"tool"`
	Scope GrantScope    `json:"scope"`
	For   time.Duration `json:"for,omitempty"`
}

// Grant is a standing permission: calls of Tool by Agent (in RunID when the
// scope is a run) run without a person until ExpiresAt, unless revoked.
type Grant struct {
	ID        int64      `json:"id"`
	Agent     string     `json:"agent"`
	RunID     string     `json:"run_id,omitempty"`
	Tool      string     `json:"tool"`
	Scope     GrantScope `json:"scope"`
	By        string     `json:"by"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt time.Time  `json:"revoked_at,omitzero"`
	RevokedBy string     `json:"revoked_by,omitempty"`
}

// Active reports whether the grant allows calls at now.
func (g Grant) Active(now time.Time) bool {
	return g.RevokedAt.IsZero() && now.Before(g.ExpiresAt)
}
