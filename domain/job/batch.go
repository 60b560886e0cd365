package job

// TypeBatchEnrichment enriches many entities of one schema in one job
// (POST /api/batch/start).
const TypeBatchEnrichment Type = "batch_enrichment"

// The classification and batch events (REFERENCE.md §2, §3; WIRE.md §6.3).
const (
	EventClassificationStarted       EventType = "classification_started"
	EventClassificationCompleted     EventType = "classification_completed"
	EventClassificationMismatchPause EventType = "classification_mismatch_pause"
	EventBatchStarted                EventType = "batch_started"
	EventEntityStarted               EventType = "entity_started"
	EventEntityCompleted             EventType = "entity_completed"
	EventEntitySkipped               EventType = "entity_skipped"
	EventBatchCompleted              EventType = "batch_completed"
)

// Codes of entity_skipped: the reference's (cancelled, prompt_limit_reached,
// insufficient_credits) and ours.
const (
	SkipCancelled              = "cancelled"
	SkipClassificationMismatch = "classification_mismatch"
	SkipInputContract          = "input_contract_unsatisfied"
)

// ClassificationStarted opens a pre-flight classification call.
type ClassificationStarted struct {
	Model string
}

func (ClassificationStarted) EventType() EventType { return EventClassificationStarted }

// ClassificationCompleted closes it: Classification is the verdict (the
// reference's ClassificationContext, as a map) or nil when the call failed.
type ClassificationCompleted struct {
	Model          string
	Success        bool
	Classification map[string]any
	ErrorMessage   string
}

func (ClassificationCompleted) EventType() EventType { return EventClassificationCompleted }

// ClassificationMismatchPause pauses a streamed enrichment on a warning
// verdict until POST /api/llm/continue (or its timeout, or a cancel).
type ClassificationMismatchPause struct {
	Classification map[string]any
	TimeoutSeconds int
}

func (ClassificationMismatchPause) EventType() EventType { return EventClassificationMismatchPause }
func (ClassificationMismatchPause) pauses()              {}

// BatchStarted opens a batch.
type BatchStarted struct {
	Total, Selected int
}

func (BatchStarted) EventType() EventType { return EventBatchStarted }

// EntityStarted opens one entity of a batch.
type EntityStarted struct {
	Index int
	Label string
}

func (EntityStarted) EventType() EventType { return EventEntityStarted }

// EntityResult is one model's outcome for an entity (the reference's
// SingleEnrichmentResponse, as far as a batch needs it). It carries what a
// worker taking the batch over needs to store the entity's record.
type EntityResult struct {
	Model        string
	Success      bool
	Result       map[string]any
	RecordID     string
	Cost         int64
	CostUSD      float64
	InputTokens  int
	OutputTokens int
	ProcessingMS int64
	Strategy     string
	Sandbox      bool
	// ErrorMessage and ErrorCode are written for a failure only.
	ErrorMessage string
	ErrorCode    string
	// WebSearchCalls is written only when there were some (a resumed
	// batch stores the record with it).
	WebSearchCalls int
}

// EntityCompleted closes one entity of a batch: success when at least one
// model succeeded.
type EntityCompleted struct {
	Index        int
	Label        string
	Success      bool
	Results      []EntityResult
	Cost         int64
	ProcessingMS int64
	Error        string
	ErrorCode    ErrorCode
	RecordID     string
}

func (EntityCompleted) EventType() EventType { return EventEntityCompleted }

// EntitySkipped says an entity of a batch was not enriched, and why (Code).
type EntitySkipped struct {
	Index          int
	Label, Code    string
	Reason         string
	Classification map[string]any
	Paths          []string
}

func (EntitySkipped) EventType() EventType { return EventEntitySkipped }

// BatchCompleted closes a batch with its summary; StoppedEarlyReason says
// why entities were left (a cancel), else it is empty.
type BatchCompleted struct {
	Summary            map[string]any
	StoppedEarlyReason string
}

func (BatchCompleted) EventType() EventType { return EventBatchCompleted }

// InEntity is a payload tagged with the batch entity it belongs to
// (entity_index), so that an entity's usual events can be told apart.
type InEntity struct {
	Payload
	Index int
}

// OfEntity tags a payload with the batch entity it belongs to.
func OfEntity(p Payload, index int) Payload { return InEntity{p, index} }

// EntityIndex is the batch entity an event belongs to: its tag, or the
// entity index its payload carries; false when it has none.
func EntityIndex(e Event) (int, bool) {
	p := e.Payload
	if r, ok := p.(Raw); ok {
		p = r.Typed
	}
	if x, ok := p.(InEntity); ok {
		return x.Index, true
	}
	switch x := Inner(p).(type) {
	case ModelStarted:
		return x.EntityIndex, true
	case EntityStarted:
		return x.Index, true
	case EntityCompleted:
		return x.Index, true
	case EntitySkipped:
		return x.Index, true
	case FusionStarted:
		return deref(x.EntityIndex)
	case FusionCompleted:
		return deref(x.EntityIndex)
	}
	return 0, false
}

func deref(i *int) (int, bool) {
	if i == nil {
		return 0, false
	}
	return *i, true
}
