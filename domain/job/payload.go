package job

import "github.com/entityenrich/enrich/domain/model"

// Payload is the typed body of one event type. Fields gives the wire form
// (the keys of the SSE data line beside "event" and "job_id"), built by hand
// so that the JSON stays exactly what clients read today, absent keys
// included.
type Payload interface {
	EventType() EventType
	Fields() map[string]any
}

// Draft builds the unnumbered event of a payload, so that an event's type
// always matches its body.
func NewDraft(p Payload) Draft { return Draft{Type: p.EventType(), Data: p.Fields(), Payload: p} }

// StrategySelected says which strategy the server chose for "auto".
type StrategySelected struct {
	Strategy, Requested, Reason string
	Signals                     any
}

func (StrategySelected) EventType() EventType { return EventStrategySelected }
func (p StrategySelected) Fields() map[string]any {
	return map[string]any{"status": string(Running), "strategy": p.Strategy, "requested": p.Requested, "reason": p.Reason, "signals": p.Signals}
}

// ModelAutoSelected says which model the server chose.
type ModelAutoSelected struct {
	Model, TaskType, Source string
	Pinned                  bool
}

func (ModelAutoSelected) EventType() EventType { return EventModelAutoSelected }
func (p ModelAutoSelected) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "task_type": p.TaskType, "pinned": p.Pinned, "source": p.Source}
}

// ModelStarted opens one model's run.
type ModelStarted struct {
	Model, Strategy         string
	EntityIndex, Expertises int
	Sandbox                 bool
}

func (ModelStarted) EventType() EventType { return EventModelStarted }
func (p ModelStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "entity_index": p.EntityIndex, "strategy": p.Strategy,
		"total_expertises": p.Expertises, "sandbox": p.Sandbox}
}

// ExpertiseStarted opens one expertise call of a model.
type ExpertiseStarted struct {
	Model, Key, Name string
}

func (ExpertiseStarted) EventType() EventType { return EventExpertiseStarted }
func (p ExpertiseStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "expertise": p.Key, "expertise_key": p.Key, "expertise_name": p.Name}
}

// Attempt is one try of an expertise call; Reason says why a retry happens.
type Attempt struct {
	Model, Expertise, Reason string
	Attempt, MaxAttempts     int
}

func (Attempt) EventType() EventType { return EventAttempt }
func (p Attempt) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "model": p.Model, "expertise": p.Expertise, "attempt": p.Attempt, "max_attempts": p.MaxAttempts}
	if p.Attempt > 1 {
		m["reason"] = p.Reason
	}
	return m
}

// ProviderQueued says an expertise call waits for a free slot of its
// provider before it goes out.
type ProviderQueued struct {
	Model, Expertise, Provider string
}

func (ProviderQueued) EventType() EventType { return EventProviderQueued }
func (p ProviderQueued) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "expertise": p.Expertise, "provider": p.Provider}
}

// ExpertiseCompleted closes one expertise call, with its partial result or
// its error. A resumed run reuses the partial result and its usage.
type ExpertiseCompleted struct {
	Model, Key, Name          string
	Completed, Total          int
	Success                   bool
	PartialResult             map[string]any
	InputTokens, OutputTokens int
	Cost, ProcessingMS        int64
	ErrorMessage              string
	ErrorCode                 ErrorCode
	// KeySource is whose provider key paid: organization or global (empty
	// for a provider that needs no key).
	KeySource string
	// WebSearchCalls counts the call's web-search tool calls; it is written
	// only when there were some, so events without searches keep their
	// earlier shape.
	WebSearchCalls int
}

func (ExpertiseCompleted) EventType() EventType { return EventExpertiseCompleted }
func (p ExpertiseCompleted) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "model": p.Model, "expertise_key": p.Key, "expertise_name": p.Name,
		"completed_expertises": p.Completed, "total_expertises": p.Total, "success": p.Success,
		"partial_result": p.PartialResult, "tokens": p.InputTokens + p.OutputTokens, "input_tokens": p.InputTokens,
		"output_tokens": p.OutputTokens, "cost": p.Cost, "cost_usd": model.USD(p.Cost), "processing_time_ms": p.ProcessingMS}
	if p.KeySource != "" {
		m["api_key_source"] = p.KeySource
	}
	if p.WebSearchCalls > 0 {
		m["web_search_calls"] = p.WebSearchCalls
	}
	if !p.Success {
		m["error_message"], m["error_code"] = p.ErrorMessage, string(p.ErrorCode)
	}
	return m
}

// Breakdown is one expertise's share of a model's run.
type Breakdown struct {
	Key, Name string
	Success   bool
	Tokens    int
	Cost      int64
}

// ModelCompleted closes one model's run, with its result and record or its
// error.
type ModelCompleted struct {
	Model   string
	Success bool
	// PartialSuccess: some of the model's expertises succeeded, others
	// failed (the model then fails: a partial result is not stored).
	PartialSuccess            bool
	Cost, ProcessingMS        int64
	InputTokens, OutputTokens int
	Breakdown                 []Breakdown
	Result                    map[string]any
	RecordID                  string
	ErrorMessage              string
	ErrorCode                 ErrorCode
}

func (ModelCompleted) EventType() EventType { return EventModelCompleted }
func (p ModelCompleted) Fields() map[string]any {
	bd := make([]map[string]any, len(p.Breakdown))
	for i, b := range p.Breakdown {
		bd[i] = map[string]any{"key": b.Key, "name": b.Name, "success": b.Success, "tokens": b.Tokens, "cost": b.Cost,
			"cost_usd": model.USD(b.Cost)}
	}
	m := map[string]any{"status": string(Running), "model": p.Model, "success": p.Success, "partial_success": p.PartialSuccess,
		"cancelled": false, "cost": p.Cost, "cost_usd": model.USD(p.Cost),
		"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "processing_time_ms": p.ProcessingMS,
		"expertise_breakdown": bd}
	if p.Success {
		m["result"], m["record_id"] = p.Result, p.RecordID
	} else {
		m["error_message"], m["error_code"] = p.ErrorMessage, string(p.ErrorCode)
	}
	return m
}

// SomeModelsFailed is the error event before completed when some of several
// models failed.
type SomeModelsFailed struct {
	Message      string
	FailedModels []string
}

func (SomeModelsFailed) EventType() EventType { return EventError }
func (p SomeModelsFailed) Fields() map[string]any {
	return map[string]any{"status": string(Running), "error_message": p.Message, "failed_models": p.FailedModels}
}

// JobCompleted ends a job that succeeded. Several-model runs also carry
// every model's result and the failed models.
type JobCompleted struct {
	Result       map[string]any
	RecordID     string
	RecordIDs    []string
	Cost         int64
	Several      bool
	Results      map[string]any
	FailedModels []string
	// Fused: Result and RecordID are the fused record's; Fusion is its
	// summary (a fusion.Summary) and SourceModels the merged models.
	Fused        bool
	Fusion       any
	SourceModels []string
}

func (JobCompleted) EventType() EventType { return EventCompleted }
func (p JobCompleted) Fields() map[string]any {
	m := map[string]any{"status": string(Completed), "result": p.Result, "record_id": nil, "record_ids": p.RecordIDs,
		"cost": p.Cost, "cost_usd": model.USD(p.Cost)}
	if p.RecordID != "" {
		m["record_id"] = p.RecordID // a batch has records, but no one record
	}
	if p.Several {
		m["results"], m["failed_models"] = p.Results, p.FailedModels
		m["is_fused"] = p.Fused
	}
	if p.Fused {
		m["is_fused"], m["fusion"], m["source_models"] = true, p.Fusion, p.SourceModels
	}
	return m
}

// JobError is the error event that precedes failed.
type JobError struct {
	Code ErrorCode
	Msg  string
}

func (JobError) EventType() EventType { return EventError }
func (p JobError) Fields() map[string]any {
	return map[string]any{"status": string(Running), "error_code": string(p.Code), "error_message": p.Msg}
}

// JobFailed ends a job that failed.
type JobFailed struct {
	Code ErrorCode
	Msg  string
}

func (JobFailed) EventType() EventType { return EventFailed }
func (p JobFailed) Fields() map[string]any {
	return map[string]any{"status": string(Failed), "error_code": string(p.Code), "error_message": p.Msg}
}

// JobCancelled ends a cancelled job.
type JobCancelled struct{ Reason string }

func (JobCancelled) EventType() EventType { return EventCancelled }
func (p JobCancelled) Fields() map[string]any {
	return map[string]any{"status": string(Cancelled), "reason": p.Reason}
}

// JobResumed opens the events of a worker that took a job over.
type JobResumed struct {
	Attempt    int
	AfterEvent int64
}

func (JobResumed) EventType() EventType { return EventJobResumed }
func (p JobResumed) Fields() map[string]any {
	return map[string]any{"status": string(Running), "attempt": p.Attempt, "after_event": p.AfterEvent}
}
