// Command report sums up a `make bench`: it reads the output of the Go
// benchmarks (several -count runs of each), takes the median of every
// metric, checks the approval-cycle goal against the commit floor, and
// prints every goal of the load programs' reports in the results folder,
// met or missed. It writes the Go figures as go.json and the whole summary
// as summary.md in that folder.
//
//	go run ./bench/report -go bin/bench/go.txt -dir bin/bench
//
// It needs no benchstat; with benchstat installed, `benchstat go.txt` shows
// the same medians with confidence intervals.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"countersign/bench/internal/kit"
)

func main() {
	goOut := flag.String("go", "", "output of go test -bench")
	dir := flag.String("dir", "", "results folder of the load programs")
	flag.Parse()
	if err := run(*goOut, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

var reProcs = regexp.MustCompile(`-\d+$`)

// parse returns, for every benchmark and unit, the values of its runs.
func parse(r io.Reader) (map[string]map[string][]float64, []string, error) {
	res := map[string]map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := reProcs.ReplaceAllString(f[0], "")
		if res[name] == nil {
			res[name] = map[string][]float64{}
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, order, sc.Err()
}

func run(goOut, dir string) error {
	var md strings.Builder
	w := io.MultiWriter(os.Stdout, &md)
	rep := kit.NewReport("go")
	if goOut != "" {
		f, err := os.Open(goOut)
		if err != nil {
			return err
		}
		res, order, err := parse(f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "\n## Go benchmarks (median of %s)\n\n| benchmark | metric | median | runs |\n| --- | --- | ---: | ---: |\n", runsOf(res))
		for _, name := range order {
			units := make([]string, 0, len(res[name]))
			for u := range res[name] {
				units = append(units, u)
			}
			slices.Sort(units)
			for _, u := range units {
				vs := res[name][u]
				fmt.Fprintf(w, "| %s | %s | %.4g | %d |\n", strings.TrimPrefix(name, "Benchmark"), u, kit.Median(vs), len(vs))
				rep.Figures = append(rep.Figures, kit.Figure{Name: strings.TrimPrefix(name, "Benchmark") + " " + u, Value: kit.Median(vs), Unit: u})
			}
		}
		cycleGoals(res, rep)
		if rs, ok := res["BenchmarkRunSteps"]; ok {
			addGoal(rep, "RunSteps (in process) p50 ratio 10,000 / 10 steps", kit.Median(rs["ratio-p50"]), 1.2, "x")
			addGoal(rep, "RunSteps (in process) p99 ratio 10,000 / 10 steps", kit.Median(rs["ratio-p99"]), 1.2, "x")
		}
		if dir != "" {
			if err := rep.Write(dir); err != nil {
				return err
			}
		}
	}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return err
		}
		slices.Sort(files)
		fmt.Fprintf(w, "\n## Goals\n\n| program | goal | value | limit | |\n| --- | --- | ---: | ---: | --- |\n")
		met, missed := 0, 0
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			var r kit.Report
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			for _, g := range r.Goals {
				fmt.Fprintf(w, "| %s | %s | %.3g %s | %.3g | %s |\n", r.Program, g.Name, g.Value, g.Unit, g.Limit, kit.MetWord(g.Met))
				if g.Met {
					met++
				} else {
					missed++
				}
			}
		}
		fmt.Fprintf(w, "\n%d goals met, %d missed.\n", met, missed)
		if err := os.WriteFile(filepath.Join(dir, "summary.md"), []byte(md.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func runsOf(res map[string]map[string][]float64) string {
	for _, m := range res {
		if ns, ok := m["ns/op"]; ok {
			return fmt.Sprintf("%d runs", len(ns))
		}
	}
	return "the runs"
}

func addGoal(rep *kit.Report, name string, v, limit float64, unit string) {
	rep.Goals = append(rep.Goals, kit.Goal{Name: name, Value: v, Limit: limit, Unit: unit, Met: v <= limit})
}

// cycleGoals checks the approval cycle's goals, each against the raw
// one-row commit rate of the same database measured in the same run
// (raw-commits/cycle, see BenchmarkApprovalCycle): with one run in flight a
// cycle costs at most 22 raw commits and makes at most 9 commits; with 32
// or more in flight, at most 6.6 raw commits, and with 32, fewer commits
// than cycles; and a cycle takes under 2 ms of CPU with 32 or more in
// flight, where the syncs are shared.
func cycleGoals(res map[string]map[string][]float64, rep *kit.Report) {
	if floor, ok := res["BenchmarkCommitFloor"]; ok {
		if ae, ok := res["BenchmarkAppendEvent"]; ok {
			rep.Figures = append(rep.Figures, kit.Figure{Name: "AppendEvent time / CommitFloor time",
				Value: kit.Median(ae["ns/op"]) / kit.Median(floor["ns/op"]), Unit: "x"})
		}
	}
	for name, m := range res {
		short, ok := strings.CutPrefix(name, "BenchmarkApprovalCycle/")
		if !ok {
			continue
		}
		var inflight int
		if _, err := fmt.Sscanf(short[strings.Index(short, "inflight="):], "inflight=%d", &inflight); err != nil {
			continue
		}
		raw, commits, cpu := kit.Median(m["raw-commits/cycle"]), kit.Median(m["commits/cycle"]), kit.Median(m["cpu-ms/cycle"])
		switch {
		case inflight == 1:
			addGoal(rep, short+": raw commits per cycle", raw, 22, "raw commits")
			addGoal(rep, short+": commits per cycle", commits, 9, "commits")
		case inflight >= 32:
			addGoal(rep, short+": raw commits per cycle", raw, 6.6, "raw commits")
			addGoal(rep, short+": CPU per cycle", cpu, 2, "ms")
			if inflight == 32 {
				rep.Goals = append(rep.Goals, kit.Goal{Name: short + ": commits per cycle (under 1)", Value: commits, Limit: 1,
					Unit: "commits", Met: commits < 1})
			}
		}
	}
	slices.SortFunc(rep.Goals, func(a, b kit.Goal) int { return strings.Compare(a.Name, b.Name) })
}
