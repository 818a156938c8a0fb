// Package agentsfile reads the agents countersign offers from a YAML file:
// for each agent its texts, default model, tools, MCP servers, approval
// rules, second approver, approval deadline, loop breaker and example
// prompts. The rules become the agent's policy (package policy), their
// conditions compiled and type-checked here, at start. The MCP servers
// become the agent's toolsets (package mcptools), not yet started: Servers
// finds them for the app, which starts and stops them.
//
// Load checks the whole file and reports every mistake, each as
// "file:line: what is wrong", so that a server never starts on a file it
// half understood. Default is the file of the built-in presets;
// docs/agents.example.yaml documents every key.
package agentsfile

import (
	_ "embed"
	"log/slog"
	"slices"
	"time"

	"countersign/engine"
	"countersign/engine/mcptools"
	"countersign/policy"
)

//go:embed default.yaml
var defaultFile []byte

// DefaultName is what errors in the built-in file are reported against.
const DefaultName = "agentsfile/default.yaml"

// Default returns the built-in agents file: editor, editor-4eyes,
// researcher, editor-quick and files (over the MCP filesystem server, in
// ${DATA_DIR}/sandbox).
func Default() []byte { return slices.Clone(defaultFile) }

// The bounds of the numbers an agent may set.
const (
	MinDeadline      = 10 * time.Second
	MaxDeadline      = 30 * 24 * time.Hour
	MaxIterations    = 100
	MaxRepeatDenials = 100
)

// Env is what the agents of a file are built with.
type Env struct {
	// Tools are the tools an agent may offer, by name.
	Tools map[string]engine.Tool
	// Models are the names of the models offered; an agent's
	// default_model must be one of them.
	Models []string
	// Grants is where the agents' policies look up standing grants; nil
	// for none.
	Grants policy.GrantStore
	// FourEyes says every agent needs a second approver whatever its file
	// says (COUNTERSIGN_FOUR_EYES), so that none takes standing grants.
	FourEyes bool
	// Now is the clock of the policies; nil is time.Now.
	Now func() time.Time
	// Logger gets the conditions that fail to evaluate and the news of the
	// MCP servers; nil is slog.Default().
	Logger *slog.Logger
	// Vars are the variables the app provides to the ${NAME} of an MCP
	// server's settings, such as DATA_DIR (the folder of the database).
	// They win over the environment's.
	Vars map[string]string
	// Getenv reads the other variables, such as the secrets of a server's
	// headers; nil reads none.
	Getenv func(string) string
}

// Load reads the agents of a file called name (for the messages) from data.
// Its error is an ErrorList of every mistake found.
func Load(name string, data []byte, env Env) ([]engine.Agent, error) {
	p := &parser{file: name, env: env}
	agents := p.parseFile(data)
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return agents, nil
}

// Servers returns the MCP servers of agents, in the order of the agents
// and of their servers in the file. The app starts them and closes them.
func Servers(agents []engine.Agent) []*mcptools.Server {
	var out []*mcptools.Server
	for _, a := range agents {
		for _, ts := range a.Toolsets {
			if s, ok := ts.(*mcptools.Server); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
