package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// ambiguityReport is the AmbiguityCheckResponse as a client reads it.
type ambiguityReport struct {
	AnalyzedCount int `json:"analyzed_count"`
	Findings      []struct {
		Path                 string   `json:"path"`
		Kind                 string   `json:"kind"`
		Level                string   `json:"level"`
		Interpretations      []string `json:"interpretations"`
		Note                 string   `json:"note"`
		SuggestedNames       []string `json:"suggested_names"`
		SuggestedDescription string   `json:"suggested_description"`
	} `json:"findings"`
	IdentityScoping []struct {
		Path                string   `json:"path"`
		Mixed               bool     `json:"mixed"`
		EntityFields        []string `json:"entity_fields"`
		PairFields          []string `json:"pair_fields"`
		SuggestedEntityName string   `json:"suggested_entity_name"`
	} `json:"identity_scoping"`
	Summary  map[string]int `json:"summary"`
	RecordID *string        `json:"record_id"`
	SchemaID *string        `json:"schema_id"`
	Schema   obj            `json:"schema"`
	Model    *string        `json:"model"`
	UpToDate bool           `json:"up_to_date"`
}

// TestAnalyzeSample: the stateless report on a sample, stored as a record,
// with the sandbox answering (no provider configured).
func TestAnalyzeSample(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("analyze@example.com")
			editor := s.newKey(ten.token, "editor")
			sample := obj{"name": "Acme", "size": "large", "value": 3, "board": []obj{{"full_name": "Ann", "role": "chair"}}}
			sent, _ := json.Marshal(sample)

			t.Run("report", func(t *testing.T) {
				is := is.New(t)
				var rep ambiguityReport
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": sample, "protected_fields": []string{"value"}}, &rep), 200)
				is.Equal(rep.AnalyzedCount, 6) // board, board.full_name, board.role, name, size, value
				is.Equal(len(rep.Findings), 2)
				is.Equal(rep.Findings[0].Path, "size")
				is.Equal(rep.Findings[0].Kind, "ambiguous")
				is.Equal(rep.Findings[0].Level, "high")
				is.True(len(rep.Findings[0].Interpretations) >= 2)
				is.True(len(rep.Findings[0].SuggestedNames) >= 1)
				is.Equal(rep.Findings[1].Path, "value")
				is.Equal(len(rep.Findings[1].SuggestedNames), 0) // protected: flagged, no rename
				is.Equal(rep.Summary["high"], 2)
				is.Equal(len(rep.IdentityScoping), 1)
				is.Equal(rep.IdentityScoping[0].Path, "board")
				is.Equal(rep.IdentityScoping[0].EntityFields, []string{"full_name"})
				is.Equal(rep.IdentityScoping[0].PairFields, []string{"role"})
				is.True(rep.IdentityScoping[0].Mixed)
				is.Equal(*rep.Model, "sandbox::echo") // auto
				is.True(rep.SchemaID == nil && rep.Schema == nil)

				// The record: the sample as sent, the report as answered.
				var rec struct {
					Type             string          `json:"type"`
					EntityData       json.RawMessage `json:"entity_data"`
					StructuredOutput ambiguityReport `json:"structured_output"`
				}
				is.Equal(s.call("GET", "/api/records/"+*rep.RecordID, editor, nil, &rec), 200)
				is.Equal(rec.Type, "ambiguity_analysis")
				is.Equal(string(rec.EntityData), string(sent))
				is.Equal(len(rec.StructuredOutput.Findings), 2)
				var list struct {
					Total int `json:"total"`
				}
				is.Equal(s.call("GET", "/api/records?type=ambiguity_analysis", editor, nil, &list), 200)
				is.Equal(list.Total, 1)
			})

			t.Run("nothing ambiguous", func(t *testing.T) {
				is := is.New(t)
				var rep ambiguityReport
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": obj{"name": "Acme", "website": "acme.com"}, "model": "sandbox::alt"}, &rep), 200)
				is.Equal(len(rep.Findings), 0)
				is.Equal(len(rep.IdentityScoping), 0)
				is.Equal(rep.AnalyzedCount, 2)
			})

			t.Run("an invalid answer is retried with the validator's message", func(t *testing.T) {
				is := is.New(t)
				var rep ambiguityReport
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": sample, "model": "sandbox::flaky"}, &rep), 200)
				is.Equal(len(rep.Findings), 2)
			})

			t.Run("refusals store nothing", func(t *testing.T) {
				is := is.New(t)
				var before struct {
					Total int `json:"total"`
				}
				s.call("GET", "/api/records", editor, nil, &before)
				var e struct{ Code, Field string }
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": sample, "model": "sandbox::broken"}, &e), 502)
				is.Equal(e.Code, "model_output_invalid")
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": obj{}}, &e), 400)
				is.Equal(e.Field, "sample_json")
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": []int{1}}, &e), 400)
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": sample, "model": "nope::x"}, &e), 400)
				is.Equal(e.Code, "invalid_model")
				is.Equal(s.call("POST", "/api/schema/analyze-sample", editor, obj{"sample_json": sample, "protected_fields": []string{""}}, &e), 400)
				is.Equal(e.Field, "protected_fields.0")
				var after struct {
					Total int `json:"total"`
				}
				s.call("GET", "/api/records", editor, nil, &after)
				is.Equal(after.Total, before.Total)
			})
		})
	}
}

// analyzedSchema has two obviously ambiguous names, one of them inside a
// definition, and a mixed relationship site.
const analyzedSchema = `{
  "type": "object",
  "title": "Company",
  "properties": {
    "name": {"type": "string"},
    "size": {"type": "string", "description": "How big it is"},
    "board": {"type": "array", "items": {"$ref": "#/$defs/Seat"}}
  },
  "$defs": {"Seat": {"type": "object", "properties": {"full_name": {"type": "string"}, "role": {"type": "string"}, "status": {"type": "string"}}}}
}`

// TestAnalyzeSavedSchema: the check writes its verdicts into the working
// copy, is not repeated on an unchanged schema unless forced, and the
// schema still enriches.
func TestAnalyzeSavedSchema(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("saved-analyze@example.com")
			id := s.createSchema(ten.key, "Company", analyzedSchema)
			var before struct {
				UpdatedAt time.Time `json:"updated_at"`
			}
			is.Equal(s.call("GET", "/api/schema/saved/"+id, ten.key, nil, &before), 200)
			clockPast(before.UpdatedAt) // the analysis's update shows in updated_at

			var rep ambiguityReport
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/analyze", ten.key, nil, &rep), 200)
			is.Equal(*rep.SchemaID, id)
			is.True(rep.RecordID != nil)
			is.True(!rep.UpToDate)
			is.Equal(rep.AnalyzedCount, 6)
			is.Equal(len(rep.Findings), 2)
			is.Equal(rep.Findings[0].Path, "board.status")
			is.Equal(rep.Findings[1].Path, "size")
			is.Equal(rep.Findings[1].SuggestedDescription, "Number of employees of the Company.")
			is.Equal(len(rep.IdentityScoping), 1)

			// The verdicts are in the saved working copy.
			var got struct {
				SchemaContent obj       `json:"schema_content"`
				UpdatedAt     time.Time `json:"updated_at"`
			}
			is.Equal(s.call("GET", "/api/schema/saved/"+id, ten.key, nil, &got), 200)
			is.True(got.UpdatedAt.After(before.UpdatedAt))
			props := got.SchemaContent["properties"].(map[string]any)
			amb := props["size"].(map[string]any)["ambiguity"].(map[string]any)
			is.Equal(amb["suggested_description"], "Number of employees of the Company.")
			is.Equal(amb["level"], "high")
			is.Equal(amb["kind"], "ambiguous")
			is.True(props["name"].(map[string]any)["ambiguity"] == nil)
			seat := got.SchemaContent["$defs"].(map[string]any)["Seat"].(map[string]any)["properties"].(map[string]any)
			is.True(seat["status"].(map[string]any)["ambiguity"] != nil)
			scoping := props["board"].(map[string]any)["identity_scoping"].(map[string]any)
			is.Equal(scoping["pair_fields"], []any{"role"})
			is.Equal(rep.Schema["properties"], got.SchemaContent["properties"]) // the answer carries the updated document

			// Unchanged: the stored verdicts, no new check.
			var again ambiguityReport
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/analyze", ten.key, nil, &again), 200)
			is.True(again.UpToDate)
			is.True(again.RecordID == nil)
			is.Equal(len(again.Findings), 2)
			is.Equal(again.Findings[1].SuggestedDescription, "Number of employees of the Company.")
			// Forced: checked again, a new record.
			var forced ambiguityReport
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/analyze?force=true&model=sandbox::alt", ten.key, nil, &forced), 200)
			is.True(!forced.UpToDate)
			is.True(forced.RecordID != nil && *forced.RecordID != *rep.RecordID)
			is.Equal(*forced.Model, "sandbox::alt")

			// The annotated schema still enriches.
			var res struct {
				RecordID string `json:"record_id"`
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}}, &res), 200)

			var e struct{ Code, Field string }
			is.Equal(s.call("POST", "/api/schema/saved/nope/analyze", ten.key, nil, &e), 404)
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/analyze?force=maybe", ten.key, nil, &e), 400)
			other := s.register("someone-else@example.com")
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/analyze", other.key, nil, &e), 404)
		})
	}
}

// TestScopingSplit: free and stateless.
func TestScopingSplit(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("split@example.com")
	operator := s.newKey(ten.token, "operator")
	samples := []obj{{"name": "Acme", "board": []obj{{"full_name": "Ann", "born": 1970, "role": "chair"}, {"full_name": "Bob", "role": "cfo"}}}}
	var out struct {
		Applied       bool     `json:"applied"`
		EntitySamples []obj    `json:"entity_samples"`
		Paths         []string `json:"paths"`
		Reason        *string  `json:"reason"`
		Schema        obj      `json:"schema"`
	}
	is.Equal(s.call("POST", "/api/schema/scoping-split", operator, obj{"path": "board", "fields": []string{"full_name", "born", "role"},
		"entity_fields": []string{"full_name", "born"}, "entity_name": "Person", "entity_samples": samples,
		"schema": json.RawMessage(`{"type":"object","properties":{"board":{"type":"array","items":{"type":"object","properties":{"full_name":{"type":"string"},"born":{"type":"integer"},"role":{"type":"string"}}}}}}`)}, &out), 200)
	is.True(out.Applied)
	is.True(out.Reason == nil)
	is.Equal(out.Paths, []string{"board.person.born", "board.person.full_name"})
	board := out.EntitySamples[0]["board"].([]any)
	is.Equal(board[0], map[string]any{"role": "chair", "person": map[string]any{"full_name": "Ann", "born": float64(1970)}})
	is.Equal(board[1], map[string]any{"role": "cfo", "person": map[string]any{"full_name": "Bob"}})
	items := out.Schema["properties"].(map[string]any)["board"].(map[string]any)["items"].(map[string]any)
	is.Equal(items["properties"].(map[string]any)["person"], map[string]any{"$ref": "#/$defs/Person"})
	is.True(out.Schema["$defs"].(map[string]any)["Person"] != nil)

	// Not applicable: the reason, the samples as sent.
	is.Equal(s.call("POST", "/api/schema/scoping-split", operator, obj{"path": "nope", "entity_fields": []string{"x"}, "entity_name": "P", "entity_samples": samples}, &out), 200)
	is.True(!out.Applied)
	is.True(out.Reason != nil && *out.Reason != "")
	is.Equal(len(out.EntitySamples[0]["board"].([]any)), 2)
	is.Equal(out.EntitySamples[0]["board"].([]any)[0].(map[string]any)["full_name"], "Ann")

	var e struct{ Code, Field string }
	is.Equal(s.call("POST", "/api/schema/scoping-split", operator, obj{"path": "board", "entity_fields": []string{"x"}, "entity_name": "P", "entity_samples": []any{1}}, &e), 400)
	is.Equal(s.call("POST", "/api/schema/scoping-split", operator, obj{"path": "board", "entity_fields": []string{"x"}, "entity_name": "P"}, &e), 400)
	is.Equal(e.Field, "entity_samples")
	// Nothing stored.
	var recs struct {
		Total int `json:"total"`
	}
	s.call("GET", "/api/records", operator, nil, &recs)
	is.Equal(recs.Total, 0)
}

// TestAnalyzeSampleProvider: through a real (OpenAI-compatible) provider,
// picked by auto: one call carrying the subject and the answer's schema,
// its usage in the ledger and in the record.
func TestAnalyzeSampleProvider(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	cfg := testConfig(backends[1].dsn(t))
	cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
	s := start(t, cfg)
	ten := s.register("analyze-provider@example.com")
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		return `{"findings":[{"path":"size","kind":"ambiguous","level":"medium","interpretations":["headcount","revenue"],` +
			`"note":"which size?","suggested_names":["employee_count"]}],"identity_scoping":[]}`, 200
	})
	var rep ambiguityReport
	is.Equal(s.call("POST", "/api/schema/analyze-sample", ten.key, obj{"sample_json": obj{"name": "Acme", "size": "large"}}, &rep), 200)
	is.Equal(*rep.Model, "local::fake-1")
	is.Equal(len(rep.Findings), 1)
	is.Equal(rep.Findings[0].Note, "which size?")
	is.Equal(fake.Requests(), 1)
	req, _ := fake.LastRequest()
	is.True(strings.Contains(req.Messages[len(req.Messages)-1].Content, `"path":"size"`)) // the subject
	var rec struct {
		InputTokens int `json:"input_tokens"`
	}
	is.Equal(s.call("GET", "/api/records/"+*rep.RecordID, ten.key, nil, &rec), 200)
	is.True(rec.InputTokens > 0)
	entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	is.NoErr(err)
	is.Equal(len(entries), 1)
	is.Equal(entries[0].Model, "local::fake-1")

	// An answer that never fits: 502 after the bounded attempts, nothing stored.
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) { return `{"findings":[{"path":"size"}]}`, 200 })
	var e struct{ Code, Detail string }
	is.Equal(s.call("POST", "/api/schema/analyze-sample", ten.key, obj{"sample_json": obj{"size": "large"}}, &e), 502)
	is.Equal(e.Code, "model_output_invalid")
	is.Equal(fake.Requests(), 4) // 1 + 3 attempts
	last, _ := fake.LastRequest()
	is.True(strings.Contains(last.Messages[len(last.Messages)-1].Content, "rejected")) // the validator's message fed back
	entries, err = s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	is.NoErr(err)
	is.Equal(len(entries), 4) // what the failed analysis spent is in the ledger too
}
