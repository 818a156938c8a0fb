package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"countersign/engine"
)

// Kinds of AuditProblem.
const (
	// AuditEdited: the event's kind, time or payload changed after it was
	// recorded; its stored hash no longer matches them.
	AuditEdited = "edited"
	// AuditMissing: events are gone, from the middle (a gap in the seqs) or
	// from the end (the run's last_seq is further on).
	AuditMissing = "missing"
	// AuditReordered: the event is intact but was recorded at another
	// position (two events swapped, or events renumbered).
	AuditReordered = "reordered"
	// AuditBrokenLink: the event does not chain to the event before it,
	// which was rewritten and re-hashed, or its own link was changed.
	AuditBrokenLink = "broken-link"
	// AuditUnhashed: the event has no hash: it was written outside the
	// store, or its hash was erased.
	AuditUnhashed = "unhashed"
	// AuditInserted: the event lies outside the run's sequence (after its
	// last event, or before the first).
	AuditInserted = "inserted"
)

// AuditProblem is one thing wrong with a run's audit record, at the event
// seq (for a run of missing events, the first of them).
type AuditProblem struct {
	Seq int64
	// Last is the last seq of a run of missing events; Seq otherwise.
	Last   int64
	Kind   string // one of the Audit* kinds
	Detail string // a sentence for people
}

// Short names the problem in a few words, as "event 5 edited".
func (p AuditProblem) Short() string {
	switch p.Kind {
	case AuditMissing:
		if p.Last > p.Seq {
			return fmt.Sprintf("events %d–%d missing", p.Seq, p.Last)
		}
		return fmt.Sprintf("event %d missing", p.Seq)
	case AuditReordered:
		return fmt.Sprintf("event %d moved", p.Seq)
	case AuditBrokenLink:
		return fmt.Sprintf("chain broken at event %d", p.Seq)
	}
	return fmt.Sprintf("event %d %s", p.Seq, p.Kind)
}

// AuditReport is the result of verifying one run's audit record.
type AuditReport struct {
	RunID string
	// Events is how many events the run has in the database.
	Events int64
	// Intact is true when the chain verifies from the first event to the
	// run's last one, with no problem.
	Intact bool
	// Head is the hash of the last stored event, the one to keep elsewhere
	// to detect a later truncation; empty when it has none.
	Head     string
	Problems []AuditProblem
}

// chainLink is an event of a run as VerifyRun reads it. ok says the stored
// hash matches the event at its stored seq; payload is kept only when it
// does not, to try other positions.
type chainLink struct {
	seq       int64
	kind      string
	createdAt int64
	prev      string
	hash      string
	hashed    bool
	ok        bool
	payload   []byte
}

// VerifyRun checks the audit record of run id: every event's hash against
// its content and position, every link against the event before it, and
// the last event against the run's last_seq. Unknown runs fail with
// engine.ErrRunNotFound. The run and its events are read in one statement,
// so a run that moves on meanwhile is seen as it was.
func (db *DB) VerifyRun(ctx context.Context, id string) (AuditReport, error) {
	lastSeq, links, err := db.chainOf(ctx, id)
	if err != nil {
		return AuditReport{}, fmt.Errorf("verify run %s: %w", id, err)
	}
	rep := AuditReport{RunID: id, Events: int64(len(links)), Problems: auditProblems(id, lastSeq, links)}
	rep.Intact = len(rep.Problems) == 0
	if n := len(links); n > 0 {
		rep.Head = links[n-1].hash
	}
	return rep, nil
}

// chainOf reads the run's last_seq and its events in seq order, checking
// each event's own hash as it goes.
func (db *DB) chainOf(ctx context.Context, id string) (int64, []chainLink, error) {
	const q = `SELECT r.last_seq, e.seq, e.kind, e.created_at, e.payload, e.prev_hash, e.hash
		FROM agent_run r LEFT JOIN agent_run_event e ON e.run_id = r.id
		WHERE r.id = ? ORDER BY e.seq`
	rows, err := db.db.QueryContext(ctx, q, id)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	var lastSeq int64
	var links []chainLink
	found := false
	for rows.Next() {
		found = true
		var (
			seq, createdAt sql.NullInt64
			kind           sql.NullString
			prev, hash     sql.NullString
			payload        []byte
		)
		if err := rows.Scan(&lastSeq, &seq, &kind, &createdAt, &payload, &prev, &hash); err != nil {
			return 0, nil, err
		}
		if !seq.Valid {
			continue // a run without events: the LEFT JOIN's one row
		}
		l := chainLink{seq: seq.Int64, kind: kind.String, createdAt: createdAt.Int64,
			prev: prev.String, hash: hash.String, hashed: hash.Valid}
		l.ok = l.hashed && eventHash(l.prev, id, l.seq, l.kind, l.createdAt, payload) == l.hash
		if !l.ok {
			l.payload = payload
		}
		links = append(links, l)
	}
	if err := rows.Err(); err != nil {
		return 0, nil, err
	}
	if !found {
		return 0, nil, engine.ErrRunNotFound
	}
	return lastSeq, links, nil
}

// auditProblems names what is wrong with the chain links of run id, whose
// last event should be lastSeq. Each event is checked on its own (its hash
// against its content at its seq) and then against the event before it
// (its previous hash against that event's hash); a gap, a move or an
// unhashed event explains the broken link that follows it, which is then
// not reported again.
func auditProblems(id string, lastSeq int64, links []chainLink) []AuditProblem {
	var ps []AuditProblem
	add := func(seq int64, kind, format string, args ...any) {
		ps = append(ps, AuditProblem{Seq: seq, Last: seq, Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	missing := func(from, to int64, last bool) {
		add(from, AuditMissing, "%s missing.", eventRange(from, to, last))
		ps[len(ps)-1].Last = to
	}
	moved := writtenAt(id, links)
	wantSeq, wantPrev, prevBad := int64(1), AuditGenesis, false
	for i, l := range links {
		if l.seq < 1 {
			add(l.seq, AuditInserted, "Event %d comes before the run's first event.", l.seq)
			continue
		}
		gap := l.seq > wantSeq
		if gap {
			missing(wantSeq, l.seq-1, false)
		}
		if l.seq > lastSeq {
			add(l.seq, AuditInserted, "Event %d comes after the run's last event (%d).", l.seq, lastSeq)
		}
		switch {
		case !l.hashed:
			add(l.seq, AuditUnhashed, "Event %d has no hash: it was written outside countersign, or its hash was erased.", l.seq)
		case !l.ok && moved[i] != 0:
			add(l.seq, AuditReordered, "Event %d was recorded as event %d: events were moved.", l.seq, moved[i])
		case !l.ok:
			add(l.seq, AuditEdited, "Event %d (%s) was edited: its kind, time, payload or link no longer matches its hash.", l.seq, l.kind)
		}
		// An event that fails on its own, or follows a gap or an event
		// that failed, has its link explained already.
		bad := !l.ok
		if !bad && !gap && !prevBad && l.prev != wantPrev {
			if l.seq == 1 {
				add(l.seq, AuditBrokenLink, "Event 1 does not start the chain: it was rewritten with a new hash.")
			} else {
				add(l.seq, AuditBrokenLink, "Event %d does not follow event %d: event %d was rewritten with a new hash, or event %d was.",
					l.seq, l.seq-1, l.seq-1, l.seq)
			}
		}
		wantSeq, wantPrev, prevBad = l.seq+1, l.hash, bad
	}
	if wantSeq <= lastSeq {
		missing(wantSeq, lastSeq, true)
	}
	return ps
}

// eventRange names the events from to to, ending the run when last.
func eventRange(from, to int64, last bool) string {
	switch {
	case from == to && last:
		return fmt.Sprintf("Event %d, the run's last, is", from)
	case from == to:
		return fmt.Sprintf("Event %d is", from)
	case last:
		return fmt.Sprintf("Events %d to %d, the run's last, are", from, to)
	}
	return fmt.Sprintf("Events %d to %d are", from, to)
}

// writtenAt returns, for each event whose hash does not match it at its
// own seq, the seq at which it does match, or 0. The candidates come from
// the links: the position the chain from the first event gives it, and the
// position after the event its previous hash names (where that event is
// now, and where the chain puts it); and one place either side, which a
// renumbering after a deletion or insertion gives. At most six hashes per
// event that fails.
func writtenAt(id string, links []chainLink) []int64 {
	at := make([]int64, len(links))
	byHash := make(map[string]int, len(links))
	byPrev := make(map[string]int, len(links))
	for i, l := range links {
		if !l.hashed {
			continue
		}
		if _, dup := byHash[l.hash]; !dup {
			byHash[l.hash] = i
		}
		if _, dup := byPrev[l.prev]; !dup && l.prev != "" {
			byPrev[l.prev] = i
		}
	}
	// The chain as it was written: from the genesis, follow the links.
	chainPos := make([]int64, len(links))
	for cur, pos := AuditGenesis, int64(1); ; pos++ {
		i, ok := byPrev[cur]
		if !ok || chainPos[i] != 0 {
			break
		}
		chainPos[i] = pos
		cur = links[i].hash
	}
	for i, l := range links {
		if l.ok || !l.hashed {
			continue
		}
		cands := []int64{chainPos[i], l.seq - 1, l.seq + 1}
		if p, ok := byHash[l.prev]; ok {
			cands = append(cands, links[p].seq+1)
			if chainPos[p] != 0 {
				cands = append(cands, chainPos[p]+1)
			}
		} else if l.prev == AuditGenesis {
			cands = append(cands, 1)
		}
		tried := map[int64]bool{l.seq: true}
		for _, s := range cands {
			if s < 1 || tried[s] {
				continue
			}
			tried[s] = true
			if eventHash(l.prev, id, s, l.kind, l.createdAt, l.payload) == l.hash {
				at[i] = s
				break
			}
		}
	}
	return at
}

// VerifyAll verifies every run, in id order, a page of runs at a time, and
// calls fn with each report; an error from fn stops the walk and is
// returned. Runs purged during the walk are skipped.
func (db *DB) VerifyAll(ctx context.Context, fn func(AuditReport) error) error {
	const page = 200
	const q = `SELECT id FROM agent_run WHERE id > ? ORDER BY id LIMIT ?`
	for after := ""; ; {
		var ids []string
		if err := db.db.SelectContext(ctx, &ids, q, after, page); err != nil {
			return fmt.Errorf("verify runs: %w", err)
		}
		for _, id := range ids {
			rep, err := db.VerifyRun(ctx, id)
			if errors.Is(err, engine.ErrRunNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if err := fn(rep); err != nil {
				return err
			}
		}
		if len(ids) < page {
			return nil
		}
		after = ids[len(ids)-1]
	}
}
