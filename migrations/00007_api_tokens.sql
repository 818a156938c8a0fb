-- API tokens: a user's bearer credentials for the JSON API.

-- +goose Up
-- A token is shown once when it is made; only the SHA-256 of its secret is
-- kept (the secret is 256 random bits, so a fast hash is enough: there is
-- nothing to guess). A token acts as its user with the user's current role,
-- and stops working when it is revoked or its user is disabled. Tokens are
-- revoked, never deleted, so the list says who had access and until when.
CREATE TABLE api_token (
    id           INTEGER PRIMARY KEY,
    user_id      INTEGER NOT NULL REFERENCES app_user (id),
    name         TEXT    NOT NULL,
    secret_hash  TEXT    NOT NULL UNIQUE,
    hint         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NULL,
    revoked_at   INTEGER NULL
);
CREATE INDEX api_token_user ON api_token (user_id, created_at);

-- +goose Down
DROP TABLE api_token;
