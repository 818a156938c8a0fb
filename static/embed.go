// Package static embeds the stylesheet, the small script, the site icon and
// the vendored htmx, and serves them at content-hashed URLs that can be
// cached forever.
package static

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// files holds the assets. vendor/ always has its README, so the pattern
// matches on a fresh clone before htmx has been copied in.
//
//go:embed app.css app.js favicon.svg vendor
var files embed.FS

// hashLen is how many hex digits of the SHA-256 go into a URL.
const hashLen = 8

// cacheControl lets browsers keep an asset for a year: a changed file gets a
// new URL.
const cacheControl = "public, max-age=31536000, immutable"

// Assets serves a fixed set of files under /static/ at names that carry a
// hash of their content, e.g. /static/app.3f2a9c1b.css.
type Assets struct {
	urls   map[string]string // plain name -> URL
	hashed map[string]*asset // hashed name -> asset
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// New returns the embedded assets.
func New() (*Assets, error) {
	return NewFS(files)
}

// NewFS returns the assets of fsys, every regular file except READMEs, named
// by their slash-separated path.
func NewFS(fsys fs.FS) (*Assets, error) {
	a := &Assets{urls: map[string]string{}, hashed: map[string]*asset{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path.Base(name) == "README.md" {
			return nil
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:])[:hashLen]
		hn := hashedName(name, hash)
		ct := mime.TypeByExtension(path.Ext(name))
		if ct == "" {
			ct = http.DetectContentType(body)
		}
		a.urls[name] = "/static/" + hn
		a.hashed[hn] = &asset{body: body, contentType: ct, etag: `"` + hash + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("static: load assets: %w", err)
	}
	return a, nil
}

// hashedName puts the hash before the last extension: vendor/htmx.min.js
// becomes vendor/htmx.min.<hash>.js.
func hashedName(name, hash string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "." + hash + ext
}

// URL returns the URL of the named file, e.g. URL("app.css") is
// "/static/app.3f2a9c1b.css". It returns "" for a name it does not hold,
// which the layout reads as "not available" (htmx before npm has run).
func (a *Assets) URL(name string) string {
	return a.urls[name]
}

// Has reports whether the named file is there.
func (a *Assets) Has(name string) bool {
	_, ok := a.urls[name]
	return ok
}

// ServeHTTP serves a file by its hashed name, with a year-long immutable
// cache. The path may keep its /static/ prefix or have it stripped. Unknown
// names, plain names and stale hashes are 404.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	name = strings.TrimPrefix(name, "/")
	f, ok := a.hashed[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", cacheControl)
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}
