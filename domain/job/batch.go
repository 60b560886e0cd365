package job

import "github.com/entityenrich/enrich/domain/model"

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
func (p ClassificationStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model}
}

// ClassificationCompleted closes it: Classification is the verdict (the
// reference's ClassificationContext, as a map) or nil when the call failed.
type ClassificationCompleted struct {
	Model          string
	Success        bool
	Classification map[string]any
	ErrorMessage   string
}

func (ClassificationCompleted) EventType() EventType { return EventClassificationCompleted }
func (p ClassificationCompleted) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "model": p.Model, "success": p.Success, "classification": nil,
		"error_message": nil}
	if p.Classification != nil {
		m["classification"] = p.Classification
	}
	if p.ErrorMessage != "" {
		m["error_message"] = p.ErrorMessage
	}
	return m
}

// ClassificationMismatchPause pauses a streamed enrichment on a warning
// verdict until POST /api/llm/continue (or its timeout, or a cancel).
type ClassificationMismatchPause struct {
	Classification map[string]any
	TimeoutSeconds int
}

func (ClassificationMismatchPause) EventType() EventType { return EventClassificationMismatchPause }
func (p ClassificationMismatchPause) Fields() map[string]any {
	return map[string]any{"status": string(Paused), "is_paused": true, "classification": p.Classification,
		"timeout_seconds": p.TimeoutSeconds}
}

// BatchStarted opens a batch.
type BatchStarted struct {
	Total, Selected int
}

func (BatchStarted) EventType() EventType { return EventBatchStarted }
func (p BatchStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "total_entities": p.Total, "selected_entities": p.Selected}
}

// EntityStarted opens one entity of a batch.
type EntityStarted struct {
	Index int
	Label string
}

func (EntityStarted) EventType() EventType { return EventEntityStarted }
func (p EntityStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "entity_index": p.Index, "entity_label": p.Label}
}

// EntityResult is one model's outcome for an entity (the reference's
// SingleEnrichmentResponse, as far as a batch needs it). It carries what a
// worker taking the batch over needs to store the entity's record.
type EntityResult struct {
	Model        string         `json:"model"`
	Success      bool           `json:"success"`
	Result       map[string]any `json:"result"`
	RecordID     string         `json:"record_id"`
	Cost         int64          `json:"cost"`
	CostUSD      float64        `json:"cost_usd"`
	InputTokens  int            `json:"input_tokens"`
	OutputTokens int            `json:"output_tokens"`
	ProcessingMS int64          `json:"processing_time_ms"`
	Strategy     string         `json:"strategy"`
	Sandbox      bool           `json:"sandbox"`
	ErrorMessage string         `json:"error_message,omitempty"`
	ErrorCode    string         `json:"error_code,omitempty"`
	// WebSearchCalls is written only when there were some (a resumed
	// batch stores the record with it).
	WebSearchCalls int `json:"web_search_calls,omitempty"`
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
func (p EntityCompleted) Fields() map[string]any {
	res := make([]any, len(p.Results))
	for i, r := range p.Results {
		m := map[string]any{"model": r.Model, "success": r.Success, "result": r.Result, "record_id": nil,
			"cost": r.Cost, "cost_usd": model.USD(r.Cost), "input_tokens": r.InputTokens, "output_tokens": r.OutputTokens,
			"processing_time_ms": r.ProcessingMS, "strategy": r.Strategy, "sandbox": r.Sandbox}
		if r.RecordID != "" {
			m["record_id"] = r.RecordID
		}
		if r.WebSearchCalls > 0 {
			m["web_search_calls"] = r.WebSearchCalls
		}
		if !r.Success {
			m["error_message"], m["error_code"] = r.ErrorMessage, r.ErrorCode
		}
		res[i] = m
	}
	m := map[string]any{"status": string(Running), "entity_index": p.Index, "entity_label": p.Label, "success": p.Success,
		"results": res, "total_cost": p.Cost, "total_cost_usd": model.USD(p.Cost), "total_processing_time_ms": p.ProcessingMS,
		"error": nil, "record_id": nil}
	if p.Error != "" {
		m["error"], m["error_code"] = p.Error, string(p.ErrorCode)
	}
	if p.RecordID != "" {
		m["record_id"] = p.RecordID
	}
	return m
}

// EntitySkipped says an entity of a batch was not enriched, and why (Code).
type EntitySkipped struct {
	Index          int
	Label, Code    string
	Reason         string
	Classification map[string]any
	Paths          []string
}

func (EntitySkipped) EventType() EventType { return EventEntitySkipped }
func (p EntitySkipped) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "entity_index": p.Index, "entity_label": p.Label, "code": p.Code,
		"reason": p.Reason}
	if p.Classification != nil {
		m["classification"] = p.Classification
	}
	if len(p.Paths) > 0 {
		m["paths"] = p.Paths
	}
	return m
}

// BatchCompleted closes a batch with its summary; StoppedEarlyReason says
// why entities were left (a cancel), else it is empty.
type BatchCompleted struct {
	Summary            map[string]any
	StoppedEarlyReason string
}

func (BatchCompleted) EventType() EventType { return EventBatchCompleted }
func (p BatchCompleted) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "summary": p.Summary, "stopped_early_reason": nil}
	if p.StoppedEarlyReason != "" {
		m["stopped_early_reason"] = p.StoppedEarlyReason
	}
	return m
}

// OfEntity tags a payload with the batch entity it belongs to
// (entity_index), so that an entity's usual events can be told apart.
func OfEntity(p Payload, index int) Payload { return entityPayload{p, index} }

type entityPayload struct {
	Payload
	index int
}

func (p entityPayload) Fields() map[string]any {
	m := p.Payload.Fields()
	m["entity_index"] = p.index
	return m
}

// EntityIndex reads an event's entity_index (as published, or as decoded
// from the log); false when it has none.
func EntityIndex(data map[string]any) (int, bool) {
	v, ok := data["entity_index"]
	if !ok || v == nil {
		return 0, false
	}
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	}
	return 0, false
}
