// Package mcptools connects MCP servers through the official Go SDK and
// offers their tools to agents as engine.Tools. A server is declared per
// agent in the agents file, over stdio (a command, which gets a small
// environment: PATH, HOME, USER, LANG, LC_ALL, TMPDIR and TZ plus its own
// variables, never our keys) or Streamable HTTP (a URL and headers).
//
// Each tool the server lists becomes an engine.Tool with the tool's name,
// description (its title when it has none) and input schema:
//
//   - annotations with readOnlyHint: true make a read tool, called without
//     approval;
//   - any other tool (readOnlyHint false, or no annotations at all) may
//     write: it requires approval, its side effects are external (the
//     tool_started fence is synced to disk), and it is destructive unless
//     destructiveHint is false (the MCP default is true);
//   - every tool's Source hint is "MCP server <name>";
//   - a write tool with a PreviewSpec is previewed through the same server.
//
// A result becomes the text the model sees (text contents, else the JSON
// of the structured content); isError makes the call fail with its text. A
// server that answers a call with a JSON-RPC error fails the call; a server
// that goes away during a write leaves the write in doubt
// (engine.ErrWriteInDoubt), and the run ends without repeating it.
//
// While a server is up, its tools are offered (only those of the config's
// allowlist, when it has one) and relisted when the server says they
// changed. A server that does not start or drops is down: its tools are
// withdrawn at once and it is retried with a backoff that doubles from
// MinBackoff to MaxBackoff.
package mcptools

import "time"

// ServerConfig is one MCP server of an agent, as the agents file declares
// it, with every ${NAME} already expanded.
type ServerConfig struct {
	// Agent is the agent the server serves and Name names the server
	// among the agent's; both are shown in its status, and a tool's source
	// is "MCP server <Name>".
	Agent, Name string

	// Command, Args, Env and Dir start a server over stdio. The command
	// gets a small environment (PATH, HOME, LANG and the like, never the
	// provider keys) plus Env; Dir is its working directory (empty: ours).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL and Headers reach a server over Streamable HTTP.
	URL     string
	Headers map[string]string

	// Tools, when not empty, are the only tools of the server offered.
	Tools []string
	// Previews say how to preview calls of some of the server's tools,
	// by tool name.
	Previews map[string]PreviewSpec

	// ConnectTimeout bounds a connection attempt: starting or reaching
	// the server, its handshake and the listing of its tools (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// CallTimeout bounds one tool call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the waits between attempts to
	// (re)connect, which double from the first to the second (defaults
	// DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
}

// Defaults of ServerConfig.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
	DefaultMinBackoff     = time.Second
	DefaultMaxBackoff     = time.Minute
)

// PreviewSpec says how to preview a call of a tool that writes, through the
// same server, before anyone decides it. Exactly one way is set.
type PreviewSpec struct {
	// DryRun names a boolean argument of the tool itself that makes it
	// only say what it would do (edit_file's dryRun): the call is made with
	// that argument set to true, and the text of its result is the preview.
	DryRun string
	// DiffAgainst names a read-only tool of the server that returns the
	// current content of what the call would replace (read_text_file for
	// write_file): it is called with the call's PathArg, and the preview is
	// the diff from what it returns to the call's ContentArg. An error
	// result (the file does not exist yet) diffs from nothing.
	DiffAgainst string
	// PathArg and ContentArg are the names of those arguments (defaults
	// "path" and "content").
	PathArg, ContentArg string
}
