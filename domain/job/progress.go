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
// from the log, whose numbers are float64).
func (t *Tracker) Observe(typ EventType, data map[string]any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(typ, data, nil)
}

// observe takes in an event of type typ, its fields data or, without them,
// its typed payload p's.
func (t *Tracker) observe(typ EventType, data map[string]any, p Payload) {
	fs := openFields(data, p)
	defer fs.close()
	get := func(k string) any { v, _ := fs.get(k); return v }
	if s := fs.str("status"); s != "" {
		t.status = State(s)
	}
	m := fs.str("model")
	switch typ {
	case EventModelStarted:
		if !slices.Contains(t.running, m) {
			t.running, t.snapshot = append(t.running, m), nil
		}
		t.current = m
	case EventAttempt:
		t.attempt, t.max = number(get("attempt")), number(get("max_attempts"))
		t.lastError = fs.str("reason")
		if m != "" {
			t.current = m
		}
	case EventBatchStarted:
		t.totalEntities = number(get("total_entities"))
	case EventEntityCompleted:
		if ok, _ := get("success").(bool); ok {
			t.doneEntities++
		} else {
			t.failedEntities++
		}
	case EventEntitySkipped:
		t.skippedEntities++
	case EventModelCompleted:
		t.completed++
		t.running, t.snapshot = slices.DeleteFunc(t.running, func(r string) bool { return r == m }), nil
		t.current = ""
		if len(t.running) > 0 {
			t.current = t.running[len(t.running)-1]
		}
	}
}

func number(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// Stamp observes d and returns it with the common block (Common) as it
// stands after d. The draft's own fields are left as they are: the block
// is kept apart (Event.Common) and written under them.
func (t *Tracker) Stamp(d Draft) Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(d.Type, d.Data, d.Payload)
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
