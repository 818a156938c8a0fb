// Command makerun measures `make run` from a clean clone to the first page
// served: the seconds from starting `make run` in a fresh `git clone` of the
// repository's committed HEAD to the first 200 answer of GET /login.
//
// Warm: the machine's module, build and npm caches as they are (the clone's
// own packages are compiled again, being in a new folder; its modules and
// their compiled packages come from the caches). Cold: a new machine,
// approximated by an empty GOMODCACHE, GOCACHE and npm cache in a temp
// folder and GOFLAGS=-mod=mod, so every module is downloaded from the module
// proxy, htmx from the npm registry, and everything (SQLite's C code too)
// compiled from scratch.
//
//	go run ./bench/makerun [-repo .] [-warm 2] [-cold=true]
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"countersign/bench/internal/kit"
)

func main() {
	repo := flag.String("repo", ".", "the repository to clone")
	warm := flag.Int("warm", 2, "runs with warm caches")
	cold := flag.Bool("cold", true, "also run once with cold caches")
	limit := flag.Duration("max", 8*time.Minute, "give up on a run that takes longer")
	out := flag.String("out", "", "folder for the results JSON")
	logs := flag.Bool("v", false, "show make's output")
	flag.Parse()
	if err := run(*repo, *warm, *cold, *limit, *out, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "makerun:", err)
		os.Exit(1)
	}
}

func run(repo string, warm int, cold bool, limit time.Duration, out string, logs bool) error {
	rep := kit.NewReport("makerun")
	repo, err := filepath.Abs(repo)
	if err != nil {
		return err
	}
	var warms []float64
	for i := 0; i < warm; i++ {
		kit.Section("make run from a clean clone, warm caches (%d of %d)", i+1, warm)
		d, err := once(repo, nil, limit, logs)
		if err != nil {
			return err
		}
		fmt.Printf("  first page after %.1fs\n", d.Seconds())
		warms = append(warms, d.Seconds())
	}
	if warm > 0 {
		rep.Add(fmt.Sprintf("make run to first page, warm caches (median of %d)", warm), kit.Median(warms), "s")
	}
	if cold {
		kit.Section("make run from a clean clone, cold caches")
		caches, err := os.MkdirTemp("", "countersign-caches-")
		if err != nil {
			return err
		}
		env := []string{
			"GOMODCACHE=" + filepath.Join(caches, "mod"),
			"GOCACHE=" + filepath.Join(caches, "build"),
			"GOFLAGS=-mod=mod",
			"npm_config_cache=" + filepath.Join(caches, "npm"),
		}
		d, err := once(repo, env, limit, logs)
		// The module cache is read-only; go clean empties it.
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), env...)
		_ = clean.Run()
		os.RemoveAll(caches)
		if err != nil {
			return err
		}
		fmt.Printf("  first page after %.1fs\n", d.Seconds())
		rep.Add("make run to first page, cold caches", d.Seconds(), "s")
	}
	return rep.Write(out)
}

// once clones repo, runs `make run` in the clone with env added, and
// returns how long it took until GET /login answered 200.
func once(repo string, env []string, limit time.Duration, logs bool) (time.Duration, error) {
	tmp, err := os.MkdirTemp("", "countersign-clone-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "countersign")
	if out, err := exec.Command("git", "clone", "--quiet", repo, dir).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("git clone: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command("make", "run")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("COUNTERSIGN_ADDR=127.0.0.1:%d", port), "COUNTERSIGN_DB="+filepath.Join(tmp, "data", "cs.db"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if logs {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	url := fmt.Sprintf("http://127.0.0.1:%d/login", port)
	for {
		if res, err := client.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		select {
		case err := <-exited:
			exited <- err
			return 0, fmt.Errorf("make run exited before serving: %v (run with -v to see its output)", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("no page after %s", limit)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
