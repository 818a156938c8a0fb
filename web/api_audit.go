package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// mimeNDJSON is the media type of JSON lines.
const mimeNDJSON = "application/x-ndjson"

// apiAudit says whether the audit record of a run is intact. A run whose
// record cannot be checked now gives nil, and the run is shown without it.
func (s *server) apiAudit(c echo.Context, runID string) *apiAuditNote {
	rep, err := s.db.VerifyRun(c.Request().Context(), runID)
	if err != nil {
		s.log.Error("verify audit record", "run", runID, "err", err)
		return nil
	}
	n := &apiAuditNote{Intact: rep.Intact, Head: rep.Head, Problems: []apiAuditProblem{}}
	for _, p := range rep.Problems {
		n.Problems = append(n.Problems, apiAuditProblem{Seq: p.Seq, Kind: p.Kind, Detail: p.Detail})
	}
	return n
}

// apiRunAudit gives the audit record of a run as JSON lines, one event a
// line with its hash chain, as `countersign audit export` writes it. An
// unknown run is a 404 problem; an error once the lines have started can
// only end the answer early, and is logged.
func (s *server) apiRunAudit(c echo.Context) error {
	run, err := s.db.Run(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentType, mimeNDJSON)
	c.Response().WriteHeader(http.StatusOK)
	if err := s.db.ExportAudit(c.Request().Context(), run.ID, c.Response()); err != nil {
		s.log.Error("export audit record", "run", run.ID, "err", err)
	}
	return nil
}
