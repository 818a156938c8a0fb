package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"countersign/engine"
)

// auditLine reads the run page's audit status as a viewer sees it.
func auditLine(t *testing.T, c *client, runID string) (intact, text string, page *response) {
	t.Helper()
	page = c.get("/runs/" + runID)
	mustStatus(t, page, http.StatusOK)
	s := page.doc.Find(testid("audit-status"))
	if s.Length() != 1 {
		t.Fatalf("run page has %d audit statuses, want 1", s.Length())
	}
	return s.AttrOr("data-intact", ""), strings.Join(strings.Fields(s.Text()), " "), page
}

// TestRunPageSaysWhetherTheAuditRecordIsIntact drives a demo run through a
// suspension and an approval over HTTP, then edits and deletes its events
// in the database file: the run page says so, naming the events.
func TestRunPageSaysWhetherTheAuditRecordIsIntact(t *testing.T) {
	t.Parallel()
	a := newTestApp(t)
	olga, vera := a.as(olgaName), a.as(veraName)
	w := a.waitingRun("editor", publishAbout, olgaName)

	intact, text, _ := auditLine(t, vera, w.ID)
	if intact != "true" || !strings.HasPrefix(text, "Audit record intact · 3 events, chain head ") {
		t.Errorf("waiting run: intact=%q, %q", intact, text)
	}

	mustRedirect(t, olga.post("/tool/resume", cardForm(t, olga, w.ID, "approve")), "/runs/"+w.ID)
	done := a.waitStatus(w.ID, engine.StatusCompleted)
	rep, err := a.db.VerifyRun(context.Background(), w.ID)
	if err != nil || !rep.Intact || rep.Events != done.LastSeq {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	intact, text, page := auditLine(t, vera, w.ID)
	want := fmt.Sprintf("Audit record intact · %d events, chain head %s…", done.LastSeq, rep.Head[:12])
	if intact != "true" || text != want {
		t.Errorf("completed run: intact=%q, %q; want %q", intact, text, want)
	}
	if head := page.doc.Find(testid("audit-head")).AttrOr("title", ""); head != rep.Head {
		t.Errorf("full head %q, want %q", head, rep.Head)
	}

	raw := a.rawDB()
	if _, err := raw.Exec(`UPDATE agent_run_event SET payload = replace(payload, ?, 'mallory') WHERE run_id = ? AND kind = 'decision'`,
		olgaName, w.ID); err != nil {
		t.Fatal(err)
	}
	intact, text, page = auditLine(t, vera, w.ID)
	if intact != "false" || !strings.HasPrefix(text, "Audit record altered: event 4 edited") {
		t.Errorf("after an edit: intact=%q, %q", intact, text)
	}
	problems := page.doc.Find(testid("audit-problems") + " li")
	if problems.Length() != 1 || !strings.HasPrefix(problems.Text(), "Event 4 (decision) was edited") {
		t.Errorf("problems listed: %q", problems.Text())
	}

	if _, err := raw.Exec(`DELETE FROM agent_run_event WHERE run_id = ? AND seq = ?`, w.ID, done.LastSeq); err != nil {
		t.Fatal(err)
	}
	intact, _, page = auditLine(t, vera, w.ID)
	summary := page.doc.Find(testid("audit-summary")).Text()
	if wantSum := fmt.Sprintf("event 4 edited, event %d missing", done.LastSeq); intact != "false" || summary != wantSum {
		t.Errorf("after an edit and a deletion: intact=%q, %q; want %q", intact, summary, wantSum)
	}
}
