package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"countersign/store"
)

func TestTokensPage(t *testing.T) {
	a := newTestApp(t, withoutWorkers())
	vera, otto, ada := a.as(veraName), a.as(olgaName), a.as(adminName)
	ctx := context.Background()

	// A viewer makes a token: the answer shows the secret, once.
	mustStatus(t, vera.get("/tokens"), http.StatusOK)
	res := vera.submit("/tokens", url.Values{"name": {"laptop script"}})
	mustStatus(t, res, http.StatusCreated)
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q; want no-store on a page with a secret", cc)
	}
	secret, _ := res.doc.Find(testid("token-secret")).Attr("value")
	u, err := a.db.UserByToken(ctx, secret)
	if err != nil || u.Name != veraName {
		t.Fatalf("the shown secret %q acts as %+v, %v; want vera", secret, u, err)
	}
	list := vera.get("/tokens")
	if strings.Contains(list.body, secret) || list.doc.Find(testid("token-secret")).Length() != 0 {
		t.Fatal("the token list shows the secret again")
	}
	if got := text(list.doc, testid("token-name")); got != "laptop script" {
		t.Errorf("listed token = %q", got)
	}
	if got := text(list.doc, testid("token-last-used")); got == "never" {
		t.Errorf("last used = %q after the token was used", got)
	}

	// A bad name is refused with the reason and makes nothing.
	res = vera.submit("/tokens", url.Values{"name": {"  "}})
	mustReadableError(t, res, http.StatusUnprocessableEntity)
	if toks, _ := a.db.Tokens(ctx, 0); len(toks) != 1 {
		t.Fatalf("tokens after a refused one: %d; want 1", len(toks))
	}
	// No CSRF token, no token.
	mustStatus(t, vera.post("/tokens", url.Values{"name": {"x"}}), http.StatusForbidden)

	// Others see only their own; another user's token cannot be revoked.
	toks, _ := a.db.Tokens(ctx, 0)
	id := toks[0].ID
	if n := otto.get("/tokens").doc.Find(testid("token-row")).Length(); n != 0 {
		t.Errorf("otto sees %d tokens of vera", n)
	}
	mustReadableError(t, otto.submit(tokenRevokeURL(id), nil), http.StatusNotFound)
	if _, err := a.db.UserByToken(ctx, secret); err != nil {
		t.Fatalf("token after otto's refused revoke: %v", err)
	}

	// An admin sees everyone's and revokes it; twice is a conflict.
	page := ada.get("/tokens")
	if got := text(page.doc, testid("token-user")); got != veraName {
		t.Errorf("admin list user column = %q; want vera", got)
	}
	mustRedirect(t, ada.submit(tokenRevokeURL(id), nil), "/tokens")
	if _, err := a.db.UserByToken(ctx, secret); !errors.Is(err, store.ErrBadToken) {
		t.Fatalf("revoked token still works: %v", err)
	}
	mustReadableError(t, ada.submit(tokenRevokeURL(id), nil), http.StatusConflict)
	if got := text(ada.get("/tokens").doc, testid("token-state")); !strings.HasPrefix(got, "revoked") {
		t.Errorf("state = %q; want revoked", got)
	}
	mustReadableError(t, ada.submit("/tokens/nope/revoke", nil), http.StatusNotFound)

	// Signed out, the page asks to sign in.
	res = a.newClient().get("/tokens")
	mustStatus(t, res, http.StatusSeeOther)
}

func tokenRevokeURL(id int64) string { return "/tokens/" + strconv.FormatInt(id, 10) + "/revoke" }
