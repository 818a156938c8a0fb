-- Sessions live in signed cookies; a user's session epoch lets the server end
-- them all at once (sign-out, disabling the user): a cookie carries the epoch
-- it was issued under and is refused once the user's epoch has moved on.

-- +goose Up
ALTER TABLE app_user ADD COLUMN session_epoch INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE app_user DROP COLUMN session_epoch;
