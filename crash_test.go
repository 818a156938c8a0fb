package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	_ "github.com/mattn/go-sqlite3"
)

var crashFull = flag.Bool("crash.full", false, "run the whole kill-point matrix (make chaos)")

// crashScenario is a prompt of the demo model with the number of writes it
// makes when every turn is approved, and the kill points to try on it.
type crashScenario struct {
	name   string
	prompt string
	writes int
	points []string
}

// TestCrashRecovery builds the real binary, and for each kill point starts
// it on a fresh database with COUNTERSIGN_FAULT set, drives a run over HTTP
// until the process stops at the point, kills it with SIGKILL, restarts it
// and drives the run to its end. It checks that no approved write ran twice,
// no unapproved write ran at all, a write in doubt failed the run as
// interrupted_during_write, no run is left running, event seqs are
// contiguous, and runs waiting after the restart can still be approved.
func TestCrashRecovery(t *testing.T) {
	short := []crashScenario{{"publish", "Publish the about page.", 1,
		[]string{"model_call:1", "claimed:1", "write_started:1", "write_done:1", "tool_finished:1", "model_call:2"}}}
	full := []crashScenario{
		{"publish", "Publish the about page.", 1,
			[]string{"model_call:1", "model_call:2", "claimed:1", "write_started:1", "write_done:1", "tool_finished:1"}},
		{"create-then-publish", "Create a page announcing the winter sale, then publish it.", 2,
			[]string{"model_call:1", "model_call:2", "model_call:3", "claimed:1", "claimed:2", "write_started:1", "write_started:2",
				"write_done:1", "write_done:2", "tool_finished:1", "tool_finished:2"}},
		{"publish-all-drafts", "Publish all draft pages.", 3,
			[]string{"model_call:1", "model_call:2", "model_call:3", "claimed:1", "write_started:1", "write_started:2", "write_started:3",
				"write_done:1", "write_done:2", "write_done:3", "tool_finished:1", "tool_finished:2", "tool_finished:3", "tool_finished:4"}},
	}
	scenarios := short
	if *crashFull {
		scenarios = full
	}
	bin := filepath.Join(t.TempDir(), "countersign")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kills := 0
	for _, sc := range scenarios {
		for _, point := range sc.points {
			t.Run(sc.name+"/"+point, func(t *testing.T) {
				crashAt(t, bin, sc, point)
				kills++
			})
		}
	}
	t.Logf("%d kill points tried", kills)
}

func crashAt(t *testing.T, bin string, sc crashScenario, point string) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "cs.db")
	env := []string{"COUNTERSIGN_DB=" + dbPath, "COUNTERSIGN_ADDR=127.0.0.1:0", "COUNTERSIGN_LEASE=1s",
		"COUNTERSIGN_REAP_INTERVAL=200ms", "COUNTERSIGN_SESSION_KEY=" + strings.Repeat("k", 40)}

	srv := startCrashServer(t, bin, append(env, "COUNTERSIGN_FAULT="+point))
	c := newCrashClient(t, srv.url)
	c.login("admin", srv.password)
	runID := c.startRun("editor", sc.prompt)

	approvals := 0
	// Drive the run until the process reports the fault point.
	deadline := time.Now().Add(20 * time.Second)
	for !srv.reached() {
		if time.Now().After(deadline) {
			t.Fatalf("fault point %s never reached; log:\n%s", point, srv.logs())
		}
		if status, digest := c.status(runID); status == "waiting_for_approval" {
			approvals++
			c.approveAsync(runID, digest)
			// A decision that stops at "claimed" never answers.
			waitFor(t, 5*time.Second, func() bool { s, d := c.status(runID); return srv.reached() || s != status || d != digest })
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill()

	srv2 := startCrashServer(t, bin, env)
	c2 := newCrashClient(t, srv2.url)
	c2.login("admin", srv.password)
	final := ""
	deadline = time.Now().Add(30 * time.Second)
	for final == "" {
		if time.Now().After(deadline) {
			st, _ := c2.status(runID)
			t.Fatalf("run did not settle after restart (status %s); log:\n%s", st, srv2.logs())
		}
		switch status, digest := c2.status(runID); status {
		case "waiting_for_approval":
			approvals++
			c2.approve(runID, digest)
		case "completed", "failed", "cancelled":
			final = status
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv2.kill()

	db, err := sql.Open("sqlite3", dbPath+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var revisions, running int
	var termination string
	mustScan(t, db, `SELECT count(*) FROM page_revision`, &revisions)
	if err := db.QueryRow(`SELECT termination_reason FROM agent_run WHERE id = ?`, runID).Scan(&termination); err != nil {
		t.Fatal(err)
	}
	mustScan(t, db, `SELECT count(*) FROM agent_run WHERE status = 'running'`, &running)
	if running != 0 {
		t.Fatalf("%d runs left running", running)
	}
	checkSeqs(t, db)

	inDoubt := strings.HasPrefix(point, "write_started") || strings.HasPrefix(point, "write_done")
	var k int
	fmt.Sscanf(point[strings.Index(point, ":")+1:], "%d", &k)
	switch {
	case inDoubt:
		if final != "failed" || termination != "interrupted_during_write" {
			t.Fatalf("write in doubt: run %s (%s), want failed as interrupted_during_write", final, termination)
		}
		want := k - 1 // the write stopped before it ran
		if strings.HasPrefix(point, "write_done") {
			want = k // it ran once and is never run again
		}
		if revisions != want {
			t.Fatalf("workspace writes %d, want %d", revisions, want)
		}
	default:
		if final != "completed" {
			t.Fatalf("run %s (%s), want completed", final, termination)
		}
		if revisions != sc.writes {
			t.Fatalf("workspace writes %d, want each of the %d approved writes exactly once", revisions, sc.writes)
		}
	}
	if approvals == 0 || revisions > sc.writes {
		t.Fatalf("%d approvals, %d writes: a write ran without approval or twice", approvals, revisions)
	}
}

func mustScan(t *testing.T, db *sql.DB, q string, dst any) {
	t.Helper()
	if err := db.QueryRow(q).Scan(dst); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// checkSeqs asserts that every run's events are numbered 1..n without gaps.
func checkSeqs(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT run_id, count(*), min(seq), max(seq) FROM agent_run_event GROUP BY run_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n, lo, hi int
		if err := rows.Scan(&id, &n, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if lo != 1 || hi != n {
			t.Fatalf("run %s: %d events numbered %d..%d", id, n, lo, hi)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crashServer is a running countersign process.
type crashServer struct {
	cmd      *exec.Cmd
	url      string
	password string
	mu       sync.Mutex
	log      strings.Builder
	hit      bool
	done     chan struct{}
}

func startCrashServer(t *testing.T, bin string, env []string) *crashServer {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &crashServer{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			if i := strings.Index(line, "password="); i >= 0 {
				s.password = strings.Fields(line[i+len("password="):])[0]
			}
			if strings.HasPrefix(line, "fault point reached") {
				s.hit = true
			}
			if u, ok := strings.CutPrefix(line, "countersign listening on "); ok {
				s.url = u
				once.Do(func() { close(ready) })
			}
			s.mu.Unlock()
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(s.kill)
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("server exited before listening:\n%s", s.logs())
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not start:\n%s", s.logs())
	}
	return s
}

func (s *crashServer) reached() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.hit }
func (s *crashServer) logs() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.log.String() }

// kill sends SIGKILL: no shutdown code runs.
func (s *crashServer) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	<-s.done
}

// crashClient is a signed-in browser without JavaScript.
type crashClient struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func newCrashClient(t *testing.T, base string) *crashClient {
	jar, _ := cookiejar.New(nil)
	return &crashClient{t: t, base: base, http: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *crashClient) page(path string) *goquery.Document {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if v, ok := doc.Find(`input[name="_csrf"]`).Attr("value"); ok {
		c.csrf = v
	}
	return doc
}

func (c *crashClient) post(path string, form url.Values) *http.Response {
	c.t.Helper()
	form.Set("_csrf", c.csrf)
	resp, err := c.http.PostForm(c.base+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (c *crashClient) login(name, password string) {
	c.t.Helper()
	c.page("/login")
	if resp := c.post("/login", url.Values{"name": {name}, "password": {password}}); resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("login: %s", resp.Status)
	}
}

func (c *crashClient) startRun(agent, prompt string) string {
	c.t.Helper()
	c.page("/runs/new")
	resp := c.post("/runs", url.Values{"agent": {agent}, "model": {"demo"}, "prompt": {prompt}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/") {
		c.t.Fatalf("start run: %s %s", resp.Status, loc)
	}
	return strings.TrimPrefix(loc, "/runs/")
}

// status returns the run's status and, when it waits, the pending digest.
func (c *crashClient) status(id string) (string, string) {
	doc := c.page("/runs/" + id)
	status, _ := doc.Find(`[data-testid="run-status"]`).Attr("data-status")
	digest, _ := doc.Find(`#approval-card input[name="digest"]`).Attr("value")
	return status, digest
}

func (c *crashClient) approve(id, digest string) {
	c.t.Helper()
	resp := c.post("/tool/resume", url.Values{"run_id": {id}, "digest": {digest}, "decision": {"approve"}})
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusConflict {
		c.t.Fatalf("approve: %s", resp.Status)
	}
}

// approveAsync posts an approval without waiting for the answer, which never
// comes when the process stops at the claimed fault point.
func (c *crashClient) approveAsync(id, digest string) {
	form := url.Values{"run_id": {id}, "digest": {digest}, "decision": {"approve"}, "_csrf": {c.csrf}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/tool/resume", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if resp, err := c.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}
