package web_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzAPIDecision posts random bodies and content types as an operator's
// decision on a waiting run: every answer is a 4xx problem and nothing
// changes in the database. Bodies that carry the turn's real digest are
// left out: one of them could be a valid decision.
func FuzzAPIDecision(f *testing.F) {
	a := newTestApp(f)
	run := a.waitingRun("editor", publishAbout, olgaName)
	token := a.api(oscarName).token
	before := snapshot(f, a, run.ID)

	f.Add(`{"digest":"deadbeef","verdict":"approve"}`, "application/json")
	f.Add(`{"digest":"x","calls":[{"id":"call_1_1","verdict":"edit","arguments":[1]}]}`, "application/json")
	f.Add(`{"digest":"x","calls":[{"id":"call_1_1","verdict":"answer","answer":"\u0000"}]}`, "application/json")
	f.Add(`{"digest":1}`, "application/json")
	f.Add(`{"digest":"x","calls":{}}`, "application/merge-patch+json")
	f.Add(`[]`, "application/json")
	f.Add(`null`, "application/json")
	f.Add("{\"digest\":\"\xff\xfe\"}", "application/json")
	f.Add(`{"digest":"x"`, "application/json")
	f.Add(`digest=x&verdict=approve`, "application/x-www-form-urlencoded")
	f.Add(`{"digest":"x","verdict":"approve","reason":"`+strings.Repeat("é", 3000)+`"}`, "application/json")
	f.Add(strings.Repeat("[", 70_000), "application/json")
	f.Fuzz(func(t *testing.T, body, contentType string) {
		if strings.Contains(body, run.PendingDigest) || strings.ContainsFunc(contentType, func(r rune) bool {
			return r < 0x20 || r == 0x7f || r > 0x7e
		}) {
			return // a possible decision, or a header no client can send
		}
		req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/api/v1/runs/"+run.ID+"/decision", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		checkRefused(t, "POST decision", res.StatusCode, string(got))
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || !bytes.Contains(got, []byte(`"status":`)) {
			t.Fatalf("answer %q: %s", ct, got)
		}
		if after := snapshot(t, a, run.ID); after != before {
			t.Fatalf("bad input changed the database: %+v -> %+v", before, after)
		}
	})
}
