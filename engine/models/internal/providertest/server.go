// Package providertest holds what the tests of the model providers share: a
// fake API server that answers from a script and keeps every request, two
// page tools (one needs approval), a recorder, helpers that drive the
// engine's loop, and the checks every provider must pass on its failures.
// A provider's own tests keep only its wire format: the bodies of its
// answers and requests, and its configuration.
//
// Only tests import it.
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Key is a distinctive API key that must never show in an error text or an
// event.
const Key = "sk-test-COUNTERSIGN-7f3a9c1e5b"

// Reply is one scripted answer of the fake server.
type Reply struct {
	// Status is the HTTP status; 200 when zero.
	Status int
	// Header holds headers to set; Content-Type is application/json unless
	// it says otherwise.
	Header map[string]string
	// Body is sent as it is.
	Body string
	// Hang holds the answer until the request is given up (or 5 s pass).
	Hang bool
}

// BadGateway is a proxy's error page: an error that is not the API's JSON.
var BadGateway = Reply{
	Status: http.StatusBadGateway,
	Header: map[string]string{"Content-Type": "text/html"},
	Body:   "<html><body><h1>502 Bad Gateway</h1></body></html>",
}

// Server is a fake API server that answers from a script and keeps every
// request it received. A request beyond the script fails the test.
type Server struct {
	t       *testing.T
	srv     *httptest.Server
	arrived chan struct{}

	mu       sync.Mutex
	replies  []Reply
	bodies   [][]byte
	headers  []http.Header
	paths    []string
	answered int
}

// NewServer starts a server that gives replies in order, one a request; the
// test's cleanup closes it.
func NewServer(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies, arrived: make(chan struct{}, 16)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	s.headers = append(s.headers, r.Header.Clone())
	s.paths = append(s.paths, r.Method+" "+r.URL.Path)
	var rep Reply
	if s.answered < len(s.replies) {
		rep = s.replies[s.answered]
	} else {
		s.t.Errorf("unexpected request %d: the script has %d replies", s.answered+1, len(s.replies))
		rep = Reply{Status: http.StatusTeapot, Body: `{"error":{"message":"script exhausted","type":"test"}}`}
	}
	s.answered++
	s.mu.Unlock()
	s.arrived <- struct{}{}

	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rep.Body)
}

// URL returns the server's root, such as http://127.0.0.1:41234.
func (s *Server) URL() string { return s.srv.URL }

// Close shuts the server down, so that it can no longer be reached.
func (s *Server) Close() { s.srv.Close() }

// Arrived receives a value as each request arrives, before it is answered.
func (s *Server) Arrived() <-chan struct{} { return s.arrived }

// Requests returns how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Body returns the body of request i (from 0), failing the test if it never
// arrived.
func (s *Server) Body(i int) []byte {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.bodies) {
		s.t.Fatalf("request %d never arrived (%d did)", i+1, len(s.bodies))
	}
	return s.bodies[i]
}

// Header returns the headers of request i.
func (s *Server) Header(i int) http.Header {
	s.Body(i)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i]
}

// Path returns the method and path of request i, such as
// "POST /v1/messages".
func (s *Server) Path(i int) string {
	s.Body(i)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[i]
}

// Field returns one top-level field of the body of request i.
func (s *Server) Field(i int, name string) json.RawMessage {
	s.t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s.Body(i), &m); err != nil {
		s.t.Fatalf("request %d is not a JSON object: %v", i+1, err)
	}
	return m[name]
}
