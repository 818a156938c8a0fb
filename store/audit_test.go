package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
)

// auditedRun records a run with a model turn, a suspension, a decision, a
// write, and its end: eight events.
func auditedRun(t *testing.T, db *DB, at time.Time) engine.Run {
	t.Helper()
	r := recordRun(t, db, at, engine.TermCompleted,
		appended(modelTurn), decided("olga", engine.VerdictApprove), appended(writeStarted), appended(writeOK), appended(modelTurn))
	if r.LastSeq != 8 {
		t.Fatalf("audited run has %d events, want 8", r.LastSeq)
	}
	return r
}

// mustVerify verifies run id.
func mustVerify(t *testing.T, db *DB, id string) AuditReport {
	t.Helper()
	rep, err := db.VerifyRun(context.Background(), id)
	if err != nil {
		t.Fatalf("verify %s: %v", id, err)
	}
	return rep
}

// tamper runs statements on the database as someone with the file would.
func tamper(t *testing.T, db *DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.w.Exec(q); err != nil {
			t.Fatalf("tamper: %s: %v", q, err)
		}
	}
}

// problemKinds is "seq:kind" for each problem, in order.
func problemKinds(ps []AuditProblem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d:%s", p.Seq, p.Kind)
	}
	return out
}

func TestAuditIntactRun(t *testing.T) {
	db := newTestDB(t)
	r := auditedRun(t, db, t0)
	rep := mustVerify(t, db, r.ID)
	if !rep.Intact || len(rep.Problems) != 0 || rep.Events != 8 || rep.RunID != r.ID {
		t.Fatalf("report = %+v, want intact with 8 events", rep)
	}
	var last string
	if err := db.db.Get(&last, `SELECT hash FROM agent_run_event WHERE run_id = ? AND seq = 8`, r.ID); err != nil {
		t.Fatal(err)
	}
	if rep.Head != last || len(rep.Head) != 64 {
		t.Errorf("head = %q, want the last event's hash %q", rep.Head, last)
	}
	// A run that is still waiting verifies too, and keeps verifying as it
	// moves on.
	w := waitingRun(t, db, "turn", []byte("{}"))
	if rep := mustVerify(t, db, w.ID); !rep.Intact || rep.Events != 2 {
		t.Errorf("waiting run: %+v", rep)
	}
	if _, err := db.ClaimRun(context.Background(), w.ID, decision("olga", engine.VerdictApprove, t0.Add(time.Minute), "turn")); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, db, w.ID); !rep.Intact || rep.Events != 3 {
		t.Errorf("decided run: %+v", rep)
	}
}

func TestAuditNamesWhatWasDone(t *testing.T) {
	cases := []struct {
		name  string
		stmts []string // %[1]s is the run id
		want  []string
		short string // the first problem in a few words, when set
	}{
		{"payload edited", []string{
			`UPDATE agent_run_event SET payload = replace(payload, 'faq', 'home') WHERE run_id = '%[1]s' AND seq = 5`},
			[]string{"5:edited"}, "event 5 edited"},
		{"kind changed", []string{
			`UPDATE agent_run_event SET kind = 'model_turn' WHERE run_id = '%[1]s' AND seq = 4`},
			[]string{"4:edited"}, ""},
		{"time changed", []string{
			`UPDATE agent_run_event SET created_at = created_at - 3600000 WHERE run_id = '%[1]s' AND seq = 6`},
			[]string{"6:edited"}, ""},
		{"middle event deleted", []string{
			`DELETE FROM agent_run_event WHERE run_id = '%[1]s' AND seq = 4`},
			[]string{"4:missing"}, ""},
		{"two middle events deleted", []string{
			`DELETE FROM agent_run_event WHERE run_id = '%[1]s' AND seq IN (3, 4)`},
			[]string{"3:missing"}, "events 3–4 missing"},
		{"last event deleted", []string{
			`DELETE FROM agent_run_event WHERE run_id = '%[1]s' AND seq = 8`},
			[]string{"8:missing"}, "event 8 missing"},
		{"every event deleted", []string{
			`DELETE FROM agent_run_event WHERE run_id = '%[1]s'`},
			[]string{"1:missing"}, ""},
		{"two events swapped", []string{
			`UPDATE agent_run_event SET seq = -3 WHERE run_id = '%[1]s' AND seq = 3`,
			`UPDATE agent_run_event SET seq = 3 WHERE run_id = '%[1]s' AND seq = 4`,
			`UPDATE agent_run_event SET seq = 4 WHERE run_id = '%[1]s' AND seq = -3`},
			[]string{"3:reordered", "4:reordered"}, "event 3 moved"},
		{"event deleted and the rest renumbered", []string{
			`DELETE FROM agent_run_event WHERE run_id = '%[1]s' AND seq = 6`,
			`UPDATE agent_run_event SET seq = seq - 1 WHERE run_id = '%[1]s' AND seq = 7`,
			`UPDATE agent_run_event SET seq = seq - 1 WHERE run_id = '%[1]s' AND seq = 8`,
			`UPDATE agent_run SET last_seq = 7 WHERE id = '%[1]s'`},
			[]string{"6:reordered", "7:reordered"}, ""},
		{"hash erased", []string{
			`UPDATE agent_run_event SET hash = NULL WHERE run_id = '%[1]s' AND seq = 2`},
			[]string{"2:unhashed"}, ""},
		{"event inserted after the last", []string{
			`INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at, prev_hash, hash)
				SELECT run_id, 9, kind, payload, created_at, hash, hash FROM agent_run_event WHERE run_id = '%[1]s' AND seq = 8`},
			[]string{"9:inserted", "9:edited"}, ""},
		{"first link changed", []string{
			`UPDATE agent_run_event SET prev_hash = (SELECT hash FROM agent_run_event WHERE run_id = '%[1]s' AND seq = 1)
				WHERE run_id = '%[1]s' AND seq = 1`},
			[]string{"1:edited"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := newTestDB(t)
			r := auditedRun(t, db, t0)
			other := auditedRun(t, db, t0.Add(time.Hour))
			for _, q := range tc.stmts {
				tamper(t, db, fmt.Sprintf(q, r.ID))
			}
			rep := mustVerify(t, db, r.ID)
			if rep.Intact {
				t.Fatalf("tampered run verifies intact: %+v", rep)
			}
			if got := problemKinds(rep.Problems); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems = %v, want %v\n%+v", got, tc.want, rep.Problems)
			}
			if tc.short != "" && len(rep.Problems) > 0 && rep.Problems[0].Short() != tc.short {
				t.Errorf("short = %q, want %q", rep.Problems[0].Short(), tc.short)
			}
			for _, p := range rep.Problems {
				if !strings.Contains(p.Detail, fmt.Sprint(p.Seq)) {
					t.Errorf("detail %q does not name event %d", p.Detail, p.Seq)
				}
			}
			if rep := mustVerify(t, db, other.ID); !rep.Intact {
				t.Errorf("the other run: %+v", rep)
			}
		})
	}
}

// TestAuditRehashedEditBreaksTheNextLink: someone who knows the recipe
// edits an event and computes its new hash; the next event still names the
// old one.
func TestAuditRehashedEditBreaksTheNextLink(t *testing.T) {
	db := newTestDB(t)
	r := auditedRun(t, db, t0)
	var row struct {
		Kind      string `db:"kind"`
		CreatedAt int64  `db:"created_at"`
		Payload   string `db:"payload"`
		PrevHash  string `db:"prev_hash"`
	}
	if err := db.db.Get(&row, `SELECT kind, created_at, payload, prev_hash FROM agent_run_event WHERE run_id = ? AND seq = 4`, r.ID); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(row.Payload, `"by":"olga"`, `"by":"oscar"`, 1)
	if forged == row.Payload {
		t.Fatalf("payload %s names no decider", row.Payload)
	}
	h := eventHash(row.PrevHash, r.ID, 4, row.Kind, row.CreatedAt, []byte(forged))
	if _, err := db.w.Exec(`UPDATE agent_run_event SET payload = ?, hash = ? WHERE run_id = ? AND seq = 4`, forged, h, r.ID); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, db, r.ID)
	if got := problemKinds(rep.Problems); !reflect.DeepEqual(got, []string{"5:broken-link"}) {
		t.Errorf("problems = %v, want 5:broken-link", got)
	} else if s := rep.Problems[0].Short(); s != "chain broken at event 5" {
		t.Errorf("short = %q", s)
	}
}

// TestAuditTruncationNeedsTheHead: deleting the last event and lowering
// last_seq to match is not seen in the database alone (docs/AUDIT.md says
// so); the head a verification or an export kept elsewhere changes.
func TestAuditTruncationNeedsTheHead(t *testing.T) {
	db := newTestDB(t)
	r := auditedRun(t, db, t0)
	before := mustVerify(t, db, r.ID)
	tamper(t, db, fmt.Sprintf(`DELETE FROM agent_run_event WHERE run_id = '%s' AND seq = 8`, r.ID),
		fmt.Sprintf(`UPDATE agent_run SET last_seq = 7 WHERE id = '%s'`, r.ID))
	after := mustVerify(t, db, r.ID)
	if !after.Intact {
		t.Fatalf("a consistent truncation: %+v", after)
	}
	if after.Head == before.Head || after.Events != 7 {
		t.Errorf("head %s (%d events) after truncation, %s before", after.Head, after.Events, before.Head)
	}
}

func TestAuditUnknownRun(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	if _, err := db.VerifyRun(ctx, "nope"); !errors.Is(err, engine.ErrRunNotFound) {
		t.Errorf("verify: err = %v, want ErrRunNotFound", err)
	}
	var buf bytes.Buffer
	if err := db.ExportAudit(ctx, "nope", &buf); !errors.Is(err, engine.ErrRunNotFound) || buf.Len() != 0 {
		t.Errorf("export: err = %v, wrote %q", err, buf.String())
	}
}

func TestVerifyAll(t *testing.T) {
	db := newTestDB(t)
	ids := map[string]bool{}
	for i := range 3 {
		ids[auditedRun(t, db, t0.Add(time.Duration(i)*time.Minute)).ID] = true
	}
	bad := auditedRun(t, db, t0.Add(time.Hour)).ID
	tamper(t, db, fmt.Sprintf(`DELETE FROM agent_run_event WHERE run_id = '%s' AND seq = 2`, bad))
	seen := map[string]bool{}
	err := db.VerifyAll(context.Background(), func(rep AuditReport) error {
		seen[rep.RunID] = true
		if rep.Intact == (rep.RunID == bad) {
			t.Errorf("run %s: intact = %v", rep.RunID, rep.Intact)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 || !seen[bad] {
		t.Errorf("verified %v, want the four runs", seen)
	}
	stop := errors.New("stop")
	n := 0
	if err := db.VerifyAll(context.Background(), func(AuditReport) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("stopped walk: %d reports, %v", n, err)
	}
}

// exportedEvent is a line of ExportAudit as an outsider reads it.
type exportedEvent struct {
	RunID     string          `json:"run_id"`
	Seq       int64           `json:"seq"`
	Kind      string          `json:"kind"`
	CreatedAt int64           `json:"created_at"`
	Payload   json.RawMessage `json:"payload"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// outsiderHash is the recipe of docs/AUDIT.md, written again from the
// document and sharing no code with the store.
func outsiderHash(e exportedEvent) string {
	var msg []byte
	for _, f := range []string{"countersign-audit-v1", e.PrevHash, e.RunID, fmt.Sprint(e.Seq), e.Kind,
		fmt.Sprint(e.CreatedAt), string(e.Payload)} {
		n := uint64(len(f))
		msg = append(msg, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		msg = append(msg, f...)
	}
	sum := sha256.Sum256(msg)
	return hex.EncodeToString(sum[:])
}

// outsiderVerify checks an export as docs/AUDIT.md tells an outsider to,
// and returns the head, or the first line that fails.
func outsiderVerify(t *testing.T, export []byte) (head string, bad int64) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, 1<<24)
	prev, want := strings.Repeat("0", 64), int64(1)
	for sc.Scan() {
		var e exportedEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v", want, err)
		}
		if e.Seq != want || e.PrevHash != prev || outsiderHash(e) != e.Hash {
			return "", e.Seq
		}
		prev, want = e.Hash, want+1
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return prev, 0
}

func TestAuditExportReverifiesElsewhere(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	r := auditedRun(t, db, t0)
	// Arguments with characters json.Marshal escapes and a multi-byte one.
	odd := recordRun(t, db, t0, engine.TermCompleted, appended(engine.Event{Kind: engine.EventToolStarted,
		Call: &engine.ToolCall{ID: "c", Name: "update_page", Arguments: `{"body":"<b>a & b</b> \u2028 café\n"}`}}))
	for _, id := range []string{r.ID, odd.ID} {
		var buf bytes.Buffer
		if err := db.ExportAudit(ctx, id, &buf); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		rep := mustVerify(t, db, id)
		if int64(len(lines)) != rep.Events {
			t.Fatalf("export has %d lines, the run %d events", len(lines), rep.Events)
		}
		head, bad := outsiderVerify(t, buf.Bytes())
		if bad != 0 || head != rep.Head {
			t.Errorf("run %s: outsider's head %q (bad line %d), store's %q", id, head, bad, rep.Head)
		}
		// The payload is the stored object, not a string.
		var e map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
			t.Fatal(err)
		}
		if p, ok := e["payload"].(map[string]any); !ok || p["kind"] != "prompt" {
			t.Errorf("payload of line 1 = %#v", e["payload"])
		}
		if e["prev_hash"] != strings.Repeat("0", 64) {
			t.Errorf("prev_hash of line 1 = %v", e["prev_hash"])
		}
	}

	// An export of an edited run fails the outsider's check at that event.
	tamper(t, db, fmt.Sprintf(`UPDATE agent_run_event SET payload = replace(payload, 'olga', 'oscar') WHERE run_id = '%s' AND seq = 4`, r.ID))
	var buf bytes.Buffer
	if err := db.ExportAudit(ctx, r.ID, &buf); err != nil {
		t.Fatal(err)
	}
	if _, bad := outsiderVerify(t, buf.Bytes()); bad != 4 {
		t.Errorf("outsider found line %d bad, want 4", bad)
	}
}

// TestAuditExportPages: a run longer than a page of the export comes out
// whole and in order.
func TestAuditExportPages(t *testing.T) {
	db := newTestDB(t)
	steps := make([]step, exportPage+20)
	for i := range steps {
		steps[i] = appended(modelTurn)
	}
	r := recordRun(t, db, t0, engine.TermCompleted, steps...)
	var buf bytes.Buffer
	if err := db.ExportAudit(context.Background(), r.ID, &buf); err != nil {
		t.Fatal(err)
	}
	head, bad := outsiderVerify(t, buf.Bytes())
	if bad != 0 || head != mustVerify(t, db, r.ID).Head || int64(bytes.Count(buf.Bytes(), []byte("\n"))) != r.LastSeq {
		t.Errorf("export of %d events: bad line %d, %d lines", r.LastSeq, bad, bytes.Count(buf.Bytes(), []byte("\n")))
	}
}

// TestAuditBackfill: the events recorded before migration 5 are chained at
// the next Open, once; the chain then goes on with new events, and events
// written outside the store later are reported, not chained.
func TestAuditBackfill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	raw := openAtVersion(t, path, 4)
	var ids []string
	for i := range 3 {
		id := fmt.Sprintf("01OLDRUN%018d", i)
		ids = append(ids, id)
		evs := []engine.Event{{Kind: engine.EventPrompt, Text: "old"}, modelTurn, {Kind: engine.EventSuspended, Digest: "d"},
			{Kind: engine.EventDecision, By: "olga", Decision: engine.VerdictApprove, Digest: "d"}, writeStarted}
		status := "running"
		if _, err := raw.Exec(`INSERT INTO agent_run (id, agent, model, prompt, status, initiated_by, claimed_by, lease_expires_at,
			last_seq, created_at, updated_at) VALUES (?, 'editor', 'demo', 'old', ?, 'ann', 'w', ?, ?, ?, ?)`,
			id, status, millis(t0.Add(time.Hour)), len(evs), millis(t0), millis(t0)); err != nil {
			t.Fatal(err)
		}
		for j, ev := range evs {
			ev.At = t0.Add(time.Duration(j) * time.Second)
			payload, _ := json.Marshal(ev)
			if _, err := raw.Exec(`INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)`,
				id, j+1, ev.Kind, payload, millis(ev.At)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(ctx, path, WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		if rep := mustVerify(t, db, id); !rep.Intact || rep.Events != 5 {
			t.Errorf("backfilled run %s: %+v", id, rep)
		}
	}
	if _, err := db.Setting(ctx, auditBackfillKey); !errors.Is(err, ErrNotFound) {
		t.Errorf("backfill marker: %v, want gone", err)
	}
	// The chain goes on from the backfilled events.
	if _, _, err := db.AppendEvent(ctx, ids[0], "w", writeOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, db, ids[0]); !rep.Intact || rep.Events != 6 {
		t.Errorf("run after a new event: %+v", rep)
	}

	// An event written outside the store after the backfill stays unhashed
	// across a reopen, and the chain of the store's next event goes on past it.
	if _, err := db.w.Exec(`INSERT INTO agent_run_event (run_id, seq, kind, payload, created_at) VALUES (?, 6, 'tool_finished', '{}', 0)`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`UPDATE agent_run SET last_seq = 6 WHERE id = ?`, ids[1]); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path, WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := db.AppendEvent(ctx, ids[1], "w", writeOK, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, db, ids[1])
	if got := problemKinds(rep.Problems); !reflect.DeepEqual(got, []string{"6:unhashed"}) {
		t.Errorf("run with a foreign event: %v", got)
	}
}

// TestAuditBackfillResumes: a backfill cut short (the marker still there,
// some runs chained) finishes at the next Open without changing what it
// had already chained.
func TestAuditBackfillResumes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "resume.db")
	db, err := Open(ctx, path, WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	a, b := auditedRun(t, db, t0), auditedRun(t, db, t0.Add(time.Minute))
	headA := mustVerify(t, db, a.ID).Head
	tamper(t, db, fmt.Sprintf(`UPDATE agent_run_event SET prev_hash = NULL, hash = NULL WHERE run_id = '%s' AND seq >= 3`, b.ID),
		`INSERT INTO setting (key, value) VALUES ('audit_backfill', 'pending')`)
	if rep := mustVerify(t, db, b.ID); rep.Intact {
		t.Fatalf("half-chained run verifies: %+v", rep)
	}
	headB := mustVerify(t, db, b.ID).Head
	if headB != "" {
		t.Fatalf("head of a run whose last event has no hash: %q", headB)
	}
	db.Close()

	db, err = Open(ctx, path, WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ra, rb := mustVerify(t, db, a.ID), mustVerify(t, db, b.ID)
	if !ra.Intact || ra.Head != headA || !rb.Intact || rb.Events != 8 {
		t.Errorf("after the resumed backfill: %+v, %+v", ra, rb)
	}
}

// TestAuditPurgeKeepsChainsWhole: the purge deletes whole runs with all
// their events, so every kept run still verifies.
func TestAuditPurgeKeepsChainsWhole(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	var old, kept []string
	for i := range 4 {
		old = append(old, auditedRun(t, db, t0.Add(time.Duration(i)*time.Minute)).ID)
	}
	for i := range 3 {
		kept = append(kept, auditedRun(t, db, t0.Add(72*time.Hour+time.Duration(i)*time.Minute)).ID)
	}
	kept = append(kept, waitingRun(t, db, "d", []byte("{}")).ID)
	n, err := db.PurgeFinishedBefore(ctx, t0.Add(24*time.Hour), 3)
	if err != nil || n != 4 {
		t.Fatalf("purged %d, %v; want 4", n, err)
	}
	for _, id := range old {
		var events int
		if err := db.db.Get(&events, `SELECT count(*) FROM agent_run_event WHERE run_id = ?`, id); err != nil || events != 0 {
			t.Errorf("purged run %s keeps %d events, %v", id, events, err)
		}
	}
	for _, id := range kept {
		if rep := mustVerify(t, db, id); !rep.Intact || rep.Events == 0 {
			t.Errorf("kept run %s: %+v", id, rep)
		}
	}
	seen := 0
	if err := db.VerifyAll(ctx, func(rep AuditReport) error {
		seen++
		if !rep.Intact {
			t.Errorf("run %s after the purge: %+v", rep.RunID, rep)
		}
		return nil
	}); err != nil || seen != len(kept) {
		t.Errorf("verified %d runs after the purge, %v; want %d", seen, err, len(kept))
	}
}
