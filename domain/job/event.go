package job

import (
	"time"

	"github.com/entityenrich/enrich/domain/text"
)

// EventType names an SSE event. The names are SPEC.md's and REFERENCE.md's.
type EventType string

const (
	EventStrategySelected  EventType = "strategy_selected"
	EventModelAutoSelected EventType = "model_auto_selected"
	EventModelStarted      EventType = "model_started"
	EventExpertiseStarted  EventType = "expertise_started"
	EventAttempt           EventType = "attempt"
	// EventProviderQueued says a call waits for a free slot of its
	// provider (the per-provider concurrency limits).
	EventProviderQueued     EventType = "provider_queued"
	EventExpertiseCompleted EventType = "expertise_completed"
	EventModelCompleted     EventType = "model_completed"
	EventError              EventType = "error"
	EventCompleted          EventType = "completed"
	EventFailed             EventType = "failed"
	EventCancelled          EventType = "cancelled"
	// EventJobResumed opens the events of a worker that took over a job
	// whose previous worker died.
	EventJobResumed EventType = "job_resumed"
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
	// Payload is the typed payload Data was built from, when the event was
	// built in this process; nil when it was read from a log. Readers take
	// it instead of decoding Data (ModelCompletedOf, CompletedOf). It is
	// never stored or sent.
	Payload Payload
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
	return MarshalData(m)
}

// Draft is an event before the log gives it its number.
type Draft struct {
	Type    EventType
	Data    map[string]any
	Payload Payload // see Event.Payload
}

// Failure is the terminal sequence of a failed job: an error event, then
// failed, both with the code and message.
func Failure(code ErrorCode, msg string) []Draft {
	msg = text.Storable(msg) // as Job.Fail stores it
	return []Draft{NewDraft(JobError{code, msg}), NewDraft(JobFailed{code, msg})}
}

// Cancellation is the terminal sequence of a cancelled job.
func Cancellation(reason string) []Draft {
	return []Draft{NewDraft(JobCancelled{text.Storable(reason)})}
}

// Number turns drafts into the job's events after seq.
func Number(jobID string, after int64, at time.Time, drafts []Draft) []Event {
	out := make([]Event, len(drafts))
	for i, d := range drafts {
		out[i] = Event{JobID: jobID, Seq: after + int64(i) + 1, Type: d.Type, Data: d.Data, CreatedAt: at, Payload: d.Payload}
	}
	return out
}
