package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"countersign/app"
	"countersign/store"
)

// migrateCommand applies the pending migrations, which opening the database
// does, and says which schema version it is at.
func migrateCommand(ctx context.Context, cfg config, stdout io.Writer) error {
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database %s is at schema version %d\n", cfg.dbPath, v)
	return nil
}

// userCommand manages users from the command line.
func userCommand(ctx context.Context, cfg config, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: countersign user add NAME ROLE | user list | user disable NAME")
	}
	db, err := store.Open(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	switch args[0] {
	case "add":
		if len(args) != 3 {
			return errors.New("usage: countersign user add NAME ROLE (ROLE is admin, operator or viewer)")
		}
		password := getenv("COUNTERSIGN_PASSWORD")
		generated := password == ""
		if generated {
			if password, err = app.NewPassword(); err != nil {
				return err
			}
		}
		u, err := db.CreateUser(ctx, args[1], password, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %s (%s)\n", u.Name, u.Role)
		if generated {
			fmt.Fprintf(stdout, "password: %s\n", password)
		}
		return nil
	case "list":
		users, err := db.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tSTATUS")
		for _, u := range users {
			status := "active"
			if u.Disabled() {
				status = "disabled"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Role, u.CreatedAt.Format(time.DateOnly), status)
		}
		return tw.Flush()
	case "disable":
		if len(args) != 2 {
			return errors.New("usage: countersign user disable NAME")
		}
		u, err := db.UserByName(ctx, args[1])
		if err != nil {
			return fmt.Errorf("user %q: %w", args[1], err)
		}
		if err := db.DisableUser(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "disabled %s\n", u.Name)
		return nil
	default:
		return fmt.Errorf("unknown user command %q (try: add, list, disable)", strings.Join(args, " "))
	}
}
