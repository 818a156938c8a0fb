// Package engine is the agent runtime of countersign: tools, models, the
// tool loop with its suspension for human approval and its resumption, the
// versioned codec of a suspended run, the event stream that is the audit
// record, and the durable run coordinator.
//
// The engine knows nothing of HTTP or SQL. Persistence is reached through the
// RunStore interface declared here and implemented by package store.
package engine
