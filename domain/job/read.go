package job

import "encoding/json"

// Reading payloads back. A worker that takes a job over reads the events
// that an earlier worker published, and a blocking caller reads the events
// of the job it waits for, as published or as decoded from the log. Each
// reader below fills the payload type from the keys its Fields wrote, as
// far as its readers need them; the tags of that format stay here, beside
// the Fields that write it.

// readData decodes an event's data into v (a tagged reader type).
func readData(data map[string]any, v any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// usage is the usage keys most payloads carry.
type usage struct {
	InputTokens  int   `json:"input_tokens"`
	OutputTokens int   `json:"output_tokens"`
	Cost         int64 `json:"cost"`
}

// ReadExpertiseCompleted reads an expertise_completed event: model, key,
// success, partial result, usage and web searches (absent: none).
func ReadExpertiseCompleted(data map[string]any) (ExpertiseCompleted, error) {
	var d struct {
		usage
		Model          string         `json:"model"`
		Key            string         `json:"expertise_key"`
		Success        bool           `json:"success"`
		PartialResult  map[string]any `json:"partial_result"`
		WebSearchCalls int            `json:"web_search_calls"`
	}
	err := readData(data, &d)
	return ExpertiseCompleted{Model: d.Model, Key: d.Key, Success: d.Success, PartialResult: d.PartialResult,
		InputTokens: d.InputTokens, OutputTokens: d.OutputTokens, Cost: d.Cost, WebSearchCalls: d.WebSearchCalls}, err
}

// ReadModelCompleted reads an enrichment's model_completed event (without
// its breakdown).
func ReadModelCompleted(data map[string]any) (ModelCompleted, error) {
	var d struct {
		usage
		Model          string         `json:"model"`
		Success        bool           `json:"success"`
		PartialSuccess bool           `json:"partial_success"`
		Result         map[string]any `json:"result"`
		RecordID       string         `json:"record_id"`
		ProcessingMS   int64          `json:"processing_time_ms"`
		ErrorMessage   string         `json:"error_message"`
		ErrorCode      ErrorCode      `json:"error_code"`
	}
	err := readData(data, &d)
	return ModelCompleted{Model: d.Model, Success: d.Success, PartialSuccess: d.PartialSuccess, Result: d.Result,
		RecordID: d.RecordID, Cost: d.Cost, InputTokens: d.InputTokens, OutputTokens: d.OutputTokens,
		ProcessingMS: d.ProcessingMS, ErrorMessage: d.ErrorMessage, ErrorCode: d.ErrorCode}, err
}

// ReadSamplesCompleted reads a sample job's model_completed event.
func ReadSamplesCompleted(data map[string]any) (SamplesCompleted, error) {
	var d struct {
		usage
		Model        string           `json:"model"`
		Samples      []map[string]any `json:"samples"`
		Requested    int              `json:"samples_requested"`
		Note         string           `json:"samples_note"`
		ProcessingMS int64            `json:"processing_time_ms"`
	}
	err := readData(data, &d)
	return SamplesCompleted{Model: d.Model, Samples: d.Samples, Requested: d.Requested, Note: d.Note,
		InputTokens: d.InputTokens, OutputTokens: d.OutputTokens, Cost: d.Cost, ProcessingMS: d.ProcessingMS}, err
}

// ReadCompleted reads a completed event: result, records, cost, and a
// several-model run's failed models and fusion. Fusion is the summary as
// a map.
func ReadCompleted(data map[string]any) (JobCompleted, error) {
	var d struct {
		Result       map[string]any `json:"result"`
		RecordID     string         `json:"record_id"`
		RecordIDs    []string       `json:"record_ids"`
		Cost         int64          `json:"cost"`
		FailedModels []string       `json:"failed_models"`
		IsFused      bool           `json:"is_fused"`
		Fusion       map[string]any `json:"fusion"`
		SourceModels []string       `json:"source_models"`
	}
	err := readData(data, &d)
	c := JobCompleted{Result: d.Result, RecordID: d.RecordID, RecordIDs: d.RecordIDs, Cost: d.Cost,
		FailedModels: d.FailedModels, Fused: d.IsFused, SourceModels: d.SourceModels}
	if d.Fusion != nil {
		c.Fusion = d.Fusion
	}
	return c, err
}

// Ended is how a terminal event (completed, failed, cancelled) says the job
// ended.
type Ended struct {
	State   State
	Code    ErrorCode
	Message string
	Reason  string
}

// ReadEnded reads a terminal event's status, error code and message, and a
// cancellation's reason.
func ReadEnded(data map[string]any) (Ended, error) {
	var d struct {
		Status  State     `json:"status"`
		Code    ErrorCode `json:"error_code"`
		Message string    `json:"error_message"`
		Reason  string    `json:"reason"`
	}
	err := readData(data, &d)
	return Ended{State: d.Status, Code: d.Code, Message: d.Message, Reason: d.Reason}, err
}

// ReadEntityCompleted reads a batch's entity_completed event: success, the
// models' results, and the error.
func ReadEntityCompleted(data map[string]any) (EntityCompleted, error) {
	var d struct {
		Success bool           `json:"success"`
		Results []EntityResult `json:"results"`
		Error   *string        `json:"error"`
		Code    ErrorCode      `json:"error_code"`
	}
	err := readData(data, &d)
	c := EntityCompleted{Success: d.Success, Results: d.Results, ErrorCode: d.Code}
	if d.Error != nil {
		c.Error = *d.Error
	}
	return c, err
}

// ReadArbitrationCompleted reads a fusion's arbitration_completed event.
func ReadArbitrationCompleted(data map[string]any) (ArbitrationCompleted, error) {
	var d struct {
		usage
		Model     string     `json:"arbitration_model"`
		Success   bool       `json:"success"`
		Decisions []Decision `json:"decisions"`
	}
	err := readData(data, &d)
	return ArbitrationCompleted{Model: d.Model, Success: d.Success, Decisions: d.Decisions, Cost: d.Cost,
		InputTokens: d.InputTokens, OutputTokens: d.OutputTokens}, err
}

// ReadSampleInstanceProgress reads a sample_instance_progress event: the
// sample and its usage.
func ReadSampleInstanceProgress(data map[string]any) (SampleInstanceProgress, error) {
	var d struct {
		usage
		Index    int            `json:"index"`
		Instance string         `json:"instance"`
		Sample   map[string]any `json:"sample"`
	}
	err := readData(data, &d)
	return SampleInstanceProgress{Index: d.Index, Instance: d.Instance, Sample: d.Sample, InputTokens: d.InputTokens,
		OutputTokens: d.OutputTokens, Cost: d.Cost}, err
}

// ReadSampleClarificationPause reads a sample clarification pause's
// questions.
func ReadSampleClarificationPause(data map[string]any) (SampleClarificationPause, error) {
	var d struct {
		Questions []SampleQuestion `json:"questions"`
	}
	err := readData(data, &d)
	return SampleClarificationPause{Questions: d.Questions}, err
}

// ModelCompletedOf is ReadModelCompleted for event e: when e was built in
// this process from a ModelCompleted, that payload, as far as the event
// carries it (no breakdown; the result and record of a success, the error
// of a failure), without a round trip through JSON.
func ModelCompletedOf(e Event) (ModelCompleted, error) {
	p, ok := e.Payload.(ModelCompleted)
	if !ok {
		return ReadModelCompleted(e.Data)
	}
	p.Breakdown = nil
	if p.Success {
		p.ErrorMessage, p.ErrorCode = "", ""
	} else {
		p.Result, p.RecordID = nil, ""
	}
	return p, nil
}

// CompletedOf is ReadCompleted for event e: when e was built in this
// process from a JobCompleted, that payload, as far as the event carries it
// (the failed models of a several-model run, the fusion of a fused one, as
// a map), without a round trip through JSON.
func CompletedOf(e Event) (JobCompleted, error) {
	p, ok := e.Payload.(JobCompleted)
	if !ok {
		return ReadCompleted(e.Data)
	}
	if !p.Several {
		p.FailedModels = nil
	}
	p.Several, p.Results = false, nil
	if !p.Fused {
		p.Fusion, p.SourceModels = nil, nil
	} else if _, isMap := p.Fusion.(map[string]any); !isMap && p.Fusion != nil {
		var m map[string]any
		if err := readData(map[string]any{"fusion": p.Fusion}, &struct {
			Fusion *map[string]any `json:"fusion"`
		}{&m}); err != nil {
			return JobCompleted{}, err
		}
		p.Fusion = m
	}
	return p, nil
}

// EndedOf is ReadEnded for event e: when e was built in this process from a
// terminal payload, that payload's ending, without a round trip through
// JSON.
func EndedOf(e Event) (Ended, error) {
	switch p := e.Payload.(type) {
	case JobCompleted:
		return Ended{State: Completed}, nil
	case JobFailed:
		return Ended{State: Failed, Code: p.Code, Message: p.Msg}, nil
	case JobCancelled:
		return Ended{State: Cancelled, Reason: p.Reason}, nil
	}
	return ReadEnded(e.Data)
}
