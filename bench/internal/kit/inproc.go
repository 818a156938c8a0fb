package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"countersign/app"
	"countersign/engine"
	"countersign/store"
)

// InProc is the app built by app.New as `countersign serve` builds it
// (store, demo workspace, runtime with the demo model and four workers, web
// app), served on loopback inside the load program, so that a CPU profile
// of the server side can be taken. The figures of the reports come from the
// real binary; this is for finding what costs.
type InProc struct {
	URL      string
	Password string // of InProcUser
	DB       *store.DB
	RT       *engine.Runtime
	app      *app.App
	srv      *http.Server
	prof     *os.File
}

// InProcUser is the admin an in-process server signs in; its password is
// InProc.Password.
const InProcUser = "bench-admin"

// benchSessionKey signs the session cookies of the in-process apps.
const benchSessionKey = "bench-session-key-0123456789abcdef0123456789"

// StartInProc serves the database at path on a free loopback port. When
// cpuprofile is not empty, a CPU profile is written there until Stop.
func StartInProc(path, cpuprofile string) (*InProc, error) {
	ctx := context.Background()
	a, err := app.New(ctx, app.Config{DBPath: path, Workers: 4, SessionKey: []byte(benchSessionKey),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	p := &InProc{DB: a.DB, RT: a.Runtime, app: a, Password: "bench-admin-password"}
	if _, err := a.DB.UserByName(ctx, InProcUser); errors.Is(err, store.ErrNotFound) {
		if _, err := a.DB.CreateUser(ctx, InProcUser, p.Password, store.RoleAdmin); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: a.Handler, ReadHeaderTimeout: 10 * time.Second}
	if cpuprofile != "" {
		if p.prof, err = os.Create(cpuprofile); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(p.prof); err != nil {
			return nil, err
		}
	}
	a.Start()
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "in-process server:", err)
		}
	}()
	return p, nil
}

// App returns the web app over db, built by app.New as `countersign serve`
// builds it, and its runtime (demo model, four workers), not started. The
// caller closes the runtime and db.
func App(db *store.DB) (http.Handler, *engine.Runtime, error) {
	a, err := app.New(context.Background(), app.Config{DB: db, Workers: 4, SessionKey: []byte(benchSessionKey),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, err
	}
	return a.Handler, a.Runtime, nil
}

// SignIn signs in to h as name, in process, and returns the Cookie header
// of the session.
func SignIn(h http.Handler, name, password string) (string, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/login", nil))
	m := reCSRF.FindStringSubmatch(rec.Body.String())
	if m == nil {
		return "", fmt.Errorf("no CSRF token on the sign-in page: %d", rec.Code)
	}
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {m[1]}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookieHeader(rec.Result()))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		return "", fmt.Errorf("sign in as %s: %d", name, rec.Code)
	}
	return cookieHeader(rec.Result()), nil
}

func cookieHeader(res *http.Response) string {
	var parts []string
	for _, c := range res.Cookies() {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// Stop shuts down in reverse order and ends the profile.
func (p *InProc) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	p.app.Close()
	if p.prof != nil {
		pprof.StopCPUProfile()
		p.prof.Close()
	}
}

// Target is a server under load: the real binary or, for profiling, the
// same app in process.
type Target interface {
	URL() string
	// User and Password sign in as an admin.
	User() string
	Password() string
	// CPUTime and RSS are those of the server process; zero in process.
	CPUTime() time.Duration
	// PID is the server's process id; zero in process.
	PID() int
	RSS() (rss, peak int64, err error)
	Stop()
}

// Serve starts the real binary on the database at path with the
// COUNTERSIGN_* settings of env or, when cpuprofile is not empty, the app
// in process with a CPU profile written there.
func Serve(bin, path, cpuprofile string, env map[string]string) (Target, error) {
	if cpuprofile != "" {
		fmt.Println("  (profiling: serving in process, figures are not kept)")
		p, err := StartInProc(path, cpuprofile)
		if err != nil {
			return nil, err
		}
		return inProcTarget{p}, nil
	}
	s, err := StartServer(bin, path, env, nil)
	if err != nil {
		return nil, err
	}
	return binTarget{s}, nil
}

type binTarget struct{ *Server }

func (t binTarget) URL() string      { return t.Server.URL }
func (t binTarget) User() string     { return "admin" }
func (t binTarget) Password() string { return t.Server.Password }

type inProcTarget struct{ *InProc }

func (t inProcTarget) URL() string                { return t.InProc.URL }
func (t inProcTarget) User() string               { return InProcUser }
func (t inProcTarget) Password() string           { return t.InProc.Password }
func (t inProcTarget) CPUTime() time.Duration     { return 0 }
func (t inProcTarget) PID() int                   { return 0 }
func (t inProcTarget) RSS() (int64, int64, error) { return 0, 0, nil }
