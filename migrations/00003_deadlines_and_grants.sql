-- Approval deadlines and standing grants.

-- +goose Up
-- When the waiting turn of a run expires without a decision (unix ms);
-- NULL when it waits for ever or does not wait.
ALTER TABLE agent_run ADD COLUMN deadline_at INTEGER NULL;
-- The reaper: waiting runs by deadline.
CREATE INDEX agent_run_deadline ON agent_run (deadline_at)
    WHERE status = 'waiting_for_approval' AND deadline_at IS NOT NULL;

-- A standing grant: calls of tool by agent (in run_id when scope is 'run')
-- run without a person until expires_at, unless revoked. Grants are audit
-- records: they are revoked, never deleted.
CREATE TABLE approval_grant (
    id          INTEGER PRIMARY KEY,
    agent       TEXT    NOT NULL,
    run_id      TEXT    NOT NULL DEFAULT '',
    tool        TEXT    NOT NULL,
    scope       TEXT    NOT NULL CHECK (scope IN ('run', 'agent')),
    granted_by  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER NULL,
    revoked_by  TEXT    NOT NULL DEFAULT '',
    CHECK ((scope = 'run') = (run_id <> ''))
);
-- The policy's lookup of an active grant, and the admin list.
CREATE INDEX approval_grant_lookup ON approval_grant (agent, tool, expires_at)
    WHERE revoked_at IS NULL;

-- +goose Down
DROP INDEX approval_grant_lookup;
DROP TABLE approval_grant;
DROP INDEX agent_run_deadline;
ALTER TABLE agent_run DROP COLUMN deadline_at;
