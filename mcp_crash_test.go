package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// TestMCPCrashDuringCall kills countersign with SIGKILL while an approved
// write_file of the real filesystem server is in flight: after its
// tool_started fence was committed and before the call was sent, and after
// the server wrote the file but before tool_finished was recorded. After a
// restart the run must fail as interrupted_during_write, and the call must
// never be sent again: in the first case hello.txt is never written, and in
// the second a file changed by someone else since is left as they left it.
func TestMCPCrashDuringCall(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "countersign")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, point := range []string{"write_started:1", "write_done:1"} {
		t.Run(point, func(t *testing.T) { mcpCrashAt(t, bin, point) })
	}
}

func mcpCrashAt(t *testing.T, bin, point string) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "cs.db")
	hello := filepath.Join(dir, "sandbox", "hello.txt")
	env := []string{"COUNTERSIGN_DB=" + dbPath, "COUNTERSIGN_ADDR=127.0.0.1:0", "COUNTERSIGN_LEASE=1s",
		"COUNTERSIGN_REAP_INTERVAL=200ms", "COUNTERSIGN_SESSION_KEY=" + strings.Repeat("k", 40)}

	srv := startCrashServer(t, bin, append(env, "COUNTERSIGN_FAULT="+point))
	c := newCrashClient(t, srv.url)
	c.login("admin", srv.password)
	runID := c.startRun("files", "Write a file hello.txt that says Hello from countersign.")
	var digest string
	waitFor(t, 20*time.Second, func() bool {
		var status string
		status, digest = c.status(runID)
		return status == "waiting_for_approval"
	})
	c.approveAsync(runID, digest)
	waitFor(t, 20*time.Second, srv.reached)
	srv.kill()

	switch point {
	case "write_started:1":
		if _, err := os.Stat(hello); !os.IsNotExist(err) {
			t.Fatalf("hello.txt before the call was sent: %v", err)
		}
	case "write_done:1":
		b, err := os.ReadFile(hello)
		if err != nil || string(b) != "Hello from countersign.\n" {
			t.Fatalf("hello.txt after the call = %q, %v; want the write done", b, err)
		}
		// Someone changes the file while countersign is down: a call sent
		// again after the restart would overwrite it.
		if err := os.WriteFile(hello, []byte("changed by hand\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	srv2 := startCrashServer(t, bin, env)
	c2 := newCrashClient(t, srv2.url)
	c2.login("admin", srv.password)
	var final string
	waitFor(t, 30*time.Second, func() bool {
		final, _ = c2.status(runID)
		return final == "completed" || final == "failed" || final == "cancelled"
	})
	srv2.kill()

	db, err := sql.Open("sqlite3", dbPath+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var termination string
	if err := db.QueryRow(`SELECT termination_reason FROM agent_run WHERE id = ?`, runID).Scan(&termination); err != nil {
		t.Fatal(err)
	}
	if final != "failed" || termination != "interrupted_during_write" {
		t.Fatalf("run %s (%s), want failed as interrupted_during_write", final, termination)
	}
	var started int
	mustScan(t, db, `SELECT count(*) FROM agent_run_event WHERE kind = 'tool_started'`, &started)
	if started != 1 {
		t.Fatalf("%d tool_started events, want the one fence", started)
	}
	var external int
	mustScan(t, db, `SELECT count(*) FROM agent_run_event WHERE kind = 'tool_started' AND json_extract(payload, '$.external')`, &external)
	if external != 1 {
		t.Fatal("the fence of the MCP write is not marked external")
	}
	checkSeqs(t, db)
	b, err := os.ReadFile(hello)
	switch point {
	case "write_started:1":
		if !os.IsNotExist(err) {
			t.Fatalf("hello.txt = %q, %v: a call that was never sent ran after the restart", b, err)
		}
	case "write_done:1":
		if string(b) != "changed by hand\n" {
			t.Fatalf("hello.txt = %q, %v: the write in doubt was sent again after the restart", b, err)
		}
	}
}
