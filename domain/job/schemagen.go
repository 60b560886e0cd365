package job

import (
	"fmt"

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

// ReadSchemaResult reads a schema job's end data back from its completed
// event's result: the map Fields built, or the same decoded from a log
// (numbers float64, lists []any).
func ReadSchemaResult(result map[string]any) (SchemaResult, error) {
	rd := resultReader{m: result}
	r := SchemaResult{Model: rd.str("model"), RecordID: rd.str("record_id"), Cost: rd.num("cost"),
		InputTokens: int(rd.num("input_tokens")), OutputTokens: int(rd.num("output_tokens")), Suggestions: rd.strs("suggestions"),
		ProcessingMS: rd.num("processing_time_ms")}
	if v, ok := result["schema"]; ok && v != nil {
		r.Schema, _ = v.(map[string]any)
		if r.Schema == nil {
			rd.bad("schema")
		}
	}
	if v, ok := result["schema_id"]; ok && v != nil {
		id := rd.str("schema_id")
		r.SchemaID = &id
	}
	if v, ok := result["schema_created"]; ok && v != nil {
		created, isBool := v.(bool)
		if !isBool {
			rd.bad("schema_created")
		}
		r.Generation = &SchemaGeneration{Created: created, ExpertiseCount: int(rd.num("expertise_count")),
			SamplePropertyCount: int(rd.num("sample_property_count"))}
	}
	return r, rd.err
}

// resultReader reads a result map's values of the types Fields writes or
// a JSON decoder gives; the first key of another type is err.
type resultReader struct {
	m   map[string]any
	err error
}

func (r *resultReader) bad(k string) {
	if r.err == nil {
		r.err = fmt.Errorf("job: schema result: %s is a %T", k, r.m[k])
	}
}

func (r *resultReader) str(k string) string {
	s, ok := r.m[k].(string)
	if !ok && r.m[k] != nil {
		r.bad(k)
	}
	return s
}

func (r *resultReader) num(k string) int64 {
	switch n := r.m[k].(type) {
	case nil:
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	default:
		r.bad(k)
	}
	return 0
}

func (r *resultReader) strs(k string) []string {
	switch l := r.m[k].(type) {
	case nil:
	case []string:
		return l
	case []any:
		out := make([]string, len(l))
		for i, v := range l {
			s, ok := v.(string)
			if !ok {
				r.bad(k)
			}
			out[i] = s
		}
		return out
	default:
		r.bad(k)
	}
	return nil
}
