package webhook

import "time"

// Retry is the schedule of a delivery that failed: the wait before attempt
// n+1 after n failed attempts doubles from Base up to Max, and a delivery
// that failed MaxAttempts times is given up.
type Retry struct {
	Base        time.Duration
	Max         time.Duration
	MaxAttempts int
}

// DefaultRetry waits 10 s, 20 s, 40 s … up to an hour between attempts and
// gives up after 20 attempts, about 16 hours after the first.
var DefaultRetry = Retry{Base: 10 * time.Second, Max: time.Hour, MaxAttempts: 20}

// Next says when a delivery that has now failed attempts times is tried
// again, or that it is given up (ok false).
func (r Retry) Next(attempts int, now time.Time) (at time.Time, ok bool) {
	if attempts >= r.MaxAttempts {
		return time.Time{}, false
	}
	return now.Add(r.Wait(attempts)), true
}

// Wait is the wait after attempts failed attempts (at least one).
func (r Retry) Wait(attempts int) time.Duration {
	d := r.Base
	for i := 1; i < attempts && d < r.Max; i++ {
		d *= 2
	}
	if d > r.Max {
		d = r.Max
	}
	return d
}

// Debounce is a link's notification timing: a notification goes out once
// no delta arrived for Quiet, and no later than Cap after the first delta
// not yet notified, however steady the stream (notify_debounce_s and
// max_threshold_timeout_s).
type Debounce struct {
	Quiet time.Duration
	Cap   time.Duration
}

// DebounceOf is the Debounce of a registration's settings in seconds.
func DebounceOf(debounceS, capS int) Debounce {
	return Debounce{Quiet: time.Duration(debounceS) * time.Second, Cap: time.Duration(capS) * time.Second}
}

// At is when the notification of the deltas first..last (their arrival
// times) is due.
func (d Debounce) At(first, last time.Time) time.Time {
	at := last.Add(d.Quiet)
	if d.Cap > 0 {
		if c := first.Add(d.Cap); c.Before(at) {
			at = c
		}
	}
	return at
}
