package web

import (
	"context"

	"countersign/views"
)

// auditStatus verifies the audit record of run id for the run page. A
// record that cannot be read is logged and said so on the page, which is
// still worth showing.
func (s *server) auditStatus(ctx context.Context, id string) *views.AuditStatus {
	rep, err := s.db.VerifyRun(ctx, id)
	if err != nil {
		s.log.Error("verify audit record", "run", id, "err", err)
		return &views.AuditStatus{Error: "it could not be read."}
	}
	a := &views.AuditStatus{Intact: rep.Intact, Events: rep.Events, Head: rep.Head}
	for _, p := range rep.Problems {
		a.Problems = append(a.Problems, p.Short())
		a.Details = append(a.Details, p.Detail)
	}
	return a
}
