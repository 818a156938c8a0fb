package kit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is the real countersign binary serving on a loopback port.
type Server struct {
	URL string
	// Password is the first admin's password, when this start created it.
	Password string
	Started  time.Time
	cmd      *exec.Cmd
	done     chan struct{}

	mu    sync.Mutex
	lines []line
	subs  []chan line
}

type line struct {
	at   time.Time
	text string
}

var (
	reListening = regexp.MustCompile(`countersign listening on (http://\S+)`)
	rePassword  = regexp.MustCompile(`password=([0-9a-f]+)`)
)

// StartServer runs `bin serve` on 127.0.0.1 with a free port, the database
// at dbPath and the extra COUNTERSIGN_* settings of env, and waits until it
// listens. Its output is kept (and copied to logTo when not nil).
func StartServer(bin, dbPath string, env map[string]string, logTo io.Writer) (*Server, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "COUNTERSIGN_ADDR=127.0.0.1:0", "COUNTERSIGN_DB="+dbPath)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	s := &Server{cmd: cmd, done: make(chan struct{}), Started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := line{at: time.Now(), text: sc.Text()}
			if logTo != nil {
				fmt.Fprintln(logTo, l.text)
			}
			s.mu.Lock()
			s.lines = append(s.lines, l)
			for _, c := range s.subs {
				select {
				case c <- l:
				default:
				}
			}
			s.mu.Unlock()
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	l, err := s.WaitLine(reListening, 60*time.Second)
	if err != nil {
		s.Kill()
		return nil, fmt.Errorf("server did not start: %w\n%s", err, s.Output())
	}
	s.URL = reListening.FindStringSubmatch(l.text)[1]
	for _, l := range s.snapshot() {
		if m := rePassword.FindStringSubmatch(l.text); m != nil {
			s.Password = m[1]
		}
	}
	return s, nil
}

func (s *Server) snapshot() []line {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// WaitLine waits until a line of output matches re (including lines already
// printed) and returns it with the time it was read.
func (s *Server) WaitLine(re *regexp.Regexp, timeout time.Duration) (line, error) {
	c := make(chan line, 256)
	s.mu.Lock()
	for _, l := range s.lines {
		if re.MatchString(l.text) {
			s.mu.Unlock()
			return l, nil
		}
	}
	s.subs = append(s.subs, c)
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l := <-c:
			if re.MatchString(l.text) {
				return l, nil
			}
		case <-s.done:
			return line{}, errors.New("server exited")
		case <-t.C:
			return line{}, fmt.Errorf("no line matching %s after %s", re, timeout)
		}
	}
}

// WaitLineAt is WaitLine returning only the time and text.
func (s *Server) WaitLineAt(re *regexp.Regexp, timeout time.Duration) (time.Time, string, error) {
	l, err := s.WaitLine(re, timeout)
	return l.at, l.text, err
}

// Output returns everything the server printed.
func (s *Server) Output() string {
	var b strings.Builder
	for _, l := range s.snapshot() {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop asks the server to shut down (SIGINT) and waits for it, killing it
// after 15 seconds.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.Kill()
	}
}

// Kill kills the server's process group and waits for it.
func (s *Server) Kill() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// RSS returns the resident set size of the server, and its peak, in bytes.
func (s *Server) RSS() (rss, peak int64, err error) {
	return ProcRSS(s.PID())
}

// ProcRSS reads VmRSS and VmHWM of a process from /proc.
func ProcRSS(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// CPUTime returns the user and system CPU time the server has used.
func (s *Server) CPUTime() time.Duration { return procCPU(strconv.Itoa(s.PID())) }
