-- The tamper-evident audit record: each event of a run carries a SHA-256
-- hash chained to the previous event of the run (docs/AUDIT.md has the exact
-- recipe). The store computes the hashes in Go, in the transaction that
-- inserts the event; SQLite has no SHA-256 in SQL.

-- +goose Up
-- prev_hash is the hash of the previous event of the run (64 zeros for the
-- first event), hash the event's own, both lower-case hex. prev_hash repeats
-- what the previous row holds so that a verifier can check each event on
-- its own and then each link, and so tell an edited event from a deleted or
-- moved one. NULL: the event has not been chained yet.
ALTER TABLE agent_run_event ADD COLUMN prev_hash TEXT NULL;
ALTER TABLE agent_run_event ADD COLUMN hash TEXT NULL;

-- The events recorded before this migration are chained by store.Open, in
-- Go, run by run in batches; it deletes this marker when it has done so, so
-- an interrupted backfill resumes at the next start and a finished one costs
-- nothing afterwards.
INSERT INTO setting (key, value) VALUES ('audit_backfill', 'pending')
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;

-- +goose Down
DELETE FROM setting WHERE key = 'audit_backfill';
ALTER TABLE agent_run_event DROP COLUMN hash;
ALTER TABLE agent_run_event DROP COLUMN prev_hash;
