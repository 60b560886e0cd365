package job

import (
	"encoding/json"

	"github.com/entityenrich/enrich/domain/model"
)

// Types of the schema jobs: generation from samples and AI edit. Their
// job_type on the wire is the type itself.
const (
	TypeSchemaGeneration Type = "schema_generation"
	TypeSchemaEdit       Type = "schema_edit"
)

// SchemaModelStarted opens the model's run of a schema job: model_started
// without enrichment's strategy and expertise counts.
type SchemaModelStarted struct {
	Model   string
	Sandbox bool
}

func (SchemaModelStarted) EventType() EventType { return EventModelStarted }
func (p SchemaModelStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "model": p.Model, "sandbox": p.Sandbox}
}

// SchemaResult is a schema job's end data: the completed event's result and
// the job's stored result. Generation is set on a generation, nil on an edit
// (whose schema is also written as schema_content).
type SchemaResult struct {
	Model        string
	RecordID     string
	Cost         int64
	InputTokens  int
	OutputTokens int
	Suggestions  []string
	Schema       map[string]any
	// SchemaID is the saved schema: nil when a generation was not saved.
	SchemaID     *string
	ProcessingMS int64
	Generation   *SchemaGeneration
}

// SchemaGeneration is what only a generation reports.
type SchemaGeneration struct {
	// Created is false when a saved schema with the same content was reused.
	Created             bool
	ExpertiseCount      int
	SamplePropertyCount int
}

// Fields is the result's wire form (a success: error_message is null).
func (r SchemaResult) Fields() map[string]any {
	var schemaID any
	if r.SchemaID != nil {
		schemaID = *r.SchemaID
	}
	m := map[string]any{"success": true, "model": r.Model, "record_id": r.RecordID, "cost": r.Cost,
		"cost_usd": model.USD(r.Cost), "input_tokens": r.InputTokens, "output_tokens": r.OutputTokens,
		"suggestions": r.Suggestions, "error_message": nil, "schema": r.Schema, "schema_id": schemaID,
		"processing_time_ms": r.ProcessingMS}
	if g := r.Generation; g != nil {
		m["schema_created"], m["expertise_count"], m["sample_property_count"] = g.Created, g.ExpertiseCount, g.SamplePropertyCount
	} else {
		m["schema_content"] = r.Schema
	}
	return m
}

// schemaResultData reads Fields back (the event's result as published, or as
// decoded from the log).
type schemaResultData struct {
	Model               string         `json:"model"`
	RecordID            string         `json:"record_id"`
	Cost                int64          `json:"cost"`
	InputTokens         int            `json:"input_tokens"`
	OutputTokens        int            `json:"output_tokens"`
	Suggestions         []string       `json:"suggestions"`
	Schema              map[string]any `json:"schema"`
	SchemaID            *string        `json:"schema_id"`
	ProcessingMS        int64          `json:"processing_time_ms"`
	SchemaCreated       *bool          `json:"schema_created"`
	ExpertiseCount      int            `json:"expertise_count"`
	SamplePropertyCount int            `json:"sample_property_count"`
}

// ReadSchemaResult reads a schema job's end data from its completed event's
// result (Fields, as published or decoded from the log).
func ReadSchemaResult(result map[string]any) (SchemaResult, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return SchemaResult{}, err
	}
	var d schemaResultData
	if err := json.Unmarshal(b, &d); err != nil {
		return SchemaResult{}, err
	}
	r := SchemaResult{Model: d.Model, RecordID: d.RecordID, Cost: d.Cost, InputTokens: d.InputTokens,
		OutputTokens: d.OutputTokens, Suggestions: d.Suggestions, Schema: d.Schema, SchemaID: d.SchemaID,
		ProcessingMS: d.ProcessingMS}
	if d.SchemaCreated != nil {
		r.Generation = &SchemaGeneration{Created: *d.SchemaCreated, ExpertiseCount: d.ExpertiseCount,
			SamplePropertyCount: d.SamplePropertyCount}
	}
	return r, nil
}
