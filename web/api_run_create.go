package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"countersign/engine"
	"countersign/store"
)

// apiNewRun is the body of POST /api/v1/runs.
type apiNewRun struct {
	Agent  string `json:"agent"`
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
}

// headerIdempotencyKey makes a start of a run safe to retry.
const headerIdempotencyKey = "Idempotency-Key"

// maxIdempotencyKey bounds the length of an idempotency key.
const maxIdempotencyKey = 255

// keyWait bounds how long a request waits for another request with the
// same idempotency key to start its run, and keyPoll how often it looks.
const (
	keyWait = 10 * time.Second
	keyPoll = 100 * time.Millisecond
)

// apiRunCreate starts a run as the caller: 201 with the run. With an
// Idempotency-Key, the same key and body give the run of the first request
// (200, Idempotent-Replayed: true) and never start a second one, however
// many requests race; the same key with another body is a 422.
func (s *server) apiRunCreate(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	var req apiNewRun
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Agent) == "" {
		return badField(http.StatusUnprocessableEntity, "invalid-input", "agent", "Name the agent that runs the prompt.")
	}
	if req.Model == "" {
		req.Model = s.newRunView(req.Agent, "", "").Model
	}
	req.Prompt = strings.TrimSpace(req.Prompt)
	key := c.Request().Header.Get(headerIdempotencyKey)
	if key == "" {
		run, err := s.apiStart(ctx, req, u.Name)
		if err != nil {
			return err
		}
		return s.apiCreated(c, run)
	}
	if !validKey(key) {
		return badField(http.StatusUnprocessableEntity, "invalid-input", headerIdempotencyKey,
			"The Idempotency-Key must be 1 to 255 printable ASCII characters.")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	runID, err := s.reserveKey(ctx, u.ID, key, hex.EncodeToString(sum[:]))
	if err != nil {
		return err
	}
	if runID != "" {
		run, err := s.db.Run(ctx, runID)
		if err != nil {
			return err
		}
		c.Response().Header().Set("Idempotent-Replayed", "true")
		c.Response().Header().Set(echo.HeaderLocation, "/api/v1/runs/"+run.ID)
		return writeJSON(c, http.StatusOK, apiRunOf(run))
	}
	run, err := s.apiStart(ctx, req, u.Name)
	if err != nil {
		// Nothing was started: the key may be used again.
		if rerr := s.db.ReleaseIdempotencyKey(context.WithoutCancel(ctx), u.ID, key); rerr != nil {
			s.log.Error("release idempotency key", "user", u.Name, "err", rerr)
		}
		return err
	}
	if err := s.db.CompleteIdempotencyKey(context.WithoutCancel(ctx), u.ID, key, run.ID); err != nil {
		s.log.Error("complete idempotency key", "user", u.Name, "run", run.ID, "err", err)
	}
	return s.apiCreated(c, run)
}

// apiStart starts a run; a refusal names the field it is about.
func (s *server) apiStart(ctx context.Context, req apiNewRun, by string) (engine.Run, error) {
	run, err := s.rt.StartRun(ctx, engine.NewRun{Agent: req.Agent, Model: req.Model, Prompt: req.Prompt, InitiatedBy: by})
	switch {
	case errors.Is(err, engine.ErrUnknownAgent):
		return run, badField(http.StatusUnprocessableEntity, "invalid-input", "agent", "That agent is not configured on this server.")
	case errors.Is(err, engine.ErrUnknownModel):
		return run, badField(http.StatusUnprocessableEntity, "invalid-input", "model", "That model is not configured on this server.")
	case err != nil:
		return run, err
	}
	s.log.Info("run started", "run", run.ID, "agent", req.Agent, "model", req.Model, "by", by, "from", "api")
	return run, nil
}

// apiCreated answers a started run with 201 and where it is.
func (s *server) apiCreated(c echo.Context, run engine.Run) error {
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/runs/"+run.ID)
	return writeJSON(c, http.StatusCreated, apiRunOf(run))
}

// reserveKey reserves an idempotency key, or returns the run it already
// names. While another request with the same key and body is starting its
// run, it waits for that run, for at most keyWait.
func (s *server) reserveKey(ctx context.Context, userID int64, key, hash string) (string, error) {
	deadline := time.Now().Add(keyWait)
	for {
		runID, err := s.db.ReserveIdempotencyKey(ctx, userID, key, hash, s.now())
		switch {
		case errors.Is(err, store.ErrKeyReused):
			return "", &apiError{status: http.StatusUnprocessableEntity, kind: "idempotency-key-reused", title: "Key already used",
				message: "The Idempotency-Key " + key + " was already used with another body. Use a new key for a new request.",
				fields:  []fieldError{{Field: headerIdempotencyKey, Message: "already used with another body"}}, key: key}
		case errors.Is(err, store.ErrKeyInFlight) && time.Now().Before(deadline):
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(keyPoll):
			}
			continue
		case errors.Is(err, store.ErrKeyInFlight):
			return "", &apiError{status: http.StatusConflict, kind: "idempotency-key-in-flight", title: "Request in progress",
				message: "A request with the Idempotency-Key " + key + " is still starting its run. Try again in a moment.", key: key}
		}
		return runID, err
	}
}

// validKey reports whether an idempotency key is 1 to 255 printable ASCII
// characters.
func validKey(key string) bool {
	if len(key) == 0 || len(key) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}
