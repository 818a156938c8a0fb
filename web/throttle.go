package web

import (
	"context"
	"math"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"countersign/store"
)

// SignInLimits throttles failed sign-ins. Each account name and each client
// address has a token bucket: a failure takes a token, a success takes none,
// and a sign-in is refused with 429 and Retry-After while either bucket is
// empty. The zero value takes the defaults below.
type SignInLimits struct {
	// AccountBurst failures in a row are allowed per account name (any case),
	// then one every AccountEvery. Defaults: 5, then 1 per 12 s. The right
	// password is refused too while the bucket is empty, so that a guesser
	// learns nothing; its owner waits at most AccountEvery for the next try.
	AccountBurst int
	AccountEvery time.Duration
	// AddrBurst failures in a row are allowed per client address (an IPv6
	// address counts by its /64), then one every AddrEvery. Defaults: 20,
	// then 1 per 3 s.
	AddrBurst int
	AddrEvery time.Duration
	// Tracked bounds the accounts, and separately the addresses, remembered
	// at once (default 10,000). A full bucket is forgotten first, as it is no
	// different from a new one.
	Tracked int
	// Concurrent bounds the password checks (bcrypt) running at once
	// (default runtime.NumCPU()). A sign-in that cannot start one within Wait
	// (default 2 s) is refused with 503 and Retry-After.
	Concurrent int
	Wait       time.Duration
}

// withDefaults fills the zero fields.
func (l SignInLimits) withDefaults() SignInLimits {
	if l.AccountBurst <= 0 {
		l.AccountBurst = 5
	}
	if l.AccountEvery <= 0 {
		l.AccountEvery = 12 * time.Second
	}
	if l.AddrBurst <= 0 {
		l.AddrBurst = 20
	}
	if l.AddrEvery <= 0 {
		l.AddrEvery = 3 * time.Second
	}
	if l.Tracked <= 0 {
		l.Tracked = 10_000
	}
	if l.Concurrent <= 0 {
		l.Concurrent = runtime.NumCPU()
	}
	if l.Wait <= 0 {
		l.Wait = 2 * time.Second
	}
	return l
}

// throttle is the sign-in throttle of SignInLimits.
type throttle struct {
	now      func() time.Time
	accounts *buckets
	addrs    *buckets
	slots    chan struct{}
	wait     time.Duration
}

func newThrottle(l SignInLimits, now func() time.Time) *throttle {
	l = l.withDefaults()
	return &throttle{
		now:      now,
		accounts: newBuckets(l.AccountBurst, l.AccountEvery, l.Tracked),
		addrs:    newBuckets(l.AddrBurst, l.AddrEvery, l.Tracked),
		slots:    make(chan struct{}, l.Concurrent),
		wait:     l.Wait,
	}
}

// attempt is a sign-in that the throttle let through; done settles it.
type attempt struct {
	t             *throttle
	account, addr string
}

// begin lets a sign-in by account from addr through, or returns how long to
// wait before the next try.
func (t *throttle) begin(account, addr string) (attempt, time.Duration) {
	a := attempt{t: t, account: accountKey(account), addr: addrKey(addr)}
	now := t.now()
	if wait := t.accounts.begin(a.account, now); wait > 0 {
		return attempt{}, wait
	}
	if wait := t.addrs.begin(a.addr, now); wait > 0 {
		t.accounts.end(a.account, now, false)
		return attempt{}, wait
	}
	return a, 0
}

// done settles the attempt: a failure takes a token from both buckets.
func (a attempt) done(failed bool) {
	now := a.t.now()
	a.t.accounts.end(a.account, now, failed)
	a.t.addrs.end(a.addr, now, failed)
}

// acquire takes one of the slots of password checking, waiting up to the
// configured time for one; release gives it back.
func (t *throttle) acquire(ctx context.Context) bool {
	select {
	case t.slots <- struct{}{}:
		return true
	default:
	}
	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	select {
	case t.slots <- struct{}{}:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (t *throttle) release() { <-t.slots }

// accountKey folds case, as names are unique regardless of case, and cuts a
// name too long to exist, so that a key is never large.
func accountKey(name string) string {
	name = strings.ToLower(name)
	if len(name) > store.MaxUserName {
		name = name[:store.MaxUserName+1]
	}
	return name
}

// addrKey keys an IPv6 address by its /64, the block one subscriber gets.
func addrKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		if len(ip) > 64 {
			ip = ip[:64]
		}
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// retryAfter is a wait in whole seconds, at least one, for Retry-After.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// buckets is a bounded set of token buckets by key.
type buckets struct {
	burst int
	every time.Duration
	max   int

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	lim *rate.Limiter
	// pending counts the attempts let through and not yet settled: they may
	// each take a token, so begin does not let more through than there are
	// tokens to take.
	pending int
}

func newBuckets(burst int, every time.Duration, maxKeys int) *buckets {
	return &buckets{burst: burst, every: every, max: maxKeys, m: map[string]*bucket{}}
}

// begin lets an attempt on key through if its bucket has a token to spare,
// else it returns how long until it has.
func (b *buckets) begin(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[key]
	if e == nil {
		if len(b.m) >= b.max {
			b.makeRoom(now)
		}
		e = &bucket{lim: rate.NewLimiter(rate.Every(b.every), b.burst)}
		b.m[key] = e
	}
	if spare := e.lim.TokensAt(now) - float64(e.pending); spare < 1 {
		return time.Duration((1 - spare) * float64(b.every))
	}
	e.pending++
	return 0
}

// end settles an attempt that begin let through.
func (b *buckets) end(key string, now time.Time, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.m[key]
	if e == nil {
		return
	}
	e.pending--
	if failed {
		e.lim.ReserveN(now, 1)
	}
}

// makeRoom forgets the full buckets; if that is not enough it forgets idle
// ones at random (map order) down to nine tenths of the bound, so that a
// spray of new keys costs one sweep per tenth of the bound. A forgotten
// bucket that was not full lets its key start afresh: the price of a bound,
// and the address buckets still hold.
func (b *buckets) makeRoom(now time.Time) {
	for k, e := range b.m {
		if e.pending == 0 && e.lim.TokensAt(now) >= float64(b.burst) {
			delete(b.m, k)
		}
	}
	for k, e := range b.m {
		if len(b.m) < b.max*9/10 {
			break
		}
		if e.pending == 0 {
			delete(b.m, k)
		}
	}
}
