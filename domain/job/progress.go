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
	t.observe(typ, data)
}

func (t *Tracker) observe(typ EventType, data map[string]any) {
	if s, ok := data["status"].(string); ok {
		t.status = State(s)
	}
	m, _ := data["model"].(string)
	switch typ {
	case EventModelStarted:
		if !slices.Contains(t.running, m) {
			t.running = append(t.running, m)
		}
		t.current = m
	case EventAttempt:
		t.attempt, t.max = number(data["attempt"]), number(data["max_attempts"])
		t.lastError, _ = data["reason"].(string)
		if m != "" {
			t.current = m
		}
	case EventBatchStarted:
		t.totalEntities = number(data["total_entities"])
	case EventEntityCompleted:
		if ok, _ := data["success"].(bool); ok {
			t.doneEntities++
		} else {
			t.failedEntities++
		}
	case EventEntitySkipped:
		t.skippedEntities++
	case EventModelCompleted:
		t.completed++
		t.running = slices.DeleteFunc(t.running, func(r string) bool { return r == m })
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

// Stamp observes d and returns it with the common block added.
func (t *Tracker) Stamp(d Draft) Draft {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(d.Type, d.Data)
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	// One map: the common block, then the event's own fields over it.
	out := make(map[string]any, stampedSize(d.Data))
	out["job_type"], out["status"], out["is_paused"] = t.jobType.WireType(), string(t.status), t.status == Paused
	out["total_models"], out["completed_models"] = t.total, t.completed
	out["running_models"] = append([]string{}, t.running...)
	out["current_model"], out["current_attempt"], out["max_attempts"] = nullable(t.current), t.attempt, t.max
	out["last_error_summary"], out["total_entities"], out["completed_entities"] = nullable(t.lastError), nil, t.doneEntities
	out["failed_entities"], out["skipped_entities"] = t.failedEntities, t.skippedEntities
	if t.totalEntities >= 0 {
		out["total_entities"] = t.totalEntities
	}
	for k, v := range d.Data {
		out[k] = v
	}
	return Draft{Type: d.Type, Data: out, Payload: d.Payload}
}

// commonFields is the number of fields of the common block (Stamp).
const commonFields = 14

// isCommon says whether k is a field of the common block.
func isCommon(k string) bool {
	switch k {
	case "job_type", "status", "is_paused", "total_models", "completed_models", "running_models", "current_model",
		"current_attempt", "max_attempts", "last_error_summary", "total_entities", "completed_entities",
		"failed_entities", "skipped_entities":
		return true
	}
	return false
}

// stampedSize is the number of fields of data stamped: exact, because a
// map's table doubles at each step, and a size hint a few fields too large
// (len(data)+16) made most events' maps twice as large as they needed.
func stampedSize(data map[string]any) int {
	n := commonFields
	for k := range data {
		if !isCommon(k) {
			n++
		}
	}
	return n
}

// StampAll stamps drafts in order.
func (t *Tracker) StampAll(drafts []Draft) []Draft {
	out := make([]Draft, len(drafts))
	for i, d := range drafts {
		out[i] = t.Stamp(d)
	}
	return out
}
