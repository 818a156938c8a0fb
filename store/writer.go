package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// maxBatch bounds the operations one group commit holds.
const maxBatch = 256

// commitDelay is how long the writer waits for more writes before it
// commits a batch, when the last batch held more than one: several runs are
// in flight, and a commit shared by more of them costs each less (a commit
// syncs the disk, whatever it holds). A lone writer never waits.
var commitDelay = 500 * time.Microsecond

// errClosed refuses a write after Close.
var errClosed = errors.New("store: the database is closed")

// writer is the one goroutine every write transaction of the store goes
// through: group commit. It takes the operations queued while the last
// commit was syncing, runs them in one transaction, each in a savepoint of
// its own so that one that fails undoes only itself, and commits once.
// Every caller waits for its batch's commit, so none is told "done" before
// its write is on disk; with one operation at a time, a batch is that one
// operation and its transaction, as before.
type writer struct {
	db   *sqlx.DB // the one writer connection
	ops  chan *writeOp
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// batches counts the commits, for the benchmarks.
	batches atomic.Int64
}

// writeOp is one caller's transaction body and what became of it.
type writeOp struct {
	ctx  context.Context
	fn   func(ctx context.Context, tx writeTx) error
	err  error
	done chan struct{}
	// committed are run once the operation's writes are committed.
	committed []func()
}

// opKey is the context key of the operation a transaction body runs in.
type opKey struct{}

// afterCommit has f run once the writes of the operation that ctx belongs
// to are committed; never if they are not. Outside an operation it does
// nothing.
func afterCommit(ctx context.Context, f func()) {
	if op, ok := ctx.Value(opKey{}).(*writeOp); ok {
		op.committed = append(op.committed, f)
	}
}

func newWriter(db *sqlx.DB) *writer {
	w := &writer{db: db, ops: make(chan *writeOp), quit: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	return w
}

// do runs fn in the next batch and returns once the batch has committed or
// rolled back. A caller whose ctx ends before its operation is taken gets
// ctx's error and nothing ran. Once taken, the operation runs to its end
// whatever ctx does (fn is given ctx without its cancellation): a
// statement interrupted inside a shared transaction would roll back the
// whole batch.
func (w *writer) do(ctx context.Context, fn func(ctx context.Context, tx writeTx) error) error {
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case w.ops <- op:
	case <-w.quit:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	<-op.done
	return op.err
}

// close stops the loop once the batch in hand is committed.
func (w *writer) close() {
	w.once.Do(func() { close(w.quit) })
	<-w.done
}

// commits returns the commits made.
func (w *writer) commits() int64 { return w.batches.Load() }

func (w *writer) loop() {
	defer close(w.done)
	batch := make([]*writeOp, 0, maxBatch)
	last := 0 // the size of the last batch
	for {
		batch = batch[:0]
		select {
		case op := <-w.ops:
			batch = append(batch, op)
		case <-w.quit:
			return
		}
	more:
		for len(batch) < maxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			default:
				break more
			}
		}
		if last > 1 && len(batch) < maxBatch && commitDelay > 0 {
			// Others were writing at the last commit: give them a moment
			// to queue and share this one (see commitDelay).
			timer := time.NewTimer(commitDelay)
		wait:
			for len(batch) < maxBatch {
				select {
				case op := <-w.ops:
					batch = append(batch, op)
				case <-timer.C:
					break wait
				}
			}
			timer.Stop()
		}
		last = len(batch)
		w.commit(batch)
		for _, op := range batch {
			close(op.done)
		}
	}
}

// writeTx is what a transaction body runs its statements on: the writer's
// connection, inside the transaction of its batch.
type writeTx interface {
	sqlx.QueryerContext
	sqlx.ExecerContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// commit runs a batch in one transaction. A batch of one runs without a
// savepoint: its failure rolls the transaction back.
//
// The transaction is begun and ended with statements on a connection of
// its own rather than through database/sql's Tx, which starts a goroutine
// for the transaction and one more for every query in it, to watch for a
// cancellation that a batch never has (see do).
func (w *writer) commit(batch []*writeOp) {
	ctx := context.Background()
	conn, err := w.db.Connx(ctx)
	if err != nil {
		w.fail(nil, batch, fmt.Errorf("connect: %w", err))
		return
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		w.fail(nil, batch, fmt.Errorf("begin: %w", err))
		return
	}
	ran := 0
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.err = err
			continue
		}
		ctx := context.WithValue(context.WithoutCancel(op.ctx), opKey{}, op)
		if len(batch) == 1 {
			op.err = op.fn(ctx, conn)
			ran++
			continue
		}
		if _, err := conn.ExecContext(ctx, `SAVEPOINT op`); err != nil {
			op.err = fmt.Errorf("savepoint: %w", err)
			continue
		}
		if op.err = op.fn(ctx, conn); op.err != nil {
			op.committed = nil
			if _, err := conn.ExecContext(ctx, `ROLLBACK TO op`); err != nil {
				w.fail(conn, batch, fmt.Errorf("roll back to savepoint: %w", err))
				return
			}
		}
		if _, err := conn.ExecContext(ctx, `RELEASE op`); err != nil {
			w.fail(conn, batch, fmt.Errorf("release savepoint: %w", err))
			return
		}
		ran++
	}
	if len(batch) == 1 && batch[0].err != nil || ran == 0 {
		rollback(conn)
		return
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		// A COMMIT that failed may leave the transaction open (SQLITE_BUSY)
		// or have rolled it back already: either way nothing is committed.
		w.fail(conn, batch, fmt.Errorf("commit: %w", err))
		return
	}
	for _, op := range batch {
		if op.err == nil {
			for _, f := range op.committed {
				f()
			}
		}
	}
	w.batches.Add(1)
}

// rollback ends the transaction open on conn, if one still is, so the
// connection goes back to the pool without one.
func rollback(conn *sqlx.Conn) {
	_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
}

// fail rolls back the transaction on conn (when not nil) and gives err to
// every operation of the batch that had not failed on its own: none of them
// is committed.
func (w *writer) fail(conn *sqlx.Conn, batch []*writeOp, err error) {
	if conn != nil {
		rollback(conn)
	}
	for _, op := range batch {
		if op.err == nil {
			op.err = err
		}
	}
}

// CommitRate measures the raw one-row commit rate of the writer connection
// at the store's settings (WAL, synchronous=FULL): n transactions that each
// insert one row into a scratch table, one after the other, outside the
// group commit. The benchmarks divide it by their runs per second: what one
// cycle costs in raw commits.
func (db *DB) CommitRate(ctx context.Context, n int) (float64, error) {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_commit (id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`); err != nil {
		return 0, fmt.Errorf("commit rate: %w", err)
	}
	start := time.Now()
	for i := range n {
		if err := db.commitOneRow(ctx, i); err != nil {
			return 0, fmt.Errorf("commit rate: %w", err)
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	if _, err := db.w.ExecContext(ctx, `DROP TABLE bench_commit`); err != nil {
		return 0, fmt.Errorf("commit rate: %w", err)
	}
	return rate, nil
}

// commitOneRow is one raw commit of CommitRate: a transaction on the
// writer connection that inserts row i into bench_commit.
func (db *DB) commitOneRow(ctx context.Context, i int) error {
	tx, err := db.w.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO bench_commit (at) VALUES (?)`, i); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
