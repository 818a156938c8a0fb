package web

import (
	"context"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 16, 21, 0, 0, time.UTC)

// TestBucketsBounded: a spray of new names never grows the set past its
// bound, and the full buckets go first, so an emptied one is kept.
func TestBucketsBounded(t *testing.T) {
	b := newBuckets(5, 12*time.Second, 10)
	for range 5 {
		if wait := b.begin("victim", t0); wait != 0 {
			t.Fatalf("victim throttled early: %s", wait)
		}
		b.end("victim", t0, true)
	}
	for i := range 9 {
		k := "ok-" + strconv.Itoa(i)
		b.begin(k, t0)
		b.end(k, t0, false)
	}
	if len(b.m) != 10 {
		t.Fatalf("%d keys, want 10", len(b.m))
	}
	b.begin("new", t0)
	b.end("new", t0, true)
	if wait := b.begin("victim", t0); wait != 12*time.Second {
		t.Errorf("victim's wait %s after eviction, want 12s: its bucket was forgotten", wait)
	}

	for i := range 10_000 {
		k := "spray-" + strconv.Itoa(i)
		if wait := b.begin(k, t0); wait == 0 {
			b.end(k, t0, true)
		}
		if len(b.m) > 10 {
			t.Fatalf("%d keys after %d new names, want at most 10", len(b.m), i+1)
		}
	}
}

// TestBucketsPending: attempts in flight hold the tokens they may take, so
// concurrent guesses cannot outrun the bucket; a success gives its token back.
func TestBucketsPending(t *testing.T) {
	b := newBuckets(2, 10*time.Second, 10)
	for i := range 2 {
		if b.begin("k", t0) != 0 {
			t.Fatalf("attempt %d was refused", i+1)
		}
	}
	if wait := b.begin("k", t0); wait != 10*time.Second {
		t.Errorf("third attempt in flight: wait %s, want 10s", wait)
	}
	b.end("k", t0, false)
	if b.begin("k", t0) != 0 {
		t.Error("a success kept its token")
	}
	b.end("k", t0, true)
	b.end("k", t0, true)
	if wait := b.begin("k", t0.Add(4*time.Second)); retryAfter(wait) != 6 {
		t.Errorf("after two failures and 4 s: wait %s, want 6s", wait)
	}
	if wait := b.begin("k", t0.Add(10*time.Second)); wait != 0 {
		t.Errorf("after 10 s: wait %s, want none", wait)
	}
}

// TestThrottleSlots: no more password checks run at once than the bound; a
// sign-in that cannot get a slot in time is refused.
func TestThrottleSlots(t *testing.T) {
	th := newThrottle(SignInLimits{Concurrent: 2, Wait: time.Millisecond}, func() time.Time { return t0 })
	ctx := context.Background()
	for i := range 2 {
		if !th.acquire(ctx) {
			t.Fatalf("check %d got no slot", i+1)
		}
	}
	if th.acquire(ctx) {
		t.Fatal("a third check got a slot while two run")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if th.acquire(cancelled) {
		t.Fatal("a cancelled sign-in got a slot")
	}
	th.release()
	if !th.acquire(ctx) {
		t.Error("no slot after one was released")
	}
}

// TestThrottleKeys: account names fold case and are cut short; IPv6
// addresses count by their /64.
func TestThrottleKeys(t *testing.T) {
	if accountKey("Olga") != accountKey("olga") {
		t.Error("names of another case are other accounts")
	}
	if long := accountKey(string(make([]byte, 1<<16))); len(long) > 65 {
		t.Errorf("key of %d bytes", len(long))
	}
	if addrKey("2001:db8:1:2:3:4:5:6") != addrKey("2001:db8:1:2:ffff::1") {
		t.Error("one /64 counts as two addresses")
	}
	if addrKey("2001:db8:1:2::1") == addrKey("2001:db8:1:3::1") {
		t.Error("two /64s count as one")
	}
	if addrKey("::ffff:192.0.2.1") != addrKey("192.0.2.1") || addrKey("192.0.2.1") == addrKey("192.0.2.2") {
		t.Error("IPv4 addresses are not keyed one by one")
	}
}
