package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// addWebhookEndpoint registers an endpoint for every event through the
// webhooks page as the admin signed in on c, and returns its secret.
func addWebhookEndpoint(t *testing.T, c *http.Client, base, endpoint string) string {
	t.Helper()
	doc, _, _ := httpGet(t, c, base+"/webhooks")
	csrf := doc.Find(`[data-testid=add-webhook] input[name=_csrf]`).AttrOr("value", "")
	if csrf == "" {
		t.Fatal("the add-webhook form has no CSRF token")
	}
	doc, _, status := httpPost(t, c, base+"/webhooks", url.Values{"_csrf": {csrf}, "url": {endpoint},
		"events": {"run.waiting", "run.decided", "run.finished"}})
	secret := strings.TrimSpace(doc.Find(`[data-testid=webhook-secret]`).Text())
	if status != http.StatusCreated || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("add webhook %s: status %d, secret %q", endpoint, status, secret)
	}
	return secret
}
