package engine_test

import (
	"database/sql"

	_ "github.com/mattn/go-sqlite3" // the driver the store uses
)

// sqlOpen opens the database file directly, to damage it on purpose.
func sqlOpen(path string) (*sql.DB, error) {
	return sql.Open("sqlite3", path+"?_busy_timeout=5000")
}
