package mcptools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer serves a read tool over Streamable HTTP to requests that
// carry the token.
func httpServer(t *testing.T, token string) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: object(), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("token " + req.Extra.Header.Get("Authorization")), nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "missing or wrong token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// startHTTP starts a Server of the URL with that Authorization header.
func startHTTP(t *testing.T, url, auth string) *Server {
	s := New(ServerConfig{Agent: "tester", Name: "remote", URL: url + "/mcp?tenant=a",
		Headers: map[string]string{"Authorization": auth}, MinBackoff: time.Hour, MaxBackoff: time.Hour},
		Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = s.Close() })
	s.Start(context.Background())
	return s
}

func TestStreamableHTTPSendsHeaders(t *testing.T) {
	ts := httpServer(t, "s3cret")
	s := startHTTP(t, ts.URL, "Bearer s3cret")
	st := s.Status()
	if st.State != StateUp || st.Transport != "http" || st.Target != ts.URL+"/mcp" {
		t.Fatalf("status %+v", st)
	}
	out, err := toolNamed(t, s, "whoami").Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || out != "token Bearer s3cret" {
		t.Fatalf("whoami = %q, %v", out, err)
	}
}

func TestStreamableHTTPWrongHeaderIsDown(t *testing.T) {
	ts := httpServer(t, "s3cret")
	s := startHTTP(t, ts.URL, "Bearer guess")
	st := s.Status()
	if st.State != StateDown || s.Tools() != nil {
		t.Fatalf("status with a wrong token: %+v", st)
	}
	if !strings.Contains(st.Err, "Unauthorized") && !strings.Contains(st.Err, "401") {
		t.Fatalf("Err %q does not say the server refused us", st.Err)
	}
}
