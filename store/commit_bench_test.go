package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
)

// BenchmarkCommitFloor measures the raw floor of the disk under the store's
// own settings: one op is one transaction that inserts one row, through the
// same pool, DSN (WAL, synchronous=NORMAL, BEGIN IMMEDIATE) and inTx as
// every write of the store. BenchmarkApprovalCycle in engine/ reports how
// many such commits a cycle makes.
func BenchmarkCommitFloor(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "floor.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE bench_commit (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		err := db.inTx(ctx, func(tx *sqlx.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO bench_commit (at) VALUES (?)`, i)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
