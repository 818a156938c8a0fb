package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// sampleState returns a real suspended state produced by the loop: one
// earlier read-only turn, then a turn with a read and a write.
func sampleState(t testing.TB) *SuspendedState {
	t.Helper()
	model := &scriptModel{responses: []ModelResponse{
		calls(call("r1", "get", `{"slug":"a"}`)),
		calls(call("r2", "get", `{}`), call("w1", "put", `{"slug":"a","body":"new"}`)),
	}}
	loop := &Loop{Model: model, Tools: []Tool{newRead("get"), newWrite("put")}, Instructions: "be careful"}
	_, err := loop.Run(context.Background(), Request{Prompt: "update a"})
	var are *ApprovalRequiredError
	if !errors.As(err, &are) {
		t.Fatalf("want suspension, got %v", err)
	}
	return are.State
}

func TestStateRoundTrip(t *testing.T) {
	st := sampleState(t)
	b, err := EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := EncodeState(got)
	if string(b) != string(b2) {
		t.Fatalf("round trip changed the state\n%s\n%s", b, b2)
	}
	if got.Digest() != st.Digest() {
		t.Fatal("digest changed across a round trip")
	}
	// A decoded state resumes like the original.
	model := &scriptModel{responses: []ModelResponse{answer("ok")}}
	loop := &Loop{Model: model, Tools: []Tool{newRead("get"), newWrite("put")}}
	res, err := loop.Resume(context.Background(), got, approve(got, "ann"))
	if err != nil || res.Answer != "ok" || res.Iterations != 3 {
		t.Fatalf("resume of decoded state: %+v, %v", res, err)
	}
}

func TestDecodeStateRejects(t *testing.T) {
	st := sampleState(t)
	good, _ := EncodeState(st)
	mutate := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	transcript := func(m map[string]any) []any { return m["transcript"].([]any) }
	cases := map[string][]byte{
		"empty":             nil,
		"truncated":         good[:len(good)/2],
		"not json":          []byte("hello"),
		"array":             []byte("[]"),
		"null":              []byte("null"),
		"no version":        mutate(func(m map[string]any) { delete(m, "version") }),
		"unknown version":   mutate(func(m map[string]any) { m["version"] = 2 }),
		"version as string": mutate(func(m map[string]any) { m["version"] = "1" }),
		"unknown field":     mutate(func(m map[string]any) { m["extra"] = true }),
		"trailing data":     append(append([]byte{}, good...), []byte(` {}`)...),
		"no pending":        mutate(func(m map[string]any) { m["pending"] = []any{} }),
		"pending tampered": mutate(func(m map[string]any) {
			m["pending"].([]any)[1].(map[string]any)["arguments"] = `{"slug":"b"}`
		}),
		"pending reordered": mutate(func(m map[string]any) {
			p := m["pending"].([]any)
			p[0], p[1] = p[1], p[0]
		}),
		"transcript not ending with the turn": mutate(func(m map[string]any) {
			tr := transcript(m)
			m["transcript"] = tr[:len(tr)-1]
		}),
		"empty transcript": mutate(func(m map[string]any) { m["transcript"] = []any{} }),
		"unknown role": mutate(func(m map[string]any) {
			transcript(m)[0].(map[string]any)["role"] = "root"
		}),
		"result for unknown call": mutate(func(m map[string]any) {
			for _, msg := range transcript(m) {
				if mm := msg.(map[string]any); mm["role"] == "tool" {
					mm["tool_call_id"] = "ghost"
				}
			}
		}),
		"no user prompt": mutate(func(m map[string]any) {
			tr := transcript(m)
			m["transcript"] = append([]any{tr[0], tr[1]}, tr[3:]...)
		}),
		"negative tokens": mutate(func(m map[string]any) {
			m["usage"].(map[string]any)["total_tokens"] = -1
		}),
		"iterations below turns": mutate(func(m map[string]any) { m["iterations"] = 1 }),
		"preview of unknown call": mutate(func(m map[string]any) {
			m["previews"].([]any)[0].(map[string]any)["call_id"] = "ghost"
		}),
		"huge": []byte(`{"version":1,"transcript":"` + strings.Repeat("a", maxStateBytes) + `"}`),
	}
	for name, blob := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := DecodeState(blob)
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("err = %v, state = %+v", err, s)
			}
		})
	}
}

func TestTurnDigest(t *testing.T) {
	a := []ToolCall{call("1", "put", `{"a": 1, "b": [1, 2]}`)}
	compact := []ToolCall{call("1", "put", `{"a":1,"b":[1,2]}`)}
	if TurnDigest(a) != TurnDigest(compact) {
		t.Fatal("whitespace in arguments changed the digest")
	}
	others := [][]ToolCall{
		{call("2", "put", `{"a":1,"b":[1,2]}`)},
		{call("1", "del", `{"a":1,"b":[1,2]}`)},
		{call("1", "put", `{"a":2,"b":[1,2]}`)},
		{call("1", "put", `{"a":1,"b":[1,2]}`), call("2", "put", `{}`)},
		nil,
	}
	seen := map[string]bool{TurnDigest(a): true}
	for _, o := range others {
		d := TurnDigest(o)
		if seen[d] {
			t.Fatalf("digest collision for %+v", o)
		}
		seen[d] = true
		if len(d) != 64 {
			t.Fatalf("digest %q is not hex sha256", d)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	st := sampleState(f)
	good, _ := EncodeState(st)
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"transcript":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","name":"t","arguments":"{}"}]}],"pending":[{"id":"a","name":"t","arguments":"{}"}],"iterations":1,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0},"offered_tools":["t"],"previews":null}`))
	f.Add([]byte(`{"version":99}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptState) {
				t.Fatalf("error %v does not wrap ErrCorruptState", err)
			}
			return
		}
		// Whatever decodes must validate, re-encode and decode to the same turn.
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded state does not validate: %v", err)
		}
		again, err := EncodeState(s)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		s2, err := DecodeState(again)
		if err != nil {
			t.Fatalf("decode of re-encoded state: %v", err)
		}
		if s2.Digest() != s.Digest() {
			t.Fatal("digest changed across a round trip")
		}
	})
}

// TestDecodeStateNamesTheVersion checks that a blob of another version says
// so, even when it also has fields this build does not know: the version is
// the reason, not the first unknown field.
func TestDecodeStateNamesTheVersion(t *testing.T) {
	good, err := EncodeState(sampleState(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	m["version"], m["checkpoints"] = 2, []any{}
	v2, _ := json.Marshal(m)
	delete(m, "version")
	none, _ := json.Marshal(m)
	for blob, want := range map[string]string{string(v2): "unknown version 2", string(none): "no version"} {
		_, err := DecodeState([]byte(blob))
		if !errors.Is(err, ErrCorruptState) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	st, err := DecodeState(good)
	if err != nil || st.Version != StateVersion {
		t.Fatalf("good state: %+v, %v", st, err)
	}
}
