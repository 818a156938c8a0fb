-- The tally of a run (engine.Tally): the calls that did not simply run as
-- the model asked, and who decided its turns, kept on the run row so that
-- the history can show and filter outcomes without reading events. The store
-- adds each event's share in the transaction that inserts the event.

-- +goose Up
-- Calls a person denied, and repeats of a denied call the loop refused.
ALTER TABLE agent_run ADD COLUMN denied_calls INTEGER NOT NULL DEFAULT 0;
-- Calls of tools that require approval which ran and failed.
ALTER TABLE agent_run ADD COLUMN failed_writes INTEGER NOT NULL DEFAULT 0;
-- Calls answered as expired: no decision before the turn's deadline.
ALTER TABLE agent_run ADD COLUMN expired_calls INTEGER NOT NULL DEFAULT 0;
-- Calls that needed approval and ran without a person (a rule or a grant).
ALTER TABLE agent_run ADD COLUMN waived_calls INTEGER NOT NULL DEFAULT 0;
-- The people who decided the run's turns, each once, in the order of their
-- first decision: a JSON array of strings, '[]' for none. JSON keeps any
-- user name intact (commas, quotes, spaces); read it with json_each.
ALTER TABLE agent_run ADD COLUMN decided_by TEXT NOT NULL DEFAULT '[]';

-- Backfill from the events, counting exactly what engine.Tally.Count counts.
-- A JSON true reads as 1 through json_extract; an omitted field as NULL.
UPDATE agent_run SET
    denied_calls = t.denied, failed_writes = t.failed, expired_calls = t.expired, waived_calls = t.waived
FROM (
    SELECT run_id,
        sum(CASE WHEN kind = 'tool_finished'
            AND json_extract(payload, '$.outcome') IN ('denied', 'repeat_denied') THEN 1 ELSE 0 END) AS denied,
        sum(CASE WHEN kind = 'tool_finished'
            AND json_extract(payload, '$.outcome') = 'expired' THEN 1 ELSE 0 END) AS expired,
        sum(CASE WHEN kind = 'tool_finished'
            AND json_extract(payload, '$.write') = 1
            AND json_extract(payload, '$.is_error') = 1
            AND coalesce(json_extract(payload, '$.outcome'), '') IN ('', 'tool_error') THEN 1 ELSE 0 END) AS failed,
        sum(CASE WHEN kind = 'tool_started'
            AND coalesce(json_extract(payload, '$.waived_by'), '') <> '' THEN 1 ELSE 0 END) AS waived
    FROM agent_run_event
    WHERE kind IN ('tool_started', 'tool_finished')
    GROUP BY run_id
) AS t
WHERE agent_run.id = t.run_id;

-- Deciders: distinct names (compared exactly, as Go compares strings) in the
-- order of each one's first decision; an expiry is nobody's decision.
UPDATE agent_run SET decided_by = d.names
FROM (
    SELECT run_id, json_group_array(who ORDER BY first) AS names
    FROM (
        SELECT run_id, json_extract(payload, '$.by') AS who, min(seq) AS first
        FROM agent_run_event
        WHERE kind = 'decision'
            AND coalesce(json_extract(payload, '$.by'), '') <> ''
            AND coalesce(json_extract(payload, '$.decision'), '') <> 'expire'
        GROUP BY run_id, who
    )
    GROUP BY run_id
) AS d
WHERE agent_run.id = d.run_id;

-- The history's outcome filters: the rare outcomes each get a partial index
-- in the history's order, so a filtered page reads only matching runs.
CREATE INDEX agent_run_denied_created ON agent_run (created_at, id) WHERE denied_calls > 0;
CREATE INDEX agent_run_failed_writes_created ON agent_run (created_at, id) WHERE failed_writes > 0;
CREATE INDEX agent_run_expired_created ON agent_run (created_at, id) WHERE expired_calls > 0;
CREATE INDEX agent_run_waived_created ON agent_run (created_at, id) WHERE waived_calls > 0;
CREATE INDEX agent_run_interrupted_created ON agent_run (created_at, id)
    WHERE termination_reason = 'interrupted_during_write';

-- +goose Down
DROP INDEX agent_run_interrupted_created;
DROP INDEX agent_run_waived_created;
DROP INDEX agent_run_expired_created;
DROP INDEX agent_run_failed_writes_created;
DROP INDEX agent_run_denied_created;
ALTER TABLE agent_run DROP COLUMN decided_by;
ALTER TABLE agent_run DROP COLUMN waived_calls;
ALTER TABLE agent_run DROP COLUMN expired_calls;
ALTER TABLE agent_run DROP COLUMN failed_writes;
ALTER TABLE agent_run DROP COLUMN denied_calls;
