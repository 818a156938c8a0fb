package mcptools

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// passedEnv are the variables of our environment a stdio server gets, when
// set: enough to find programs and speak the locale, never the keys of the
// model providers or anything else of ours.
var passedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// serverEnv returns the environment of a stdio server: the passed variables
// that getenv has, then extra (which wins), sorted by name.
func serverEnv(getenv func(string) string, extra map[string]string) []string {
	vars := map[string]string{}
	for _, k := range passedEnv {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	maps.Copy(vars, extra)
	out := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// stderrLines keeps the last lines a process writes to its stderr, so that
// the status of a server that fails can say why in its own words.
type stderrLines struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

// Bounds of stderrLines.
const (
	maxStderrLines    = 5
	maxStderrLineSize = 300
)

// Write implements io.Writer.
func (b *stderrLines) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			b.push()
			continue
		}
		if len(b.partial) < maxStderrLineSize {
			b.partial = append(b.partial, c)
		}
	}
	return len(p), nil
}

// push ends the partial line; blank lines are dropped.
func (b *stderrLines) push() {
	ln := strings.TrimSpace(string(b.partial))
	b.partial = b.partial[:0]
	if ln == "" {
		return
	}
	b.lines = append(b.lines, ln)
	if len(b.lines) > maxStderrLines {
		b.lines = b.lines[len(b.lines)-maxStderrLines:]
	}
}

// tail returns the last lines, including an unfinished one, joined by " | ".
func (b *stderrLines) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := slices.Clone(b.lines)
	if ln := strings.TrimSpace(string(b.partial)); ln != "" {
		lines = append(lines, ln)
	}
	if len(lines) > maxStderrLines {
		lines = lines[len(lines)-maxStderrLines:]
	}
	return strings.Join(lines, " | ")
}
