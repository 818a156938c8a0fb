package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"sync"
)

// AuditGenesis is the previous hash of a run's first event: 64 zeros.
const AuditGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

// auditDomain is the first field of every hashed message, so that the hash
// of an event can never be mistaken for a hash made for another purpose,
// and a later recipe can change its name.
const auditDomain = "countersign-audit-v1"

// eventHash is the hash of an event in the audit chain, as docs/AUDIT.md
// describes it: lower-case hex of SHA-256 over seven fields, each written as
// its length (8 bytes, big-endian) and then its bytes: auditDomain, prev
// (the previous event's hash or AuditGenesis), the run id, seq and
// createdAt (unix milliseconds) in decimal ASCII, kind, and the payload
// exactly as stored. The length prefixes keep the fields from running into
// each other.
func eventHash(prev, runID string, seq int64, kind string, createdAt int64, payload []byte) string {
	h := sha256.New()
	writeField(h, []byte(auditDomain))
	writeField(h, []byte(prev))
	writeField(h, []byte(runID))
	writeField(h, strconv.AppendInt(nil, seq, 10))
	writeField(h, []byte(kind))
	writeField(h, strconv.AppendInt(nil, createdAt, 10))
	writeField(h, payload)
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes b to h behind its length.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// prevHash returns the hash the event seq of run id chains to: AuditGenesis
// for the first event, else the hash of event seq-1, from the chain heads
// this store committed (see chainHeads) or else read by primary key in the
// transaction that inserts event seq. A previous event that is missing or
// has no hash (written outside the store after the backfill) gives "",
// which VerifyRun reports at that event, not at this one.
func (db *DB) prevHash(ctx context.Context, tx writeTx, id string, seq int64) (string, error) {
	if seq <= 1 {
		return AuditGenesis, nil
	}
	if h, ok := db.heads.get(id, seq-1); ok {
		return h, nil
	}
	const q = `SELECT coalesce(hash, '') FROM agent_run_event WHERE run_id = ? AND seq = ?`
	var prev string
	if err := tx.GetContext(ctx, &prev, q, id, seq-1); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	return prev, nil
}

// maxChainHeads bounds the chain heads kept; past it the map starts over.
const maxChainHeads = 10_000

// chainHeads keeps, per run, the seq and hash of the last event this store
// committed, so that the next event's link is not read back from the
// table. An event's hash never changes once committed, so a head is right
// for as long as it is kept; a run another process appended to since
// simply misses (its last seq is further on) and is read. Heads are set
// only after their event's commit (afterCommit): a rolled-back event never
// leaves one behind.
type chainHeads struct {
	mu sync.Mutex
	m  map[string]chainHead
}

type chainHead struct {
	seq  int64
	hash string
}

func (c *chainHeads) get(id string, seq int64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[id]
	if !ok || h.seq != seq {
		return "", false
	}
	return h.hash, true
}

func (c *chainHeads) set(id string, seq int64, hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxChainHeads {
		c.m = make(map[string]chainHead)
	}
	if h, ok := c.m[id]; !ok || h.seq < seq {
		c.m[id] = chainHead{seq: seq, hash: hash}
	}
}
