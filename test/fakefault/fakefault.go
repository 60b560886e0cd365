// Package fakefault is the fault injection the provider fakes share: a
// delay before every answer, and the next requests failing with a status
// (a 429 with its Retry-After).
package fakefault

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Faults are a fake's injected faults; the zero value injects none and
// gives injected 429s "Retry-After: 1". Safe for concurrent use.
type Faults struct {
	mu         sync.Mutex
	latency    time.Duration
	failN      int
	failStatus int
	retryAfter *string
}

// SetLatency delays every answer by d. A request cancelled while it waits
// gets no answer.
func (f *Faults) SetLatency(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency = d
}

// FailNext makes the next n requests fail with HTTP status; a 429 carries
// Retry-After (SetRetryAfter, "1" by default).
func (f *Faults) FailNext(n, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failN, f.failStatus = n, status
}

// SetRetryAfter sets the Retry-After of injected 429s ("" for none).
func (f *Faults) SetRetryAfter(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retryAfter = &v
}

// Fault is what one request meets.
type Fault struct {
	Latency time.Duration
	// Status is the injected failure's HTTP status; 0 for none.
	Status     int
	RetryAfter string
}

// Take consumes one request's faults.
func (f *Faults) Take() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := Fault{Latency: f.latency, RetryAfter: "1"}
	if f.retryAfter != nil {
		ft.RetryAfter = *f.retryAfter
	}
	if f.failN > 0 {
		f.failN--
		ft.Status = f.failStatus
	}
	return ft
}

// Wait waits out the latency; false when r's client left first.
func (ft Fault) Wait(r *http.Request) bool {
	if ft.Latency <= 0 {
		return true
	}
	t := time.NewTimer(ft.Latency)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}

// Fail answers the injected failure, if any, through writeError (the
// fake's own error body); true when it did.
func (ft Fault) Fail(w http.ResponseWriter, writeError func(w http.ResponseWriter, status int, msg string)) bool {
	if ft.Status == 0 {
		return false
	}
	if ft.Status == http.StatusTooManyRequests && ft.RetryAfter != "" {
		w.Header().Set("Retry-After", ft.RetryAfter)
	}
	writeError(w, ft.Status, "injected failure "+strconv.Itoa(ft.Status))
	return true
}
