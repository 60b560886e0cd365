package job

import "github.com/entityenrich/enrich/domain/model"

// The sample generation job's events (REFERENCE.md §1 "Sample generation").
const (
	EventSampleInstanceRoster     EventType = "sample_instance_roster"
	EventSampleInstanceProgress   EventType = "sample_instance_progress"
	EventSampleClarificationPause EventType = "sample_clarification_pause"
)

// SampleInstanceRoster lists the instances a sample job plans to generate.
type SampleInstanceRoster struct {
	Instances []string
}

func (SampleInstanceRoster) EventType() EventType { return EventSampleInstanceRoster }
func (p SampleInstanceRoster) Fields() map[string]any {
	var first any
	if len(p.Instances) > 0 {
		first = p.Instances[0]
	}
	return map[string]any{"status": string(Running), "total": len(p.Instances), "instances": p.Instances, "first_instance": first}
}

// SampleInstanceProgress says one more sample is done; it carries the sample,
// so that a worker that takes the job over does not generate it again.
type SampleInstanceProgress struct {
	Completed, Total, Index   int
	Instance                  string
	Sample                    map[string]any
	InputTokens, OutputTokens int
	Cost                      int64
}

func (SampleInstanceProgress) EventType() EventType { return EventSampleInstanceProgress }
func (p SampleInstanceProgress) Fields() map[string]any {
	return map[string]any{"status": string(Running), "completed": p.Completed, "total": p.Total, "index": p.Index,
		"instance": p.Instance, "sample": p.Sample, "input_tokens": p.InputTokens, "output_tokens": p.OutputTokens,
		"cost": p.Cost, "cost_usd": model.USD(p.Cost)}
}

// SampleOption is one option of a clarification question.
type SampleOption struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// SampleQuestion is one clarification question of a sample job.
type SampleQuestion struct {
	ID              string         `json:"id"`
	Label           string         `json:"label"`
	Text            string         `json:"text"`
	Options         []SampleOption `json:"options"`
	AllowMultiple   bool           `json:"allow_multiple"`
	DefaultOptionID string         `json:"default_option_id,omitempty"`
}

// SampleClarificationPause pauses a sample job on open questions; POST
// /api/llm/continue/{job_id} with {answers} resumes it.
type SampleClarificationPause struct {
	EntityTitle    string
	Questions      []SampleQuestion
	Round          int
	SourceMode     string
	TimeoutSeconds int
}

func (SampleClarificationPause) EventType() EventType { return EventSampleClarificationPause }
func (p SampleClarificationPause) Fields() map[string]any {
	qs := make([]map[string]any, len(p.Questions))
	for i, q := range p.Questions {
		opts := make([]map[string]any, len(q.Options))
		for k, o := range q.Options {
			opts[k] = map[string]any{"id": o.ID, "label": o.Label}
		}
		m := map[string]any{"id": q.ID, "label": q.Label, "text": q.Text, "options": opts, "allow_multiple": q.AllowMultiple,
			"default_option_id": nil}
		if q.DefaultOptionID != "" {
			m["default_option_id"] = q.DefaultOptionID
		}
		qs[i] = m
	}
	return map[string]any{"status": string(Paused), "is_paused": true, "entity_title": p.EntityTitle, "questions": qs,
		"round": p.Round, "source_mode": p.SourceMode, "timeout_seconds": p.TimeoutSeconds}
}

// SamplesCompleted is the sample job's model_completed event: the samples
// (the reference's client reads them from this event, "samples" in it).
type SamplesCompleted struct {
	Model                     string
	Samples                   []map[string]any
	Requested                 int
	Note                      string
	InputTokens, OutputTokens int
	Cost, ProcessingMS        int64
	Applied                   Answers
}

func (SamplesCompleted) EventType() EventType { return EventModelCompleted }
func (p SamplesCompleted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "success": true, "cancelled": false,
		"partial_success": false, "samples": p.Samples, "samples_requested": p.Requested, "samples_note": p.Note,
		"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "cost": p.Cost, "cost_usd": model.USD(p.Cost),
		"processing_time_ms": p.ProcessingMS, "error_message": nil}
}
