package job_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

// TestSchemaResult: a schema job's end data is written as before the type
// existed (the JSON below is the map the app built), and reads back from it.
func TestSchemaResult(t *testing.T) {
	id := "sch-1"
	doc := map[string]any{"type": "object"}
	for _, tt := range []struct {
		name string
		r    job.SchemaResult
		want string
	}{
		{"generation saved", job.SchemaResult{Model: "openai:gpt-4o", RecordID: "rec-1", Cost: 1500, InputTokens: 10,
			OutputTokens: 20, Suggestions: []string{"s"}, Schema: doc, SchemaID: &id, ProcessingMS: 7,
			Generation: &job.SchemaGeneration{Created: true, ExpertiseCount: 2, SamplePropertyCount: 3}},
			`{"cost":1500,"cost_usd":0.0015,"error_message":null,"expertise_count":2,"input_tokens":10,"model":"openai:gpt-4o","output_tokens":20,"processing_time_ms":7,"record_id":"rec-1","sample_property_count":3,"schema":{"type":"object"},"schema_created":true,"schema_id":"sch-1","success":true,"suggestions":["s"]}`},
		{"generation not saved", job.SchemaResult{Model: "m", RecordID: "rec-2", Schema: doc,
			Generation: &job.SchemaGeneration{}},
			`{"cost":0,"cost_usd":0,"error_message":null,"expertise_count":0,"input_tokens":0,"model":"m","output_tokens":0,"processing_time_ms":0,"record_id":"rec-2","sample_property_count":0,"schema":{"type":"object"},"schema_created":false,"schema_id":null,"success":true,"suggestions":null}`},
		{"edit", job.SchemaResult{Model: "m", RecordID: "rec-3", Cost: 1, Suggestions: []string{}, Schema: doc, SchemaID: &id, ProcessingMS: 9},
			`{"cost":1,"cost_usd":0.000001,"error_message":null,"input_tokens":0,"model":"m","output_tokens":0,"processing_time_ms":9,"record_id":"rec-3","schema":{"type":"object"},"schema_content":{"type":"object"},"schema_id":"sch-1","success":true,"suggestions":[]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b, err := json.Marshal(tt.r.Fields())
			is.NoErr(err)
			is.Equal(string(b), tt.want)
			got, err := job.ReadSchemaResult(tt.r.Fields()) // as published
			is.NoErr(err)
			is.Equal(got, tt.r)
			var back map[string]any
			is.NoErr(json.Unmarshal(b, &back))
			got, err = job.ReadSchemaResult(back) // as read back from a log
			is.NoErr(err)
			is.Equal(got, tt.r)
		})
	}
}

// TestReadSchemaResultRefuses: a result whose values are not of the types
// Fields writes is an error naming the key.
func TestReadSchemaResultRefuses(t *testing.T) {
	for _, m := range []map[string]any{
		{"cost": "1"}, {"model": 3.0}, {"suggestions": []any{1.0}}, {"schema": "x"}, {"schema_created": "yes"},
	} {
		_, err := job.ReadSchemaResult(m)
		is.New(t).True(err != nil)
	}
}
