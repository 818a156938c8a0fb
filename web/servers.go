package web

import (
	"fmt"
	"strings"

	"countersign/engine/mcptools"
	"countersign/views"
)

// servers returns where the MCP servers of agent stand, as the playground
// and the run page show them; none when the app has no servers.
func (s *server) servers(agent string) []views.ServerStatus {
	if s.cfg.Servers == nil {
		return nil
	}
	var out []views.ServerStatus
	for _, st := range s.cfg.Servers(agent) {
		out = append(out, serverView(st))
	}
	return out
}

// serverView says where a server stands for people.
func serverView(st mcptools.Status) views.ServerStatus {
	v := views.ServerStatus{Name: st.Name, Target: st.Target, State: string(st.State)}
	switch st.State {
	case mcptools.StateUp:
		v.Label = "up · " + plural(len(st.Tools), "tool", "tools")
	case mcptools.StateConnecting:
		v.Label = "connecting"
	case mcptools.StateClosed:
		v.Label = "stopped"
	default:
		v.Label = "down"
		var parts []string
		if st.Err != "" {
			parts = append(parts, oneLine(st.Err))
		}
		if !st.Since.IsZero() {
			parts = append(parts, "since "+stamp(st.Since))
		}
		if !st.NextRetry.IsZero() {
			parts = append(parts, fmt.Sprintf("attempt %d failed; next try at %s", st.Attempts, stamp(st.NextRetry)))
		}
		v.Detail = strings.Join(parts, "; ")
	}
	return v
}
