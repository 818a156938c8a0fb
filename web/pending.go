package web

import (
	"context"

	"countersign/engine"
)

// What a person reads when a waiting run's turn cannot be shown.
const (
	turnNotLoaded = "The pending turn could not be loaded."
	turnDamaged   = "The stored state of this run is damaged, so it cannot be approved. An operator can cancel it."
)

// pendingState loads and decodes the state a waiting run suspended with.
// When it cannot, the error is logged and the sentence a person reads is
// returned instead.
func (s *server) pendingState(ctx context.Context, run engine.Run) (*engine.SuspendedState, string) {
	sus, err := s.db.SuspendedState(ctx, run.ID)
	if err != nil {
		s.log.Error("load suspended state", "run", run.ID, "err", err)
		return nil, turnNotLoaded
	}
	st, err := sus.Decode()
	if err != nil {
		s.log.Error("decode suspended state", "run", run.ID, "err", err)
		return nil, turnDamaged
	}
	return st, ""
}

// turnCall is a pending call of a waiting turn with what the card and the
// API say of it.
type turnCall struct {
	engine.ToolCall
	Kind engine.CallKind
	// Preview is the call's preview; HasPreview is false when the turn
	// holds none for it.
	Preview    engine.Preview
	HasPreview bool
	// Held marks a read held with calls that need a person: it runs with
	// the turn's decision, needing none of its own.
	Held bool
	// Hints are what the call's tool says of itself, as offered now.
	Hints engine.ToolHints
}

// callInfo returns how turnCalls tells the calls of agent's turns apart: by
// the kind and the hints of their tools as the agent offers them now.
func (s *server) callInfo(agent string) func(engine.ToolCall) (engine.CallKind, engine.ToolHints) {
	return func(tc engine.ToolCall) (engine.CallKind, engine.ToolHints) {
		t := s.rt.OfferedTool(agent, tc.Name)
		return engine.KindOf(t), engine.HintsOf(t)
	}
}

// turnCalls lists the pending calls of st in order; info tells reads,
// writes and questions apart and gives their tools' hints.
func turnCalls(st *engine.SuspendedState, info func(engine.ToolCall) (engine.CallKind, engine.ToolHints)) []turnCall {
	previews := make(map[string]engine.Preview, len(st.Previews))
	for _, p := range st.Previews {
		previews[p.CallID] = p
	}
	calls := make([]turnCall, len(st.Pending))
	reads := 0
	for i, call := range st.Pending {
		calls[i].ToolCall = call
		calls[i].Kind, calls[i].Hints = info(call)
		calls[i].Preview, calls[i].HasPreview = previews[call.ID]
		if calls[i].Kind == engine.CallRead {
			reads++
		}
	}
	for i := range calls {
		calls[i].Held = calls[i].Kind == engine.CallRead && reads < len(calls)
	}
	return calls
}
