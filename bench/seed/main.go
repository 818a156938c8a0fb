// Command seed fills a new countersign database with ended runs, for trying
// the history and the purge at scale by hand:
//
//	go run ./bench/seed -db /tmp/runs.db -runs 1000000
//
// The runs are what kit.SeedHistory makes: six events each, 85% completed,
// 10% failed, 5% cancelled, by user00 … user19, over 90 days.
package main

import (
	"flag"
	"fmt"
	"os"

	"countersign/bench/internal/kit"
)

func main() {
	path := flag.String("db", "", "database file to create (must not exist)")
	n := flag.Int("runs", 1_000_000, "runs to insert")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "seed: -db is required")
		os.Exit(2)
	}
	if _, err := os.Stat(*path); err == nil {
		fmt.Fprintf(os.Stderr, "seed: %s exists\n", *path)
		os.Exit(2)
	}
	d, err := kit.SeedHistory(*path, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
	fi, _ := os.Stat(*path)
	fmt.Printf("seeded %d runs (%d events) into %s in %.1fs, %d MB\n", *n, 6**n, *path, d.Seconds(), fi.Size()>>20)
}
