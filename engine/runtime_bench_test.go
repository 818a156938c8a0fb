package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"countersign/engine"
	"countersign/engine/models/demo"
	"countersign/engine/tools"
	"countersign/store"
)

// BenchmarkApprovalCycle measures the full durable approval cycle with the
// demo model on a SQLite file: start -> get_page (read) -> suspend (stored)
// -> decide approve -> update_page (write) -> final answer -> finished.
// One op is one run taken through the whole cycle. Besides ns/op it reports
// runs/s and commits/cycle: the transactions the cycle committed, counted
// at the store's write methods (each is one transaction) and the
// workspace's writes. Compare with BenchmarkCommitFloor in store/.
//
// workers=1/inflight=1 is one run at a time on one worker: its ns/op is the
// latency of a cycle with nothing else going on. The other cases keep
// several runs in flight, to measure throughput.
func BenchmarkApprovalCycle(b *testing.B) {
	for _, c := range []struct{ workers, inflight int }{{1, 1}, {1, 8}, {4, 16}} {
		b.Run(fmt.Sprintf("workers=%d/inflight=%d", c.workers, c.inflight), func(b *testing.B) {
			benchCycle(b, c.workers, c.inflight)
		})
	}
}

// cyclePrice makes every run's prompt name a new price, so that the demo
// model always has a change to make and the run always suspends.
var cyclePrice atomic.Int64

func benchCycle(b *testing.B, workers, inflight int) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(b.TempDir(), "cs.db"), store.WithBcryptCost(bcrypt.MinCost))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Pages().SeedPages(ctx, tools.SeedPages()); err != nil {
		b.Fatal(err)
	}
	cs := &cycleStore{DB: db, finished: make(chan engine.Finish, inflight)}
	ws := &cycleWorkspace{Workspace: db.Pages(), commits: &cs.commits}
	model := demo.New()
	rt, err := engine.NewRuntime(engine.RuntimeConfig{
		Store: cs, Agents: tools.Agents(ws, time.Now), Workers: workers, ReapEvery: time.Hour,
		Models: func(name string) (engine.Model, error) {
			if name == demo.Name {
				return model, nil
			}
			return nil, fmt.Errorf("%w %q", engine.ErrUnknownModel, name)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	// A suspension is decided at once, from another goroutine, as a person
	// clicking approve on the run page would (without the HTTP part).
	var decideErr atomic.Value
	var decisions sync.WaitGroup
	cs.onSuspend = func(id, digest string) {
		decisions.Add(1)
		go func() {
			defer decisions.Done()
			if err := rt.Decide(ctx, id, engine.Decision{Approve: true, Digest: digest, By: "oscar"}); err != nil {
				decideErr.Store(err)
			}
		}()
	}
	rt.Start()
	defer rt.Close()

	slots := make(chan struct{}, inflight)
	done := make(chan struct{})
	var bad atomic.Int64
	go func() {
		for i := 0; i < b.N; i++ {
			f := <-cs.finished
			if f.Status != engine.StatusCompleted || f.Totals.Iterations != 3 {
				bad.Add(1)
			}
			<-slots
		}
		close(done)
	}()
	cs.commits.Store(0)
	cs.suspends.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		slots <- struct{}{}
		prompt := fmt.Sprintf("Update the pricing page to say the Team plan now costs $%d per seat.", 100+cyclePrice.Add(1))
		if _, err := rt.StartRun(ctx, engine.NewRun{Agent: "editor", Model: demo.Name, Prompt: prompt, InitiatedBy: "olga"}); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("runs did not finish")
	}
	b.StopTimer()
	decisions.Wait()
	if err, _ := decideErr.Load().(error); err != nil {
		b.Fatalf("decide: %v", err)
	}
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d of %d runs did not complete in 3 model calls", n, b.N)
	}
	if s := cs.suspends.Load(); s != int64(b.N) {
		b.Fatalf("%d suspensions for %d runs", s, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(cs.commits.Load())/float64(b.N), "commits/cycle")
}

// cycleStore is the real store, counting the transactions its write methods
// commit and telling the benchmark when a run suspends or ends.
type cycleStore struct {
	*store.DB
	commits   atomic.Int64
	suspends  atomic.Int64
	onSuspend func(id, digest string)
	finished  chan engine.Finish
}

func (s *cycleStore) count(err error) error {
	if err == nil {
		s.commits.Add(1)
	}
	return err
}

func (s *cycleStore) CreateRun(ctx context.Context, r engine.NewRun, ev engine.Event, now time.Time) (engine.Run, error) {
	run, err := s.DB.CreateRun(ctx, r, ev, now)
	return run, s.count(err)
}

func (s *cycleStore) AcquireRun(ctx context.Context, id, owner string, now, until time.Time) (engine.Run, error) {
	run, err := s.DB.AcquireRun(ctx, id, owner, now, until)
	return run, s.count(err)
}

func (s *cycleStore) AppendEvent(ctx context.Context, id, owner string, ev engine.Event, until time.Time) (int64, bool, error) {
	seq, cancel, err := s.DB.AppendEvent(ctx, id, owner, ev, until)
	return seq, cancel, s.count(err)
}

func (s *cycleStore) RenewLease(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	cancel, err := s.DB.RenewLease(ctx, id, owner, until)
	return cancel, s.count(err)
}

func (s *cycleStore) SuspendRun(ctx context.Context, id, owner string, state []byte, digest string, ev engine.Event, now time.Time) error {
	err := s.count(s.DB.SuspendRun(ctx, id, owner, state, digest, ev, now))
	if err == nil {
		s.suspends.Add(1)
		s.onSuspend(id, digest)
	}
	return err
}

func (s *cycleStore) ClaimRun(ctx context.Context, id string, c engine.Claim) ([]byte, error) {
	st, err := s.DB.ClaimRun(ctx, id, c)
	return st, s.count(err)
}

func (s *cycleStore) ReleaseRun(ctx context.Context, id, owner string, ev engine.Event, now time.Time) error {
	return s.count(s.DB.ReleaseRun(ctx, id, owner, ev, now))
}

func (s *cycleStore) FinishRun(ctx context.Context, id, owner string, f engine.Finish) error {
	err := s.count(s.DB.FinishRun(ctx, id, owner, f))
	if err == nil {
		s.finished <- f
	}
	return err
}

func (s *cycleStore) RequestCancel(ctx context.Context, id string, ev engine.Event, now time.Time) (bool, error) {
	ok, err := s.DB.RequestCancel(ctx, id, ev, now)
	return ok, s.count(err)
}

// cycleWorkspace is the real workspace, counting the transactions of its
// writes.
type cycleWorkspace struct {
	tools.Workspace
	commits *atomic.Int64
}

func (w *cycleWorkspace) count(err error) error {
	if err == nil {
		w.commits.Add(1)
	}
	return err
}

func (w *cycleWorkspace) CreatePage(ctx context.Context, p tools.Page) (tools.Page, error) {
	p, err := w.Workspace.CreatePage(ctx, p)
	return p, w.count(err)
}

func (w *cycleWorkspace) UpdatePage(ctx context.Context, slug string, title, body *string) (tools.Page, error) {
	p, err := w.Workspace.UpdatePage(ctx, slug, title, body)
	return p, w.count(err)
}

func (w *cycleWorkspace) PublishPage(ctx context.Context, slug string) (tools.Page, error) {
	p, err := w.Workspace.PublishPage(ctx, slug)
	return p, w.count(err)
}

func (w *cycleWorkspace) DeletePage(ctx context.Context, slug string) error {
	return w.count(w.Workspace.DeletePage(ctx, slug))
}
