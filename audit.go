package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"countersign/store"
)

// auditUsage is the usage of the audit command.
const auditUsage = "usage: countersign audit verify [RUN] | audit export RUN"

// auditCommand verifies or exports the audit record of runs. verify fails
// (a non-zero exit status) when a record is not intact.
func auditCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "verify" && len(args) > 2 || args[0] == "export" && len(args) != 2 {
		return errors.New(auditUsage)
	}
	if args[0] != "verify" && args[0] != "export" {
		return fmt.Errorf("unknown audit command %q (try: verify, export)", args[0])
	}
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	switch {
	case args[0] == "export":
		return db.ExportAudit(ctx, args[1], stdout)
	case len(args) == 2:
		return verifyOne(ctx, db, args[1], stdout)
	}
	return verifyAll(ctx, db, stdout)
}

// verifyOne prints the audit report of one run: its head when intact, each
// problem otherwise.
func verifyOne(ctx context.Context, db *store.DB, id string, stdout io.Writer) error {
	rep, err := db.VerifyRun(ctx, id)
	if err != nil {
		return err
	}
	if rep.Intact {
		fmt.Fprintf(stdout, "%s intact: %d events, chain head %s\n", rep.RunID, rep.Events, rep.Head)
		return nil
	}
	fmt.Fprintf(stdout, "%s altered: %d events, %s\n", rep.RunID, rep.Events, problemCount(len(rep.Problems)))
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "  %s: %s\n", p.Short(), p.Detail)
	}
	return fmt.Errorf("the audit record of run %s is altered", rep.RunID)
}

// verifyAll verifies every run, printing one line per run that is not
// intact and a summary.
func verifyAll(ctx context.Context, db *store.DB, stdout io.Writer) error {
	var runs, altered int
	err := db.VerifyAll(ctx, func(rep store.AuditReport) error {
		runs++
		if rep.Intact {
			return nil
		}
		altered++
		shorts := make([]string, len(rep.Problems))
		for i, p := range rep.Problems {
			shorts[i] = p.Short()
		}
		_, err := fmt.Fprintf(stdout, "%s altered: %s\n", rep.RunID, strings.Join(shorts, ", "))
		return err
	})
	if err != nil {
		return err
	}
	noun := "runs"
	if runs == 1 {
		noun = "run"
	}
	fmt.Fprintf(stdout, "verified %d %s: %d intact, %d altered\n", runs, noun, runs-altered, altered)
	if altered > 0 {
		return fmt.Errorf("the audit record of %d of %d runs is altered", altered, runs)
	}
	return nil
}

// problemCount says how many problems there are.
func problemCount(n int) string {
	if n == 1 {
		return "1 problem"
	}
	return fmt.Sprintf("%d problems", n)
}
