package access

import (
	"sync"
	"time"
)

// Throttle limits repeated login failures per account and per client IP:
// after MaxFailures failures within Window, further attempts are refused
// until the lock expires; each lock doubles, up to MaxLock. A success clears
// the account's (not the IP's) failures.
type Throttle struct {
	MaxFailuresAccount int
	MaxFailuresIP      int
	Window             time.Duration
	BaseLock           time.Duration
	MaxLock            time.Duration

	mu      sync.Mutex
	entries map[string]*throttleEntry
}

type throttleEntry struct {
	failures  []time.Time
	lockUntil time.Time
	locks     int
}

// NewThrottle returns the default policy: 5 failures per account or 20 per IP
// in 15 minutes lock for 30 s, doubling to at most 15 minutes.
func NewThrottle() *Throttle {
	return &Throttle{MaxFailuresAccount: 5, MaxFailuresIP: 20, Window: 15 * time.Minute,
		BaseLock: 30 * time.Second, MaxLock: 15 * time.Minute, entries: map[string]*throttleEntry{}}
}

func accountKey(email string) string { return "a:" + email }
func ipKey(ip string) string         { return "i:" + ip }

// Check returns how long the caller must wait before trying again (0: go).
func (t *Throttle) Check(email, ip string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, k := range []string{accountKey(email), ipKey(ip)} {
		if e := t.entries[k]; e != nil && now.Before(e.lockUntil) {
			wait = max(wait, e.lockUntil.Sub(now))
		}
	}
	return wait
}

// Fail records a failed attempt and returns the lock it caused (0: none).
func (t *Throttle) Fail(email, ip string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.entries) > 100_000 {
		t.gc(now)
	}
	var lock time.Duration
	for k, limit := range map[string]int{accountKey(email): t.MaxFailuresAccount, ipKey(ip): t.MaxFailuresIP} {
		e := t.entries[k]
		if e == nil {
			e = &throttleEntry{}
			t.entries[k] = e
		}
		e.failures = append(recent(e.failures, now.Add(-t.Window)), now)
		if len(e.failures) >= limit {
			d := t.BaseLock << min(e.locks, 16)
			if d > t.MaxLock || d <= 0 {
				d = t.MaxLock
			}
			e.locks++
			e.lockUntil = now.Add(d)
			e.failures = nil
			lock = max(lock, d)
		}
	}
	return lock
}

// Succeed clears the account's failures and locks.
func (t *Throttle) Succeed(email string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, accountKey(email))
}

func recent(ts []time.Time, since time.Time) []time.Time {
	out := ts[:0]
	for _, x := range ts {
		if x.After(since) {
			out = append(out, x)
		}
	}
	return out
}

func (t *Throttle) gc(now time.Time) {
	for k, e := range t.entries {
		if now.After(e.lockUntil) && len(recent(e.failures, now.Add(-t.Window))) == 0 {
			delete(t.entries, k)
		}
	}
}
