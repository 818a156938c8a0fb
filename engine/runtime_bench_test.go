package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
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
// One op is one run taken through the whole cycle. Besides ns/op it reports:
//
//   - runs/s;
//   - raw-commits/cycle: the raw one-row commit rate of the same database,
//     measured before the runs (store.DB.CommitRate), divided by runs/s:
//     what a cycle costs in the disk's own currency, comparable across
//     machines and synchronous settings;
//   - writes/cycle: the store's write operations a cycle makes (each was
//     one transaction before group commit), and commits/cycle: the
//     transactions actually committed, which group commit makes fewer
//     than the writes when runs are in flight;
//   - cpu-ms/cycle: the process's CPU time (user and system) per cycle,
//     and user-ms/cycle its user part (the rest is the kernel's, mostly
//     the syncs of the commits);
//   - write-ms/cycle and read-ms/cycle: time inside the store's methods.
//
// workers=1/inflight=1 is one run at a time on one worker: its ns/op is the
// latency of a cycle with nothing else going on. The other cases keep
// several runs in flight, to measure throughput.
func BenchmarkApprovalCycle(b *testing.B) {
	for _, c := range []struct{ workers, inflight int }{{1, 1}, {1, 8}, {4, 16}, {32, 32}, {128, 128}} {
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
	floor, err := db.CommitRate(ctx, 300)
	if err != nil {
		b.Fatal(err)
	}
	cs := &cycleStore{DB: db, finished: make(chan engine.Finish, inflight)}
	ws := &cycleWorkspace{Workspace: db.Pages(), s: cs}
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
			if err := rt.Decide(ctx, id, engine.Decision{Verdict: engine.VerdictApprove, Digest: digest, By: "oscar"}); err != nil {
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
	cs.writeNs.Store(0)
	cs.readNs.Store(0)
	cs.suspends.Store(0)
	commits0 := db.Commits()
	user0, sys0 := cpuTime(b)
	b.ResetTimer()
	// Each run is started from a goroutine of its own, as by clients of
	// their own: a start waits for its commit, and starting them one after
	// the other would start at most one run per commit.
	var startErr atomic.Value
	for i := 0; i < b.N; i++ {
		slots <- struct{}{}
		go func() {
			prompt := fmt.Sprintf("Update the pricing page to say the Team plan now costs $%d per seat.", 100+cyclePrice.Add(1))
			if _, err := rt.StartRun(ctx, engine.NewRun{Agent: "editor", Model: demo.Name, Prompt: prompt, InitiatedBy: "olga"}); err != nil {
				startErr.Store(err)
				cs.finished <- engine.Finish{}
			}
		}()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatal("runs did not finish")
	}
	b.StopTimer()
	user1, sys1 := cpuTime(b)
	user, sys := user1-user0, sys1-sys0
	commits1 := db.Commits()
	decisions.Wait()
	if err, _ := decideErr.Load().(error); err != nil {
		b.Fatalf("decide: %v", err)
	}
	if err, _ := startErr.Load().(error); err != nil {
		b.Fatalf("start: %v", err)
	}
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d of %d runs did not complete in 3 model calls", n, b.N)
	}
	if s := cs.suspends.Load(); s != int64(b.N) {
		b.Fatalf("%d suspensions for %d runs", s, b.N)
	}
	runsPerSec := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(runsPerSec, "runs/s")
	b.ReportMetric(floor/runsPerSec, "raw-commits/cycle")
	b.ReportMetric(float64(cs.commits.Load())/float64(b.N), "writes/cycle")
	b.ReportMetric(float64(commits1-commits0)/float64(b.N), "commits/cycle")
	b.ReportMetric(float64((user+sys).Microseconds())/1000/float64(b.N), "cpu-ms/cycle")
	b.ReportMetric(float64(user.Microseconds())/1000/float64(b.N), "user-ms/cycle")
	// Time inside the store's and workspace's methods, added up over the
	// goroutines: with one run in flight it splits a cycle's latency.
	b.ReportMetric(float64(cs.writeNs.Load())/float64(b.N)/1e6, "write-ms/cycle")
	b.ReportMetric(float64(cs.readNs.Load())/float64(b.N)/1e6, "read-ms/cycle")
}

// cycleStore is the real store, counting the transactions its write methods
// commit, adding up the time spent in its write and read methods, and
// telling the benchmark when a run suspends or ends.
type cycleStore struct {
	*store.DB
	commits   atomic.Int64
	writeNs   atomic.Int64
	readNs    atomic.Int64
	suspends  atomic.Int64
	onSuspend func(id, digest string)
	finished  chan engine.Finish
}

// write counts a write that began at start.
func (s *cycleStore) write(start time.Time, err error) error {
	s.writeNs.Add(int64(time.Since(start)))
	if err == nil {
		s.commits.Add(1)
	}
	return err
}

// read counts a read that began at start.
func (s *cycleStore) read(start time.Time) { s.readNs.Add(int64(time.Since(start))) }

func (s *cycleStore) Run(ctx context.Context, id string) (engine.Run, error) {
	defer s.read(time.Now())
	return s.DB.Run(ctx, id)
}

func (s *cycleStore) SuspendedState(ctx context.Context, id string) (engine.Suspension, error) {
	defer s.read(time.Now())
	return s.DB.SuspendedState(ctx, id)
}

func (s *cycleStore) Events(ctx context.Context, id string, after int64, limit int) ([]engine.RecordedEvent, error) {
	defer s.read(time.Now())
	return s.DB.Events(ctx, id, after, limit)
}

func (s *cycleStore) LastDecision(ctx context.Context, id string) (engine.Event, bool, error) {
	defer s.read(time.Now())
	return s.DB.LastDecision(ctx, id)
}

func (s *cycleStore) DecisionOn(ctx context.Context, id, digest string) (engine.Event, bool, error) {
	defer s.read(time.Now())
	return s.DB.DecisionOn(ctx, id, digest)
}

func (s *cycleStore) CreateRun(ctx context.Context, r engine.NewRun, ev engine.Event, now time.Time) (engine.Run, error) {
	start := time.Now()
	run, err := s.DB.CreateRun(ctx, r, ev, now)
	return run, s.write(start, err)
}

func (s *cycleStore) AcquireRun(ctx context.Context, id, owner string, now, until time.Time) (engine.Run, error) {
	start := time.Now()
	run, err := s.DB.AcquireRun(ctx, id, owner, now, until)
	return run, s.write(start, err)
}

func (s *cycleStore) AppendEvents(ctx context.Context, id, owner string, evs []engine.Event, until time.Time) (int64, bool, error) {
	start := time.Now()
	seq, cancel, err := s.DB.AppendEvents(ctx, id, owner, evs, until)
	return seq, cancel, s.write(start, err)
}

func (s *cycleStore) RenewLease(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	start := time.Now()
	cancel, err := s.DB.RenewLease(ctx, id, owner, until)
	return cancel, s.write(start, err)
}

func (s *cycleStore) SuspendRun(ctx context.Context, id, owner string, sus engine.Suspend) error {
	err := s.write(time.Now(), s.DB.SuspendRun(ctx, id, owner, sus))
	if err == nil {
		s.suspends.Add(1)
		s.onSuspend(id, sus.Digest)
	}
	return err
}

func (s *cycleStore) ClaimRun(ctx context.Context, id string, c engine.Claim) ([]byte, error) {
	start := time.Now()
	st, err := s.DB.ClaimRun(ctx, id, c)
	return st, s.write(start, err)
}

func (s *cycleStore) ReleaseRun(ctx context.Context, id, owner string, ev engine.Event, now time.Time) error {
	return s.write(time.Now(), s.DB.ReleaseRun(ctx, id, owner, ev, now))
}

func (s *cycleStore) FinishRun(ctx context.Context, id, owner string, f engine.Finish) error {
	err := s.write(time.Now(), s.DB.FinishRun(ctx, id, owner, f))
	if err == nil {
		s.finished <- f
	}
	return err
}

func (s *cycleStore) RequestCancel(ctx context.Context, id string, ev engine.Event, now time.Time) (bool, error) {
	start := time.Now()
	ok, err := s.DB.RequestCancel(ctx, id, ev, now)
	return ok, s.write(start, err)
}

// cycleWorkspace is the real workspace, its transactions and time counted
// with the store's.
type cycleWorkspace struct {
	tools.Workspace
	s *cycleStore
}

func (w *cycleWorkspace) ListPages(ctx context.Context) ([]tools.Page, error) {
	defer w.s.read(time.Now())
	return w.Workspace.ListPages(ctx)
}

func (w *cycleWorkspace) GetPage(ctx context.Context, slug string) (tools.Page, error) {
	defer w.s.read(time.Now())
	return w.Workspace.GetPage(ctx, slug)
}

func (w *cycleWorkspace) SearchPages(ctx context.Context, q string) ([]tools.Page, error) {
	defer w.s.read(time.Now())
	return w.Workspace.SearchPages(ctx, q)
}

func (w *cycleWorkspace) CreatePage(ctx context.Context, p tools.Page) (tools.Page, error) {
	start := time.Now()
	p, err := w.Workspace.CreatePage(ctx, p)
	return p, w.s.write(start, err)
}

func (w *cycleWorkspace) UpdatePage(ctx context.Context, slug string, title, body *string) (tools.Page, error) {
	start := time.Now()
	p, err := w.Workspace.UpdatePage(ctx, slug, title, body)
	return p, w.s.write(start, err)
}

func (w *cycleWorkspace) PublishPage(ctx context.Context, slug string) (tools.Page, error) {
	start := time.Now()
	p, err := w.Workspace.PublishPage(ctx, slug)
	return p, w.s.write(start, err)
}

func (w *cycleWorkspace) DeletePage(ctx context.Context, slug string) error {
	return w.s.write(time.Now(), w.Workspace.DeletePage(ctx, slug))
}

// cpuTime returns the CPU time the process has used in user space and in
// the kernel (where the syncs of the commits are paid).
func cpuTime(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
