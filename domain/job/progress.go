package job

import (
	"slices"
	"sync"
)

// WireType is the job type as the reference product names it in events'
// job_type (single_enrichment, batch_enrichment, fusion, ...).
func (t Type) WireType() string {
	if t == TypeEnrichment {
		return "single_enrichment"
	}
	return string(t)
}

// Tracker follows one run of a job through its events and stamps each with
// the reference product's common block: job_type, status, is_paused, the
// model counters, the current attempt and the batch counters. A payload's
// own fields win over the block's. It is safe for concurrent use (a run
// publishes from many goroutines).
type Tracker struct {
	mu        sync.Mutex
	jobType   Type
	total     int
	completed int
	running   []string
	// snapshot is running as the last stamped events carry it (shared by
	// their Common, never changed; nil when running changed since).
	snapshot  []string
	current   string
	attempt   int
	max       int
	lastError string
	status    State
	// The batch counters (batch jobs only; totalEntities < 0 until known).
	totalEntities                int
	doneEntities, failedEntities int
	skippedEntities              int
}

// NewTracker starts following a job of type t.
func NewTracker(t Type) *Tracker { return &Tracker{jobType: t, status: Running, totalEntities: -1} }

// SetTotalModels says how many models the job runs.
func (t *Tracker) SetTotalModels(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total = n
}

// Observe moves the counters by one event (as published, or as read back
// from the log).
func (t *Tracker) Observe(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(e.Payload)
}

// observe takes in an event of payload p.
func (t *Tracker) observe(p Payload) {
	p = Inner(p)
	if p == nil {
		return // a type this version does not know
	}
	t.status = StatusOf(p)
	switch x := p.(type) {
	case ModelStarted:
		t.started(x.Model)
	case SchemaModelStarted:
		t.started(x.Model)
	case Attempt:
		t.attempt, t.max, t.lastError = x.Attempt, x.MaxAttempts, ""
		if x.Attempt > 1 {
			t.lastError = x.Reason // a first attempt has no reason
		}
		if x.Model != "" {
			t.current = x.Model
		}
	case BatchStarted:
		t.totalEntities = x.Total
	case EntityCompleted:
		if x.Success {
			t.doneEntities++
		} else {
			t.failedEntities++
		}
	case EntitySkipped:
		t.skippedEntities++
	case ModelCompleted:
		t.finished(x.Model)
	case SamplesCompleted:
		t.finished(x.Model)
	}
}

func (t *Tracker) started(m string) {
	if !slices.Contains(t.running, m) {
		t.running, t.snapshot = append(t.running, m), nil
	}
	t.current = m
}

func (t *Tracker) finished(m string) {
	t.completed++
	t.running, t.snapshot = slices.DeleteFunc(t.running, func(r string) bool { return r == m }), nil
	t.current = ""
	if len(t.running) > 0 {
		t.current = t.running[len(t.running)-1]
	}
}

// Stamp observes d and returns it with the common block (Common) as it
// stands after d. The draft's own fields are left as they are: the block
// is kept apart (Event.Common) and written under them.
func (t *Tracker) Stamp(d Draft) Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(d.Payload)
	if t.snapshot == nil {
		t.snapshot = append([]string{}, t.running...)
	}
	d.Common = &Common{JobType: t.jobType.WireType(), Status: t.status, TotalModels: t.total, CompletedModels: t.completed,
		RunningModels: t.snapshot, CurrentModel: t.current, CurrentAttempt: t.attempt, MaxAttempts: t.max,
		LastError: t.lastError, TotalEntities: t.totalEntities, CompletedEntities: t.doneEntities,
		FailedEntities: t.failedEntities, SkippedEntities: t.skippedEntities}
	return d
}

// StampAll stamps drafts in order.
func (t *Tracker) StampAll(drafts []Draft) []Draft {
	out := make([]Draft, len(drafts))
	for i, d := range drafts {
		out[i] = t.Stamp(d)
	}
	return out
}
