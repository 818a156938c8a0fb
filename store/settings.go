package store

import (
	"context"
	"errors"
	"fmt"
)

// Setting returns the value of key, or ErrNotFound.
func (db *DB) Setting(ctx context.Context, key string) (string, error) {
	const q = `SELECT value FROM setting WHERE key = ?`
	var v string
	if err := db.db.GetContext(ctx, &v, q, key); err != nil {
		return "", fmt.Errorf("setting %s: %w", key, notFound(err))
	}
	return v, nil
}

// SetSetting stores value under key, replacing any value.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	const q = `INSERT INTO setting (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	err := db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, q, key, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("set setting %s: %w", key, err)
	}
	return nil
}

// EnsureSetting returns the value of key, storing one made by gen when there
// is none. Of concurrent callers, the first to store wins and all return its
// value; gen may run and be discarded.
func (db *DB) EnsureSetting(ctx context.Context, key string, gen func() (string, error)) (string, error) {
	if v, err := db.Setting(ctx, key); err == nil {
		return v, nil
	} else if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	v, err := gen()
	if err != nil {
		return "", fmt.Errorf("ensure setting %s: %w", key, err)
	}
	const insert = `INSERT INTO setting (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`
	const get = `SELECT value FROM setting WHERE key = ?`
	var stored string
	err = db.inTx(ctx, func(ctx context.Context, tx writeTx) error {
		if _, err := tx.ExecContext(ctx, insert, key, v); err != nil {
			return err
		}
		return tx.GetContext(ctx, &stored, get, key)
	})
	if err != nil {
		return "", fmt.Errorf("ensure setting %s: %w", key, err)
	}
	return stored, nil
}
