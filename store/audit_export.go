package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// exportPage is how many events ExportAudit reads per query.
const exportPage = 500

// ExportAudit writes the audit record of run id to w as JSON lines, one per
// event in seq order, with the fields and in the order docs/AUDIT.md gives:
//
//	{"run_id":…,"seq":…,"kind":…,"created_at":…,"payload":{…},"prev_hash":…,"hash":…}
//
// created_at is unix milliseconds. payload is the stored JSON object,
// byte for byte as it was hashed; a stored payload that is not one line of
// valid JSON (which only an edit of the database makes) is written as a
// JSON string holding its text. An event without a hash has "" for both
// hashes. Unknown runs fail with engine.ErrRunNotFound before anything is
// written. Events are read a page at a time; events appended meanwhile are
// included up to the last page read.
func (db *DB) ExportAudit(ctx context.Context, id string, w io.Writer) error {
	if _, err := db.Run(ctx, id); err != nil {
		return fmt.Errorf("export audit: %w", err)
	}
	const q = `SELECT seq, kind, created_at, payload, coalesce(prev_hash, '') AS prev_hash, coalesce(hash, '') AS hash
		FROM agent_run_event WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	bw := bufio.NewWriter(w)
	var line []byte
	for after := int64(math.MinInt64); ; {
		var rows []struct {
			Seq       int64  `db:"seq"`
			Kind      string `db:"kind"`
			CreatedAt int64  `db:"created_at"`
			Payload   []byte `db:"payload"`
			PrevHash  string `db:"prev_hash"`
			Hash      string `db:"hash"`
		}
		if err := db.db.SelectContext(ctx, &rows, q, id, after, exportPage); err != nil {
			return fmt.Errorf("export audit of run %s: %w", id, err)
		}
		for _, r := range rows {
			line = line[:0]
			line = append(line, `{"run_id":`...)
			line = appendJSONString(line, id)
			line = append(line, `,"seq":`...)
			line = strconv.AppendInt(line, r.Seq, 10)
			line = append(line, `,"kind":`...)
			line = appendJSONString(line, r.Kind)
			line = append(line, `,"created_at":`...)
			line = strconv.AppendInt(line, r.CreatedAt, 10)
			line = append(line, `,"payload":`...)
			if json.Valid(r.Payload) && !bytes.ContainsAny(r.Payload, "\r\n") {
				line = append(line, r.Payload...)
			} else {
				line = appendJSONString(line, string(r.Payload))
			}
			line = append(line, `,"prev_hash":`...)
			line = appendJSONString(line, r.PrevHash)
			line = append(line, `,"hash":`...)
			line = appendJSONString(line, r.Hash)
			line = append(line, "}\n"...)
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("export audit of run %s: %w", id, err)
			}
		}
		if len(rows) < exportPage {
			break
		}
		after = rows[len(rows)-1].Seq
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export audit of run %s: %w", id, err)
	}
	return nil
}

// appendJSONString appends s as a JSON string, without the HTML escaping
// of json.Marshal, which an exported line has no use for.
func appendJSONString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
