package access

import "time"

// LoginThrottle is the rule of repeated login failures. Failures are
// counted per account and client address together (ThrottleKey): the
// first Free failures cost nothing; after that each failure makes the next
// attempt from that address for that account wait Base, doubling with
// every further failure up to Max. A wait is not a lock: the right
// password from another address signs in at once, and an attempt made
// while waiting is refused without being counted. A success clears the
// pair's count; so does Quiet without failures.
//
// There is no ceiling per address alone: behind a proxy or a NAT one
// address is many people, and a ceiling on it would let one of them lock
// out the others.
type LoginThrottle struct {
	Free  int
	Base  time.Duration
	Max   time.Duration
	Quiet time.Duration
}

// DefaultLoginThrottle is the service's rule: 5 free failures, then 1 s,
// 2 s, 4 s ... up to 15 min; forgotten after an hour without failures.
func DefaultLoginThrottle() LoginThrottle {
	return LoginThrottle{Free: 5, Base: time.Second, Max: 15 * time.Minute, Quiet: time.Hour}
}

// LoginFailures is what is kept of one pair's failures: how many, and when
// the last one happened.
type LoginFailures struct {
	Count int
	Last  time.Time
}

// Delay is the wait that count failures impose after the last one.
func (p LoginThrottle) Delay(count int) time.Duration {
	if count < p.Free || count <= 0 {
		return 0
	}
	d := p.Base << min(count-p.Free, 32)
	if d > p.Max || d <= 0 {
		d = p.Max
	}
	return d
}

// Wait is how long an attempt at now must still wait after f (0: go).
func (p LoginThrottle) Wait(f LoginFailures, now time.Time) time.Duration {
	if f.Count == 0 || p.Forgotten(f, now) {
		return 0
	}
	until := f.Last.Add(p.Delay(f.Count))
	if !now.Before(until) {
		return 0
	}
	return until.Sub(now)
}

// Forgotten reports whether f is old enough to start counting again.
func (p LoginThrottle) Forgotten(f LoginFailures, now time.Time) bool {
	return !f.Last.After(p.ForgetBefore(now))
}

// ForgetBefore is the time before which a last failure no longer counts:
// a store that counts a new failure starts over from 1 when the pair's
// last failure is not after it.
func (p LoginThrottle) ForgetBefore(now time.Time) time.Time { return now.Add(-p.Quiet) }

// ThrottleKey names the pair of an account (email, as typed, normalised)
// and a client address; it is a hash, so that stores keep neither.
func ThrottleKey(email, clientIP string) string {
	return HashKey("login\x00" + email + "\x00" + clientIP)
}
