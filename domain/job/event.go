package job

import (
	"encoding/json"
	"time"
)

// EventType names an SSE event. The names are SPEC.md's and REFERENCE.md's.
type EventType string

const (
	EventStrategySelected   EventType = "strategy_selected"
	EventModelAutoSelected  EventType = "model_auto_selected"
	EventModelStarted       EventType = "model_started"
	EventExpertiseStarted   EventType = "expertise_started"
	EventAttempt            EventType = "attempt"
	EventExpertiseCompleted EventType = "expertise_completed"
	EventModelCompleted     EventType = "model_completed"
	EventError              EventType = "error"
	EventCompleted          EventType = "completed"
	EventFailed             EventType = "failed"
	EventCancelled          EventType = "cancelled"
)

// Terminal reports whether the event ends a job's stream.
func (t EventType) Terminal() bool {
	return t == EventCompleted || t == EventFailed || t == EventCancelled
}

// Event is one entry of a job's event log. Seq starts at 1 and increases by
// one per event of the same job.
type Event struct {
	JobID string
	Seq   int64
	Type  EventType
	// Data holds the event's payload fields (without "event", which is Type).
	Data      map[string]any
	CreatedAt time.Time
}

// MarshalJSON writes the payload with the event field and the job id, the
// shape every SSE data line carries.
func (e Event) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Data)+2)
	for k, v := range e.Data {
		m[k] = v
	}
	m["event"] = string(e.Type)
	m["job_id"] = e.JobID
	return json.Marshal(m)
}
