package providertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"countersign/engine"
	"countersign/engine/models/internal/apierror"
)

// Provider is what the shared checks need of a provider's tests.
type Provider struct {
	// Name opens the text of every error of the provider, as in "openai: ".
	Name string
	// Model is the model name of the test configuration.
	Model string
	// New returns a model served by srv with the test configuration (Key as
	// the API key, Model as the model name) and s's settings.
	New func(t *testing.T, srv *Server, s Settings) engine.Model
}

// Settings are the fields of the same names in a provider's Config.
type Settings struct {
	MaxRetries int
	Timeout    time.Duration
}

// defaults are the settings of a check that tries neither retries nor
// timeouts: no retry, so that a failure shows at once, and a timeout no
// answer of the fake server comes near.
var defaults = Settings{MaxRetries: -1, Timeout: 5 * time.Second}

// AsError fails unless err is an *apierror.Error of kind, with p's name
// opening its text, and returns it. It checks as well that no error of the
// chain has the API key in its text.
func AsError(t *testing.T, p Provider, err error, kind apierror.Kind) *apierror.Error {
	t.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %T: %v", err, err)
	}
	if e.Kind != kind {
		t.Errorf("kind %q, want %q (%v)", e.Kind, kind, err)
	}
	if !strings.HasPrefix(e.Error(), p.Name+": ") {
		t.Errorf("error %q does not open with %q", e, p.Name+": ")
	}
	for x := err; x != nil; x = errors.Unwrap(x) {
		if strings.Contains(x.Error(), Key) {
			t.Errorf("the text of %T in the chain contains the API key: %v", x, x)
		}
	}
	return e
}

// HTTPError is a case of HTTPErrors.
type HTTPError struct {
	// Name names the subtest.
	Name string
	// Reply is the server's only answer.
	Reply Reply
	// Kind and Status are those of the error the run must end with.
	Kind   apierror.Kind
	Status int
	// Says are the texts the error must contain.
	Says []string
}

// HTTPErrors checks that each case's answer ends the run with a model error
// of its kind and status, whose text says what to check, without the API
// key in the error or in any event, even where the server echoes it, after
// one request.
func HTTPErrors(t *testing.T, p Provider, cases []HTTPError) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := NewServer(t, tt.Reply)
			rec := &Events{}
			_, err := NewLoop(p.New(t, srv, defaults), &Journal{}, rec).Run(context.Background(), engine.Request{Prompt: "Count pricing."})
			var runErr *engine.RunError
			if !errors.As(err, &runErr) || runErr.Termination != engine.TermModelError {
				t.Fatalf("want a *engine.RunError ending in %s, got %v", engine.TermModelError, err)
			}
			t.Log(err)
			e := AsError(t, p, err, tt.Kind)
			if e.StatusCode != tt.Status || e.Model != p.Model {
				t.Errorf("status %d, model %q", e.StatusCode, e.Model)
			}
			for _, s := range tt.Says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(rec.Text(), Key) {
				t.Errorf("an event contains the API key:\n%s", rec.Text())
			}
			if n := srv.Requests(); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// RateLimitedThenSuccess checks that a 429 is retried after the Retry-After
// the server asks for, and the run goes on. limited is a 429 that asks for
// no wait; answer is a final answer "Hello.".
func RateLimitedThenSuccess(t *testing.T, p Provider, limited, answer Reply) {
	srv := NewServer(t, limited, answer)
	res, err := NewLoop(p.New(t, srv, Settings{MaxRetries: 2, Timeout: defaults.Timeout}), &Journal{}, nil).Run(context.Background(), engine.Request{Prompt: "Hi"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Answer != "Hello." {
		t.Errorf("answer %q", res.Answer)
	}
	if n := srv.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// RateLimitedForever checks that a 429 that persists is retried MaxRetries
// times, then reported. limited is a 429 that asks for no wait.
func RateLimitedForever(t *testing.T, p Provider, limited Reply) {
	srv := NewServer(t, limited, limited, limited)
	start := time.Now()
	_, err := p.New(t, srv, Settings{MaxRetries: 2, Timeout: defaults.Timeout}).Generate(context.Background(), Hello())
	e := AsError(t, p, err, apierror.KindRateLimited)
	if e.StatusCode != 429 || !strings.Contains(err.Error(), "rate limited (HTTP 429)") {
		t.Errorf("error %v", err)
	}
	if n := srv.Requests(); n != 3 {
		t.Errorf("%d requests, want 3 (one and two retries)", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// RateLimitedTooLong checks that a server that asks to wait longer than
// the provider's MaxRetryDelay gets no retry. limited is a 429 that asks
// for an hour's wait.
func RateLimitedTooLong(t *testing.T, p Provider, limited Reply) {
	srv := NewServer(t, limited)
	start := time.Now()
	_, err := p.New(t, srv, Settings{MaxRetries: 2, Timeout: defaults.Timeout}).Generate(context.Background(), Hello())
	AsError(t, p, err, apierror.KindRateLimited)
	if n := srv.Requests(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// Timeout checks that a request whose attempt gets no answer within the
// timeout is a timeout that wraps context.DeadlineExceeded.
func Timeout(t *testing.T, p Provider) {
	srv := NewServer(t, Reply{Hang: true})
	start := time.Now()
	_, err := p.New(t, srv, Settings{MaxRetries: defaults.MaxRetries, Timeout: 100 * time.Millisecond}).Generate(context.Background(), Hello())
	e := AsError(t, p, err, apierror.KindTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) is false: %v", err)
	}
	if !strings.Contains(e.Error(), "timed out: no answer within 100ms") {
		t.Errorf("error %q", e)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// Cancelled checks that cancelling the context gives up the request at
// once; the error wraps context.Canceled, and the loop ends the run as
// cancelled.
func Cancelled(t *testing.T, p Provider) {
	srv := NewServer(t, Reply{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-srv.Arrived()
		cancel()
	}()
	start := time.Now()
	_, err := NewLoop(p.New(t, srv, defaults), &Journal{}, nil).Run(ctx, engine.Request{Prompt: "Hi"})
	var runErr *engine.RunError
	if !errors.As(err, &runErr) || runErr.Termination != engine.TermCancelled {
		t.Fatalf("want a run cancelled, got %v", err)
	}
	AsError(t, p, err, apierror.KindCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) is false: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// CancelledBefore checks that a context cancelled before the call sends
// nothing.
func CancelledBefore(t *testing.T, p Provider) {
	srv := NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.New(t, srv, defaults).Generate(ctx, Hello())
	AsError(t, p, err, apierror.KindCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) is false: %v", err)
	}
	if n := srv.Requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// ConnectionRefused checks that a server that cannot be reached is a
// connection error.
func ConnectionRefused(t *testing.T, p Provider) {
	srv := NewServer(t)
	srv.Close()
	_, err := p.New(t, srv, defaults).Generate(context.Background(), Hello())
	e := AsError(t, p, err, apierror.KindConnection)
	if !strings.Contains(e.Error(), "cannot reach the server") {
		t.Errorf("error %q", e)
	}
}

// GarbledResponse checks that a success whose body is not JSON is an
// unusable response.
func GarbledResponse(t *testing.T, p Provider) {
	srv := NewServer(t, Reply{Body: "<html>maintenance</html>"})
	_, err := p.New(t, srv, defaults).Generate(context.Background(), Hello())
	t.Log(err)
	AsError(t, p, err, apierror.KindBadResponse)
}

// BadToolSchema checks that a tool schema that is not JSON is refused
// before anything is sent.
func BadToolSchema(t *testing.T, p Provider) {
	srv := NewServer(t)
	req := Hello()
	req.Tools = []engine.ToolSpec{{Name: "broken", Parameters: []byte("{not json")}}
	_, err := p.New(t, srv, defaults).Generate(context.Background(), req)
	AsError(t, p, err, apierror.KindBadRequest)
	if n := srv.Requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}
