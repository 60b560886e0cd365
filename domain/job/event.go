package job

import (
	"slices"
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
	// Data holds the event's payload fields (without "event", which is Type):
	// all of them for an event read from a log; an event built here keeps
	// its common block apart, in Common, and an event of a typed payload
	// that lists its fields (a job's events, model_started to completed)
	// has none: read its fields with Fields or Field, never Data.
	Data map[string]any
	// Common is the common block of an event stamped in this process (nil
	// when read from a log, where it is in Data). Fields merges the two.
	Common    *Common
	CreatedAt time.Time
	// Payload is the typed payload Data was built from, when the event was
	// built in this process; nil when it was read from a log. Readers take
	// it instead of decoding Data (ModelCompletedOf, CompletedOf). It is
	// never stored or sent.
	Payload Payload
}

// Fields returns the event's data with its common block: Data itself for
// an event read from a log, else a new map.
func (e Event) Fields() map[string]any { return merged(ownFields(e.Data, e.Payload), e.Common) }

// Field returns one field of the event's data, looking in its common block
// too (as Fields would hold it, without building the map).
func (e Event) Field(k string) any { return lookup(e.Data, e.Payload, e.Common, k) }

// ownFields is an event's own fields: data, or, without it, its typed
// payload's.
func ownFields(data map[string]any, p Payload) map[string]any {
	if pp, ok := p.(pairer); ok && data == nil {
		return fieldsOf(pp)
	}
	return data
}

func lookup(data map[string]any, p Payload, c *Common, k string) any {
	fs := openFields(data, p)
	v, ok := fs.get(k)
	fs.close()
	if ok {
		return v
	}
	if c != nil {
		if i := slices.Index(commonKeys[:], k); i >= 0 {
			return c.value(i)
		}
	}
	return nil
}

// Draft is an event before the log gives it its number.
type Draft struct {
	Type    EventType
	Data    map[string]any
	Common  *Common // see Event.Common
	Payload Payload // see Event.Payload
}

// Fields returns the draft's data with its common block (Event.Fields).
func (d Draft) Fields() map[string]any { return merged(ownFields(d.Data, d.Payload), d.Common) }

// Field returns one field of the draft's data (Event.Field).
func (d Draft) Field(k string) any { return lookup(d.Data, d.Payload, d.Common, k) }

// Own returns the draft with its own fields in Data, for a caller that
// changes them: a typed payload's are built into a new map.
func (d Draft) Own() Draft {
	d.Data = ownFields(d.Data, d.Payload)
	return d
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
		out[i] = Event{JobID: jobID, Seq: after + int64(i) + 1, Type: d.Type, Data: d.Data, Common: d.Common, CreatedAt: at,
			Payload: d.Payload}
	}
	return out
}
