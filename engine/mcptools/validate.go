package mcptools

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Validate reports what is wrong with the config: it needs a name, exactly
// one of Command and URL, and valid previews.
func (c ServerConfig) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("the server has no name"))
	}
	switch {
	case c.Command == "" && c.URL == "":
		errs = append(errs, errors.New("set either command (stdio) or url (Streamable HTTP)"))
	case c.Command != "" && c.URL != "":
		errs = append(errs, errors.New("set command or url, not both"))
	case c.URL != "":
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url %q is not an http or https URL", c.URL))
		}
	}
	for name, p := range c.Previews {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("preview of %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Validate reports whether the spec sets exactly one way to preview.
func (p PreviewSpec) Validate() error {
	switch {
	case p.DryRun == "" && p.DiffAgainst == "":
		return errors.New("set dry_run or diff_against")
	case p.DryRun != "" && p.DiffAgainst != "":
		return errors.New("set dry_run or diff_against, not both")
	}
	return nil
}

// pathArg and contentArg return the argument names of a DiffAgainst spec.
func (p PreviewSpec) pathArg() string    { return or(p.PathArg, "path") }
func (p PreviewSpec) contentArg() string { return or(p.ContentArg, "content") }

// describe returns the transport and the target of the config, for people.
func (c ServerConfig) describe() (transport, target string) {
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err == nil {
			u.RawQuery, u.Fragment, u.User = "", "", nil
			return "http", u.String()
		}
		return "http", c.URL
	}
	return "stdio", strings.TrimSpace(c.Command + " " + strings.Join(c.Args, " "))
}

func (c ServerConfig) connectTimeout() time.Duration {
	return orDur(c.ConnectTimeout, DefaultConnectTimeout)
}
func (c ServerConfig) callTimeout() time.Duration { return orDur(c.CallTimeout, DefaultCallTimeout) }
func (c ServerConfig) minBackoff() time.Duration  { return orDur(c.MinBackoff, DefaultMinBackoff) }
func (c ServerConfig) maxBackoff() time.Duration {
	return max(orDur(c.MaxBackoff, DefaultMaxBackoff), c.minBackoff())
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
