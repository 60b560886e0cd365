package job

import (
	"strconv"

	"github.com/entityenrich/enrich/domain/model"
)

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
func NewDraft(p Payload) Draft {
	if _, ok := p.(pairer); ok {
		return Draft{Type: p.EventType(), Payload: p} // its fields are built when asked for
	}
	return Draft{Type: p.EventType(), Data: p.Fields(), Payload: p}
}

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

func (ModelStarted) EventType() EventType     { return EventModelStarted }
func (p ModelStarted) Fields() map[string]any { return fieldsOf(p) }
func (p ModelStarted) pairs(ps []pair) []pair {
	return append(ps, strPair("status", string(Running)), strPair("model", p.Model), intPair("entity_index", p.EntityIndex),
		strPair("strategy", p.Strategy), intPair("total_expertises", p.Expertises), boolPair("sandbox", p.Sandbox))
}

// ExpertiseStarted opens one expertise call of a model.
type ExpertiseStarted struct {
	Model, Key, Name string
}

func (ExpertiseStarted) EventType() EventType     { return EventExpertiseStarted }
func (p ExpertiseStarted) Fields() map[string]any { return fieldsOf(p) }
func (p ExpertiseStarted) pairs(ps []pair) []pair {
	return append(ps, strPair("status", string(Running)), strPair("model", p.Model), strPair("expertise", p.Key),
		strPair("expertise_key", p.Key), strPair("expertise_name", p.Name))
}

// Attempt is one try of an expertise call; Reason says why a retry happens.
type Attempt struct {
	Model, Expertise, Reason string
	Attempt, MaxAttempts     int
}

func (Attempt) EventType() EventType     { return EventAttempt }
func (p Attempt) Fields() map[string]any { return fieldsOf(p) }
func (p Attempt) pairs(ps []pair) []pair {
	ps = append(ps, strPair("status", string(Running)), strPair("model", p.Model), strPair("expertise", p.Expertise),
		intPair("attempt", p.Attempt), intPair("max_attempts", p.MaxAttempts))
	if p.Attempt > 1 {
		ps = append(ps, strPair("reason", p.Reason))
	}
	return ps
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

func (ExpertiseCompleted) EventType() EventType     { return EventExpertiseCompleted }
func (p ExpertiseCompleted) Fields() map[string]any { return fieldsOf(p) }
func (p ExpertiseCompleted) pairs(ps []pair) []pair {
	ps = append(ps, strPair("status", string(Running)), strPair("model", p.Model), strPair("expertise_key", p.Key),
		strPair("expertise_name", p.Name), intPair("completed_expertises", p.Completed),
		intPair("total_expertises", p.Total), boolPair("success", p.Success), anyPair("partial_result", p.PartialResult),
		intPair("tokens", p.InputTokens+p.OutputTokens), intPair("input_tokens", p.InputTokens),
		intPair("output_tokens", p.OutputTokens), int64Pair("cost", p.Cost), floatPair("cost_usd", model.USD(p.Cost)),
		int64Pair("processing_time_ms", p.ProcessingMS))
	if p.KeySource != "" {
		ps = append(ps, strPair("api_key_source", p.KeySource))
	}
	if p.WebSearchCalls > 0 {
		ps = append(ps, intPair("web_search_calls", p.WebSearchCalls))
	}
	if !p.Success {
		ps = append(ps, strPair("error_message", p.ErrorMessage), strPair("error_code", string(p.ErrorCode)))
	}
	return ps
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

func (ModelCompleted) EventType() EventType     { return EventModelCompleted }
func (p ModelCompleted) Fields() map[string]any { return fieldsOf(p) }
func (p ModelCompleted) pairs(ps []pair) []pair {
	ps = append(ps, strPair("status", string(Running)), strPair("model", p.Model), boolPair("success", p.Success),
		boolPair("partial_success", p.PartialSuccess), boolPair("cancelled", false), int64Pair("cost", p.Cost),
		floatPair("cost_usd", model.USD(p.Cost)), intPair("input_tokens", p.InputTokens),
		intPair("output_tokens", p.OutputTokens), int64Pair("processing_time_ms", p.ProcessingMS),
		anyPair("expertise_breakdown", breakdowns(p.Breakdown)))
	if p.Success {
		return append(ps, anyPair("result", p.Result), strPair("record_id", p.RecordID))
	}
	return append(ps, strPair("error_message", p.ErrorMessage), strPair("error_code", string(p.ErrorCode)))
}

// breakdowns is a model_completed event's expertise_breakdown, written as
// a list of objects (appendTo) and read as one (value).
type breakdowns []Breakdown

// value is the list as a map of the event holds it.
func (bd breakdowns) value() any {
	out := make([]map[string]any, len(bd))
	for i, b := range bd {
		out[i] = map[string]any{"key": b.Key, "name": b.Name, "success": b.Success, "tokens": b.Tokens, "cost": b.Cost,
			"cost_usd": model.USD(b.Cost)}
	}
	return out
}

// appendTo writes the list as json.Marshal writes value's.
func (bd breakdowns) appendTo(b []byte) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, x := range bd {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"cost":`...) // keys sorted
		b = strconv.AppendInt(b, x.Cost, 10)
		b = append(b, `,"cost_usd":`...)
		if b, err = appendFloat(b, model.USD(x.Cost)); err != nil {
			return nil, err
		}
		b = append(b, `,"key":`...)
		if b, err = appendString(b, x.Key); err != nil {
			return nil, err
		}
		b = append(b, `,"name":`...)
		if b, err = appendString(b, x.Name); err != nil {
			return nil, err
		}
		b = append(b, `,"success":`...)
		b = strconv.AppendBool(b, x.Success)
		b = append(b, `,"tokens":`...)
		b = strconv.AppendInt(b, int64(x.Tokens), 10)
		b = append(b, '}')
	}
	return append(b, ']'), nil
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

func (JobCompleted) EventType() EventType     { return EventCompleted }
func (p JobCompleted) Fields() map[string]any { return fieldsOf(p) }
func (p JobCompleted) pairs(ps []pair) []pair {
	ps = append(ps, strPair("status", string(Completed)), anyPair("result", p.Result), anyPair("record_ids", p.RecordIDs),
		int64Pair("cost", p.Cost), floatPair("cost_usd", model.USD(p.Cost)))
	if p.RecordID != "" {
		ps = append(ps, strPair("record_id", p.RecordID))
	} else {
		ps = append(ps, anyPair("record_id", nil)) // a batch has records, but no one record
	}
	if p.Several {
		ps = append(ps, anyPair("results", p.Results), anyPair("failed_models", p.FailedModels))
	}
	if p.Several || p.Fused {
		ps = append(ps, boolPair("is_fused", p.Fused))
	}
	if p.Fused {
		ps = append(ps, anyPair("fusion", p.Fusion), anyPair("source_models", p.SourceModels))
	}
	return ps
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
