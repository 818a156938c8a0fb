-- Webhooks: the endpoints an admin registers and the outbox of deliveries to
-- them. A delivery is written in the transaction that inserts the event that
-- causes it, so an event and its deliveries are committed together or not
-- at all; the deliverer sends from this table only, so what is owed survives
-- restarts.

-- +goose Up
-- An endpoint receives the event types listed in events, a JSON array of
-- strings ("run.waiting", "run.decided", "run.finished"). secret is the
-- Standard Webhooks signing secret ("whsec_" + base64); it is kept in clear
-- because every delivery is signed with it. A disabled endpoint gets no new
-- deliveries and its pending ones wait until it is enabled again.
CREATE TABLE webhook_endpoint (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    url         TEXT    NOT NULL,
    secret      TEXT    NOT NULL,
    events      TEXT    NOT NULL DEFAULT '[]',
    description TEXT    NOT NULL DEFAULT '',
    created_by  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER NULL
);

-- A delivery of one event to one endpoint. id is the stable message id
-- (webhook-id) receivers deduplicate by: "msg_<run id>_<seq>_<endpoint id>",
-- the same for every attempt. payload is the exact JSON body that is signed
-- and sent. attempts counts the attempts started; next_attempt_at is when a
-- pending delivery is due, and moves forward while an attempt holds it (its
-- lease). status is pending until a 2xx answer (delivered) or until the
-- retries run out (failed). Deliveries go with their run when it is purged.
CREATE TABLE webhook_delivery (
    id               TEXT    PRIMARY KEY,
    endpoint_id      INTEGER NOT NULL REFERENCES webhook_endpoint (id) ON DELETE CASCADE,
    event_type       TEXT    NOT NULL,
    run_id           TEXT    NOT NULL REFERENCES agent_run (id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,
    payload          TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'pending'
                         CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    delivered_at     INTEGER NULL
) WITHOUT ROWID;

-- The deliverer: pending deliveries by when they are due.
CREATE INDEX webhook_delivery_due ON webhook_delivery (next_attempt_at)
    WHERE status = 'pending';
-- The admin page: the most recent deliveries.
CREATE INDEX webhook_delivery_created ON webhook_delivery (created_at, id);
-- The cascades: a purged run's and a deleted endpoint's deliveries.
CREATE INDEX webhook_delivery_run ON webhook_delivery (run_id, seq);
CREATE INDEX webhook_delivery_endpoint ON webhook_delivery (endpoint_id);

-- +goose Down
DROP INDEX webhook_delivery_endpoint;
DROP INDEX webhook_delivery_run;
DROP INDEX webhook_delivery_created;
DROP INDEX webhook_delivery_due;
DROP TABLE webhook_delivery;
DROP TABLE webhook_endpoint;
