package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"countersign/store"
)

// tokenUsage lists the token subcommands.
const tokenUsage = "usage: countersign token create USER NAME | token list [USER] | token revoke ID"

// tokenCommand creates, lists and revokes API tokens from the command line,
// where the operator of the server acts as an admin.
func tokenCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(tokenUsage)
	}
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "create":
		if len(args) != 3 {
			return errors.New("usage: countersign token create USER NAME")
		}
		u, err := db.UserByName(ctx, args[1])
		if err != nil {
			return fmt.Errorf("user %s: %w", args[1], err)
		}
		t, secret, err := db.CreateToken(ctx, u.ID, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created token %d %q for %s (%s); it is shown only now:\n%s\n", t.ID, t.Name, u.Name, u.Role, secret)
		return nil
	case "list":
		if len(args) > 2 {
			return errors.New("usage: countersign token list [USER]")
		}
		var owner int64
		if len(args) == 2 {
			u, err := db.UserByName(ctx, args[1])
			if err != nil {
				return fmt.Errorf("user %s: %w", args[1], err)
			}
			owner = u.ID
		}
		tokens, err := db.Tokens(ctx, owner)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tUSER\tNAME\tSTARTS WITH\tCREATED\tLAST USED\tSTATE")
		for _, t := range tokens {
			state := "active"
			if t.Revoked() {
				state = "revoked " + t.RevokedAt.Format(time.DateTime)
			}
			used := "never"
			if !t.LastUsedAt.IsZero() {
				used = t.LastUsedAt.Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s…\t%s\t%s\t%s\n", t.ID, t.UserName, t.Name, t.Hint,
				t.CreatedAt.Format(time.DateTime), used, state)
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 2 {
			return errors.New("usage: countersign token revoke ID")
		}
		id, err := strconv.ParseInt(strings.TrimSpace(args[1]), 10, 64)
		if err != nil {
			return fmt.Errorf("token id %q is not a number", args[1])
		}
		if err := db.RevokeToken(ctx, id, 0); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked token %d\n", id)
		return nil
	default:
		return fmt.Errorf("unknown token command %q; %s", args[0], tokenUsage)
	}
}
