-- +goose Up
-- All times are INTEGER unix milliseconds, UTC.

-- A durable run. id is a ULID, so ids sort by creation time. last_seq is the
-- seq of the run's last event: appending an event is a conditional UPDATE
-- that increments it and returns the new value, so seqs are contiguous from 1.
CREATE TABLE agent_run (
    id                 TEXT    PRIMARY KEY,
    agent              TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    prompt             TEXT    NOT NULL,
    status             TEXT    NOT NULL CHECK (status IN (
                           'queued', 'running', 'waiting_for_approval',
                           'completed', 'failed', 'cancelled')),
    initiated_by       TEXT    NOT NULL DEFAULT '',
    iterations         INTEGER NOT NULL DEFAULT 0,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    total_tokens       INTEGER NOT NULL DEFAULT 0,
    termination_reason TEXT    NOT NULL DEFAULT '',
    error              TEXT    NOT NULL DEFAULT '',
    suspended_state    BLOB    NULL,
    pending_digest     TEXT    NOT NULL DEFAULT '',
    claimed_by         TEXT    NOT NULL DEFAULT '',
    lease_expires_at   INTEGER NULL,
    attempts           INTEGER NOT NULL DEFAULT 0,
    cancel_requested   INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
    last_seq           INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    started_at         INTEGER NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER NULL
);

-- The history list: newest first, filtered, keyset-paginated on (created_at, id).
CREATE INDEX agent_run_status_created ON agent_run (status, created_at, id);
CREATE INDEX agent_run_initiated_by_created ON agent_run (initiated_by, created_at, id);
CREATE INDEX agent_run_agent_created ON agent_run (agent, created_at, id);
CREATE INDEX agent_run_created ON agent_run (created_at, id);
-- The approval inbox.
CREATE INDEX agent_run_waiting ON agent_run (created_at, id)
    WHERE status = 'waiting_for_approval';
-- The reaper: running runs whose lease expired.
CREATE INDEX agent_run_lease ON agent_run (lease_expires_at)
    WHERE status = 'running';
-- Retention: terminal runs by when they ended.
CREATE INDEX agent_run_finished ON agent_run (finished_at)
    WHERE finished_at IS NOT NULL;

-- The event stream of a run, its audit record. payload is the JSON of an
-- engine.Event; kind repeats its kind for queries.
CREATE TABLE agent_run_event (
    run_id     TEXT    NOT NULL REFERENCES agent_run (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- People who sign in. Names are unique regardless of case.
CREATE TABLE app_user (
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'operator', 'viewer')),
    created_at    INTEGER NOT NULL,
    disabled_at   INTEGER NULL
);

-- The demo workspace the built-in tools read and write.
CREATE TABLE page (
    slug       TEXT    PRIMARY KEY,
    title      TEXT    NOT NULL,
    body       TEXT    NOT NULL DEFAULT '',
    status     TEXT    NOT NULL CHECK (status IN ('draft', 'published')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- An audit of the workspace: every write call appends one row in the same
-- transaction as the write, so tests can count how often a side effect ran.
CREATE TABLE page_revision (
    id     INTEGER PRIMARY KEY,
    slug   TEXT    NOT NULL,
    action TEXT    NOT NULL CHECK (action IN ('create', 'update', 'publish', 'delete')),
    title  TEXT    NOT NULL,
    body   TEXT    NOT NULL,
    at     INTEGER NOT NULL
);
CREATE INDEX page_revision_slug ON page_revision (slug, id);

-- Key/value settings, such as the generated session key.
CREATE TABLE setting (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- +goose Down
DROP TABLE setting;
DROP INDEX page_revision_slug;
DROP TABLE page_revision;
DROP TABLE page;
DROP TABLE app_user;
DROP TABLE agent_run_event;
DROP TABLE agent_run;
