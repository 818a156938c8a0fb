package kit

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Client is a signed-in browser without JavaScript: a session cookie, the
// CSRF token of the session and a keep-alive connection pool sized for the
// load it will carry.
type Client struct {
	Base   string
	Cookie string
	CSRF   string
	HTTP   *http.Client
}

var reCSRF = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// NewClient returns an anonymous client of base that keeps up to conns idle
// connections, so that many pollers each keep theirs.
func NewClient(base string, conns int) *Client {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	return &Client{Base: base, HTTP: &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Login signs in as name.
func (c *Client) Login(name, password string) error {
	res, body, err := c.do(http.MethodGet, "/login", nil)
	if err != nil {
		return err
	}
	m := reCSRF.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("login page %d without a CSRF token", res.StatusCode)
	}
	c.keepCookies(res)
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {m[1]}}
	res, body, err = c.do(http.MethodPost, "/login", form)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("sign in as %s: %d %s", name, res.StatusCode, clip(body))
	}
	c.keepCookies(res)
	// The new session's CSRF token, for the forms that follow.
	res, body, err = c.do(http.MethodGet, "/runs/new", nil)
	if err != nil {
		return err
	}
	if m := reCSRF.FindStringSubmatch(body); m != nil {
		c.CSRF = m[1]
	} else {
		return fmt.Errorf("no CSRF token after sign-in: %d", res.StatusCode)
	}
	return nil
}

func (c *Client) keepCookies(res *http.Response) {
	if cs := res.Cookies(); len(cs) > 0 {
		var parts []string
		for _, ck := range cs {
			parts = append(parts, ck.Name+"="+ck.Value)
		}
		c.Cookie = strings.Join(parts, "; ")
	}
}

func (c *Client) do(method, path string, form url.Values) (*http.Response, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.Base+path, body)
	if err != nil {
		return nil, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.Cookie != "" {
		req.Header.Set("Cookie", c.Cookie)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, string(b), err
}

// Get fetches path and returns its status, body and latency (to the last
// byte of the body).
func (c *Client) Get(path string, htmx bool) (int, string, time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set("Cookie", c.Cookie)
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	start := time.Now()
	res, err := c.HTTP.Do(req)
	if err != nil {
		return 0, "", time.Since(start), err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(b), time.Since(start), err
}

// Post submits a form with the session's CSRF token and returns the status,
// the Location header and the latency.
func (c *Client) Post(path string, form url.Values) (int, string, time.Duration, error) {
	form.Set("_csrf", c.CSRF)
	start := time.Now()
	res, body, err := c.do(http.MethodPost, path, form)
	d := time.Since(start)
	if err != nil {
		return 0, "", d, err
	}
	if res.StatusCode >= 400 {
		return res.StatusCode, "", d, fmt.Errorf("POST %s: %d %s", path, res.StatusCode, clip(body))
	}
	return res.StatusCode, res.Header.Get("Location"), d, nil
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
