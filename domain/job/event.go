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
// one per event of the same job. An event has one form, typed: its payload
// and its common block. Adapters write it in the wire form (JSON on SSE and
// in stores) and read stored ones back into it (ports.EventCodec).
type Event struct {
	JobID string
	Seq   int64
	Type  EventType
	// Payload is the event's body, of a type per event type (Raw for an
	// event read from a log that this version cannot type).
	Payload Payload
	// Common is the common block the run's Tracker stamped on the event
	// (nil for an event without one).
	Common    *Common
	CreatedAt time.Time
}

// Draft is an event before the log gives it its number.
type Draft struct {
	Type    EventType
	Payload Payload
	Common  *Common // see Event.Common
}

// NewDraft builds the unnumbered event of a payload, so that an event's type
// always matches its body.
func NewDraft(p Payload) Draft { return Draft{Type: p.EventType(), Payload: p} }

// Failure is the terminal sequence of a failed job: an error event, then
// failed, both with the code and message.
func Failure(code ErrorCode, msg string) []Draft {
	msg = text.Storable(msg) // as Job.Fail stores it
	return []Draft{NewDraft(JobError{code, msg}), NewDraft(JobFailed{code, msg})}
}

// Cancellation is the terminal sequence of a cancelled job.
func Cancellation(reason string) []Draft {
	return []Draft{NewDraft(JobCancelled{Reason: text.Storable(reason)})}
}

// PartialCancellation is the terminal sequence of a job a client cancelled
// whose results are kept (a batch's finished entities): its cancelled event
// carries result.
func PartialCancellation(reason string, result map[string]any) []Draft {
	return []Draft{NewDraft(JobCancelled{Reason: text.Storable(reason), Partial: true, Result: result})}
}

// Number turns drafts into the job's events after seq.
func Number(jobID string, after int64, at time.Time, drafts []Draft) []Event {
	out := make([]Event, len(drafts))
	for i, d := range drafts {
		out[i] = Event{JobID: jobID, Seq: after + int64(i) + 1, Type: d.Type, Payload: d.Payload, Common: d.Common, CreatedAt: at}
	}
	return out
}
