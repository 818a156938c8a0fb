// Package migrations holds the numbered SQL migrations of the countersign
// database, embedded so that the binary carries its own schema. Each file is
// in goose format and is applied in order, in a transaction of its own, by
// package store. Files are append-only: a released migration is never edited.
package migrations

import "embed"

// FS holds every migration file at its root.
//
//go:embed *.sql
var FS embed.FS
