package tools

import (
	"time"

	"countersign/engine"
)

// Catalogue returns every built-in tool over ws by name: the read and write
// tools and ask_operator. An agents file picks an agent's tools from it.
// now is the clock of current_time; nil means time.Now.
func Catalogue(ws Workspace, now func() time.Time) map[string]engine.Tool {
	all := append(All(ws, now), AskOperator())
	out := make(map[string]engine.Tool, len(all))
	for _, t := range all {
		out[t.Name()] = t
	}
	return out
}
