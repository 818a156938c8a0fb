package kit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The machine is shared: other processes may take CPU while a program
// measures. CPUWatch tells how much they took, so a figure can be read
// against it.

// machineBusy returns the CPU time all cores spent on anything but idling
// and waiting for I/O, from /proc/stat.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	var ticks int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100
}

// procCPU returns the user and system CPU time of a process ("self" for
// this one).
func procCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// CPUWatch measures, over a stretch of time, the CPU of a server process,
// of this load program and of everything else on the machine.
type CPUWatch struct {
	pid             int
	at              time.Time
	busy, srv, self time.Duration
}

// WatchCPU starts watching; pid is the server's, 0 when it runs in process.
func WatchCPU(pid int) *CPUWatch {
	w := &CPUWatch{pid: pid, at: time.Now(), busy: machineBusy(), self: procCPU("self")}
	if pid > 0 {
		w.srv = procCPU(strconv.Itoa(pid))
	}
	return w
}

// CPUUse is what a CPUWatch saw, in percent of one core.
type CPUUse struct{ Server, Load, Others float64 }

// Stop returns the CPU used since WatchCPU.
func (w *CPUWatch) Stop() CPUUse {
	el := time.Since(w.at).Seconds()
	self := procCPU("self") - w.self
	var srv time.Duration
	if w.pid > 0 {
		srv = procCPU(strconv.Itoa(w.pid)) - w.srv
	}
	others := machineBusy() - w.busy - self - srv
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / el }
	return CPUUse{Server: pct(srv), Load: pct(self), Others: max(0, pct(others))}
}

func (u CPUUse) String() string {
	return fmt.Sprintf("CPU %% of one core: server %.0f, load program %.0f, other processes %.0f (machine: 200)", u.Server, u.Load, u.Others)
}

// LoadAvg returns the one-minute load average.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}
