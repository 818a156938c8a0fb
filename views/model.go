// Package views holds the templ components of the web interface and the plain
// view structs they take. It knows nothing of the engine, the store or the
// web layer: handlers fill these structs and render one component.
package views

// Layout is what every full page needs besides its own content.
type Layout struct {
	// Title is the page title; " · countersign" is appended.
	Title string
	// User is the signed-in user, nil on the login page.
	User *User
	// CSRF is the token every form posts as _csrf.
	CSRF string
	// Flash is the one-off message shown above the content, if any.
	Flash *Flash
	// InboxCount is the number of runs waiting for approval.
	InboxCount int
	// Active names the nav entry to mark: "playground", "runs", "inbox",
	// "users", "grants", "webhooks" or "tokens".
	Active string
	// CSS, JS, HTMX and Icon are the asset URLs. An empty URL leaves its
	// tag out: without htmx the pages still work as plain forms and links.
	CSS, JS, HTMX, Icon string
}

// User is the signed-in user as the nav shows it.
type User struct {
	Name string
	// Role is "admin", "operator" or "viewer", as shown.
	Role string
	// CanOperate (start, decide, cancel) and IsAdmin (manage users) are
	// what the role allows, decided by the web layer.
	CanOperate, IsAdmin bool
}

// Flash is a one-off message after a redirect or an htmx action.
type Flash struct {
	// Kind is "ok", "error" or "info".
	Kind string
	Text string
}

// LoginView is the sign-in form.
type LoginView struct {
	Name  string
	Error string
	// Next is where to go after signing in.
	Next string
}

// NewRunView is the playground: the form that starts a run.
type NewRunView struct {
	Agents []AgentOption
	Models []ModelOption
	// Agent, Model and Prompt are the values to preselect or refill.
	Agent, Model, Prompt string
	Error                string
}

// AgentOption is an agent the playground offers.
type AgentOption struct {
	Name, Title, Description string
	// Examples are prompts that start a run in one click.
	Examples []string
	// SecondApprover says this agent's writes need an approver other than
	// the person who started the run.
	SecondApprover bool
	// Servers are the agent's MCP servers and where each stands.
	Servers []ServerStatus
}

// ServerStatus is where one MCP server of an agent stands.
type ServerStatus struct {
	// Name and Target (its command or URL) say which server it is.
	Name, Target string
	// State is "connecting", "up", "down" or "closed"; Label says it for
	// people ("up · 14 tools").
	State, Label string
	// Detail says why a server is down and when it is tried again.
	Detail string
}

// ModelOption is a model the playground offers.
type ModelOption struct {
	Name, Description string
}

// RunView is the run page.
type RunView struct {
	Run   RunHeader
	Steps []Step
	// LastSeq is the seq of the last step in Steps; polling asks for later ones.
	LastSeq int64
	// Card is the pending approval, nil unless the run waits for one.
	Card *ApprovalCard
	// Polling is true while the run may still produce steps on its own
	// (queued or running); false when it waits or has ended.
	Polling bool
	// Turn is the digest of the turn the card shows while the run waits:
	// the page then polls slowly, asking whether that turn is still the
	// one waiting.
	Turn string
	// Decided replaces the card when the turn the visitor decided on was
	// decided by someone else first.
	Decided *DecidedNotice
	// CanDecide is true when the viewer may approve or deny (operator or admin).
	CanDecide bool
	// CanCancel is true when the viewer may cancel and the run has not ended.
	CanCancel bool
	// Grants are the standing grants given in the run and the agent-wide
	// ones that applied to it while it ran, newest first.
	Grants []GrantView
	// Audit says whether the run's audit record is intact; nil shows
	// nothing.
	Audit *AuditStatus
	// Servers are the MCP servers of the run's agent, where each stands
	// now; empty for an agent without any.
	Servers []ServerStatus
}

// RunHeader is the summary at the top of the run page.
type RunHeader struct {
	ID, Agent, Model, Status, InitiatedBy, Error            string
	Iterations, PromptTokens, CompletionTokens, TotalTokens int
	// Outcome is the run's status with what went wrong on the way; a zero
	// Outcome shows the bare status.
	Outcome Outcome
	// Termination is how the run ended, only where the outcome does not
	// already say it.
	Termination string
	// DecidedBy names who decided the run's turns, first decision first.
	DecidedBy []string
	// Started is when the run was created. Duration is how long a run
	// that ended took, empty until it ends; Running is how long a queued or
	// running run has been going.
	Started           Moment
	Duration, Running string
	// CreatedAt is the exact creation time.
	CreatedAt string
	// Waiting says the run waits for a decision; WaitingSince is when its
	// turn was suspended, WaitingFor how long ago that was.
	Waiting      bool
	WaitingSince Moment
	WaitingFor   string
	// CanDecide is true when the person looking may decide (operator or
	// admin): the waiting note asks them to review the calls; others are
	// told the run waits for an operator.
	CanDecide bool
}

// Step is one event of a run, flattened for display. Only the fields of its
// Kind are set; see StepItem.
type Step struct {
	Seq int64
	// Kind is one of prompt, model_turn, tool_started, tool_finished,
	// suspended, decision, finished, failed.
	Kind string
	At   string
	// Text is the prompt, the assistant's text or the final answer.
	Text      string
	ToolCalls []ToolCallView
	// Tool, CallID and ArgsPretty describe the call of a tool step; Args
	// are its arguments as a list when they are a JSON object.
	Tool       string
	CallID     string
	ArgsPretty string
	Args       []ArgView
	// Answered marks a model turn whose text is the final answer that the
	// finished step after it shows.
	Answered bool
	Result   string
	IsError  bool
	// Outcome is ok, tool_error, unknown_tool, bad_arguments, denied or not_permitted.
	Outcome string
	// Write marks a tool that required approval.
	Write    bool
	Duration string
	Usage    string
	Pending  []ToolCallView
	Previews []PreviewView
	// Decision is "approve" or "deny"; By and Reason say who and why.
	Decision, By, Reason string
	// Verdicts are the per-call verdicts of a decision.
	Verdicts []VerdictView
	// Original is what the model proposed for a call an operator edited;
	// EditedBy is who edited it.
	Original, EditedBy string
	// WaivedBy names the rule or grant that let a call run without a
	// person.
	WaivedBy           string
	Termination, Error string
	Totals             string
}

// ToolCallView is one tool call with its arguments as indented JSON, and
// in short (Short, one line) for a list of calls.
type ToolCallView struct {
	ID, Name, ArgsPretty string
	Short                string
}

// ArgView is one argument of a call. A string (Text) is shown as text, with
// its line breaks; any other value as compact JSON.
type ArgView struct {
	Key, Value string
	Text       bool
}

// PreviewView is what a pending call would do, as lines (a diff for an
// update). Warning marks a preview that could not be made: the lines say
// why, and the call will probably fail.
type PreviewView struct {
	CallID, Tool string
	Lines        []string
	Warning      bool
}

// DecidedNotice takes the place of the card of a turn that was decided
// while the page showed it: who decided, when and how, in one sentence.
type DecidedNotice struct {
	Text string
	// By is who decided; Verdict the verdict every call shared
	// ("approve", "deny", …, "" when they differ or nobody decided).
	By, Verdict string
}

// ApprovalCard is the decision form for a suspended turn.
type ApprovalCard struct {
	RunID string
	// Digest names the turn being decided; a decision on another turn is stale.
	Digest string
	Calls  []PendingCall
	CSRF   string
	// CanDecide shows the form; without it the card is read-only.
	CanDecide bool
	// Note explains a restriction, e.g. four-eyes.
	Note string
	// CanApprove enables approve and edit; false (four-eyes) leaves deny
	// and answer.
	CanApprove bool
	// Error is why the last decision was refused.
	Error string
	// Notice asks the operator to check something before confirming, such
	// as the preview of an edit.
	Notice string
	// Grants offers, on each write the operator approves, to allow the same
	// tool from now on without a person: for the rest of the run or for the
	// agent for GrantFor (such as "1 hour"). False for an agent that needs a
	// second approver and for a person who may not approve.
	Grants   bool
	GrantFor string
	// After is the seq of the last step the page shows with the card; a
	// refused decision sends the steps after it.
	After int64
	// Reason refills the reason of a refused decision on the same turn.
	Reason string
}

// PendingCall is one call awaiting a decision.
type PendingCall struct {
	ID, Tool, ArgsPretty string
	// Args are the arguments as a list when they are a JSON object.
	Args    []ArgView
	Preview []string
	// PreviewWarning marks a preview that could not be made: the call
	// will probably fail as proposed.
	PreviewWarning bool
	// Held marks a read held with the writes of its turn: it waits only
	// because it came in the same turn.
	Held bool
	// Kind is "read", "write", "question" or "unknown".
	Kind string
	// Destructive marks a write that may overwrite or delete (an MCP
	// tool's destructiveHint); Source says where its tool comes from
	// ("MCP server filesystem"), empty for a built-in tool.
	Destructive bool
	Source      string
	// Question and Options are what a question to the operator asks.
	Question string
	Options  []string
	// Verdict is the verdict the form selects: "approve", "deny", "edit"
	// or "answer".
	Verdict string
	// EditArgs fills the arguments box of an edit; Text the reason or the
	// answer.
	EditArgs, Text string
	// EditPreview is the preview of the edited arguments; Previewed names
	// the arguments it was computed for, so a confirmation runs exactly
	// what the operator saw.
	EditPreview        []string
	EditPreviewWarning bool
	Previewed          string
	// Grant is the standing grant chosen with an approval: "" (none), "run"
	// or "agent".
	Grant string
}

// StepsUpdate is the answer to a poll for the steps after a seq.
type StepsUpdate struct {
	RunID string
	// Steps are the steps after the polled seq, oldest first.
	Steps []Step
	// After is the seq the next poll starts from; the last step's seq wins
	// when it is larger.
	After  int64
	Header RunHeader
	Card   *ApprovalCard
	// Polling keeps polling on; false stops it (the run waits or has ended).
	Polling bool
	// Turn, when set, keeps a slow poll on that asks whether the run still
	// waits on that turn (see RunView.Turn).
	Turn string
	// Slot says what to do with the card's place: SlotKeep leaves it as it
	// is (the operator may be typing in it), SlotCard puts Card there (or
	// empties it when Card is nil), SlotDecided puts Decided there.
	Slot    Slot
	Decided *DecidedNotice
	// Answered are the seqs of model turns already on the page whose text
	// turned out to be the final answer: the text gives way to a note.
	Answered []int64
	// Flash, when set, replaces the flash area; ClearFlash empties it (the
	// run has moved on from what the flash said).
	Flash      *Flash
	ClearFlash bool
	// PollerOOB sends the poller out of band: the answer to a refused
	// decision, whose main content htmx does not swap.
	PollerOOB bool
	// InboxCount refreshes the nav badge.
	InboxCount int
}

// Slot is what an update does to the approval card's place.
type Slot int

// The things an update does to the card's place.
const (
	SlotCard Slot = iota
	SlotKeep
	SlotDecided
)

// InboxView and InboxItem are in inbox_model.go.

// HistoryView is the filtered, paginated list of runs.
type HistoryView struct {
	Rows     []HistoryRow
	Filter   HistoryFilter
	Statuses []string
	Agents   []string
	// Outcomes are the values of the outcome filter, in the form's order.
	Outcomes []string
	// Total is how many runs match the filter; with TotalMore, the count
	// stopped there and more runs match.
	Total     int
	TotalMore bool
	// NextURL is the next page, empty on the last.
	NextURL string
}

// HistoryRow is one run in the history.
type HistoryRow struct {
	ID, Agent, Model, Status, InitiatedBy, Prompt, Duration string
	Tokens                                                  int
	// Outcome is the status with what went wrong; a zero Outcome shows the
	// bare status.
	Outcome Outcome
	// Created is when the run was created, relative with the exact time.
	Created Moment
	// DecidedBy names who decided the run's turns, first decision first.
	DecidedBy []string
}

// HistoryFilter is the history's filter form.
type HistoryFilter struct {
	Status, Agent, Initiator, Q string
	// Outcome is one of the store's outcomes (HistoryView.Outcomes);
	// DecidedBy a person who decided a turn of the run.
	Outcome, DecidedBy string
}

// UsersView is the admin's user list.
type UsersView struct {
	Users []UserRow
	// Roles are the roles an admin may give, least first; NewRole is the
	// one the form to add a user preselects.
	Roles   []string
	NewRole string
	Error   string
}

// UserRow is one user.
type UserRow struct {
	ID                  int64
	Name, Role, Created string
	Disabled            bool
}

// GrantView is a standing grant: calls of Tool by Agent (in RunID when the
// scope is "run") run without a person until Ends, unless revoked.
type GrantView struct {
	ID                            int64
	Agent, RunID, Tool, Scope, By string
	Created, Ends                 string
	// State is "active", "expired" or "revoked".
	State string
	// Revoked and RevokedBy say when and by whom a revoked grant ended.
	Revoked, RevokedBy string
}

// GrantsView is the admin's list of active standing grants.
type GrantsView struct {
	Grants []GrantView
}

// ErrorView is a readable error for a person.
type ErrorView struct {
	Status         int
	Title, Message string
}

// VerdictView is one call's verdict in a decision step.
type VerdictView struct {
	CallID, Tool, Verdict string
	// Arguments and Original are the edited and proposed arguments of an
	// edit (ArgList and OriginalList as lists when they are JSON
	// objects); Text is a denial's reason or an answer.
	Arguments, Original, Text string
	ArgList, OriginalList     []ArgView
}
