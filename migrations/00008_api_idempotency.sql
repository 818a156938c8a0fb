-- Idempotency keys of the JSON API: a client that retries "start a run"
-- with the same Idempotency-Key gets the run of its first request.

-- +goose Up
-- A key is reserved (run_id NULL) before the run is started, so of two
-- concurrent requests with one key exactly one starts a run; the other
-- waits for the first to finish. request_hash is the SHA-256 of the
-- request's body as decoded, so the same key with another body is refused.
-- Keys are kept for 24 hours from their first use and purged after.
CREATE TABLE api_idempotency (
    user_id      INTEGER NOT NULL REFERENCES app_user (id),
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    run_id       TEXT    NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, key)
);
CREATE INDEX api_idempotency_created ON api_idempotency (created_at);

-- +goose Down
DROP TABLE api_idempotency;
