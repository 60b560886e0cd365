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

// twoCompanies are two samples of one entity type: the first gives its
// industry in two languages, the second has no founded year and a ticker.
var twoCompanies = []obj{
	{"name": "Acme", "industry": obj{"en": "Anvils", "fr": "Enclumes"}, "founded": 1947, "website": "https://acme.example",
		"offices": []obj{{"city": "Paris", "employees": 12}, {"city": "Lyon"}}},
	{"name": "Globex", "industry": "Energy", "ticker": "GBX", "website": "https://globex.example",
		"offices": []obj{{"city": "Rome", "employees": 40}}},
}

func prop(t *testing.T, doc obj, path ...string) obj {
	t.Helper()
	n := doc
	for _, p := range path {
		props, _ := n["properties"].(obj)
		if p == "[]" {
			n, _ = n["items"].(obj)
		} else {
			n, _ = props[p].(obj)
		}
		if n == nil {
			t.Fatalf("no property %v in %v", path, doc)
		}
	}
	return n
}

// TestSchemaGeneration generates schemas from samples over HTTP: the free
// sample check, the stream followed to completed, the blocking variant,
// deduplicated saves, the loop repairing an invalid first answer, a model
// that never answers a valid schema, and the records.
func TestSchemaGeneration(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("gen@example.com")
			editor, operator := s.newKey(ten.token, "editor"), s.newKey(ten.token, "operator")

			// The free check: fine samples, then two entity types.
			var conf struct {
				OK                bool     `json:"ok"`
				CommonalityErrors []string `json:"commonality_errors"`
				Errors            []string `json:"errors"`
				Sites             []obj    `json:"sites"`
			}
			is.Equal(s.call("POST", "/api/schema/samples/conformance", operator, obj{"entity_samples": twoCompanies}, &conf), 200)
			is.True(conf.OK)
			is.Equal(len(conf.Sites), 2) // the root and offices[]
			is.Equal(conf.Sites[1]["path"], "offices[]")
			is.Equal(conf.Sites[1]["always_present"], []any{"city"})
			mixed := []obj{{"name": "Acme", "industry": "Anvils", "ceo": "W. E. Coyote"}, {"title": "Dune", "isbn": "978", "pages": 412, "author": "Herbert"}}
			is.Equal(s.call("POST", "/api/schema/samples/conformance", operator, obj{"entity_samples": mixed}, &conf), 200)
			is.True(!conf.OK)
			is.Equal(len(conf.CommonalityErrors), 1) // sample 1 has 3 of the 7 fields; sample 2 has 4
			is.Equal(s.call("POST", "/api/schema/samples/conformance", operator, obj{"entity_samples": mixed, "sample_commonality_threshold": 0}, &conf), 200)
			is.True(conf.OK)
			// A bare sample whose keys look like language codes is an entity, not a language map.
			is.Equal(s.call("POST", "/api/schema/samples/conformance", operator, obj{"entity_samples": obj{"en": "x", "fr": "y"}}, &conf), 200)
			is.True(conf.OK)

			// Generation needs the editor role.
			var e struct{ Code, Field, Detail string }
			is.Equal(s.call("POST", "/api/schema/generate/stream", operator, obj{"entity_samples": twoCompanies}, &e), 403)

			// Stream: follow it to completed.
			var started struct {
				JobID   string `json:"job_id"`
				Message string `json:"message"`
			}
			is.Equal(s.call("POST", "/api/schema/generate/stream", editor, obj{"entity_samples": twoCompanies, "model": "sandbox::echo"}, &started), 200)
			is.True(strings.Contains(started.Message, started.JobID))
			evs := s.follow(editor, started.JobID, "")
			is.Equal(names(evs), []string{"model_started", "attempt:schema_generation", "model_completed", "completed"})
			is.Equal(evs[0].Data["job_type"], "schema_generation")
			end := last(evs).Data
			res := end["result"].(obj)
			is.Equal(res["success"], true)
			is.Equal(res["model"], "sandbox::echo")
			is.Equal(res["schema_created"], true)
			schemaID, _ := res["schema_id"].(string)
			recordID, _ := res["record_id"].(string)
			is.True(schemaID != "" && recordID != "")
			is.Equal(end["record_id"], recordID)
			doc := res["schema"].(obj)
			is.Equal(doc["type"], "object")
			is.Equal(doc["title"], "Company")
			is.Equal(prop(t, doc, "name")["identifying"], true)
			is.Equal(prop(t, doc, "name")["examples"], []any{"Acme", "Globex"})
			is.Equal(prop(t, doc, "name")["type"], "string")
			is.Equal(prop(t, doc, "founded")["type"], []any{"integer", "null"}) // missing in a sample
			is.Equal(prop(t, doc, "ticker")["type"], []any{"string", "null"})
			is.Equal(prop(t, doc, "industry")["multilingual"], true) // a language map in a sample
			is.Equal(prop(t, doc, "industry")["examples"], []any{"Anvils", "Energy"})
			is.Equal(prop(t, doc, "website")["format"], "uri")
			is.Equal(prop(t, doc, "offices", "[]", "city")["identifying"], true)
			is.Equal(prop(t, doc, "offices", "[]", "employees")["type"], []any{"integer", "null"})
			is.True(len(res["suggestions"].([]any)) > 0)

			// Saved: the schema reads back as generated.
			var saved struct {
				Name          string `json:"name"`
				SchemaContent obj    `json:"schema_content"`
			}
			is.Equal(s.call("GET", "/api/schema/saved/"+schemaID, operator, nil, &saved), 200)
			is.Equal(saved.Name, "Company")
			is.Equal(saved.SchemaContent, doc)

			// Sync: the same samples give the same schema, saved once.
			var syncRes obj
			is.Equal(s.call("POST", "/api/schema/generate/sync", editor, obj{"entity_samples": twoCompanies, "model": "sandbox::echo", "timeout_seconds": 60}, &syncRes), 200)
			is.Equal(syncRes["schema_id"], schemaID)
			is.Equal(syncRes["schema_created"], false)
			is.Equal(syncRes["schema"], doc)
			is.True(syncRes["record_id"] != recordID)
			is.True(syncRes["job_id"] != "")

			// auto, one bare sample, not saved.
			is.Equal(s.call("POST", "/api/schema/generate/sync", editor, obj{"entity_samples": obj{"title": "Dune", "isbn": "978-0441013593"}, "save_schema": false, "generate_semantic_ids": true}, &syncRes), 200)
			is.Equal(syncRes["schema_id"], nil)
			is.Equal(syncRes["model"], "sandbox::echo")
			is.Equal(prop(t, syncRes["schema"].(obj), "title")["identifying"], true)
			is.Equal(prop(t, syncRes["schema"].(obj), "semantic_id")["semantic_id"], true)
			var list struct{ Total int }
			is.Equal(s.call("GET", "/api/schema/saved", editor, nil, &list), 200)
			is.Equal(list.Total, 1)

			// auto names its pick.
			is.Equal(s.call("POST", "/api/schema/generate/stream", editor, obj{"entity_samples": twoCompanies, "model": "auto"}, &started), 200)
			evs = s.follow(editor, started.JobID, "")
			is.Equal(evs[0].Name, "model_auto_selected")
			is.Equal(evs[0].Data["task_type"], "schema_generation")

			// flaky: the first answer breaks the rules, the loop feeds that back, the retry repairs it.
			is.Equal(s.call("POST", "/api/schema/generate/stream", editor, obj{"entity_samples": twoCompanies, "model": "sandbox::flaky", "save_schema": false}, &started), 200)
			evs = s.follow(editor, started.JobID, "")
			attempts := find(evs, "attempt")
			is.Equal(len(attempts), 2)
			is.Equal(attempts[1].Data["attempt"], 2.0)
			is.Equal(attempts[1].Data["max_attempts"], 6.0)
			reason, _ := attempts[1].Data["reason"].(string)
			is.True(strings.HasPrefix(reason, "model_output_invalid"))
			is.True(strings.Contains(reason, "at least one property"))
			is.Equal(last(evs).Name, "completed")
			flakyJob := started.JobID

			// broken: never valid, failed after 6 attempts; the sync variant answers 502.
			is.Equal(s.call("POST", "/api/schema/generate/stream", editor, obj{"entity_samples": twoCompanies, "model": "sandbox::broken"}, &started), 200)
			evs = s.follow(editor, started.JobID, "")
			is.Equal(len(find(evs, "attempt")), 6)
			is.Equal(last(evs).Name, "failed")
			is.Equal(last(evs).Data["error_code"], "model_output_invalid")
			is.Equal(evs[len(evs)-2].Name, "error")
			// Every call is in the usage ledger, with the job's end.
			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
			is.NoErr(err)
			perJob := map[string]int{}
			for _, en := range entries {
				perJob[en.JobID]++
				is.True(en.Cost > 0)
			}
			is.Equal(perJob[flakyJob], 2)
			is.Equal(perJob[started.JobID], 6)
			var fail struct {
				Code      string `json:"code"`
				Detail    string `json:"detail"`
				Retryable bool   `json:"retryable"`
			}
			is.Equal(s.call("POST", "/api/schema/generate/sync", editor, obj{"entity_samples": twoCompanies, "model": "sandbox::broken"}, &fail), 502)
			is.Equal(fail.Code, "model_output_invalid")
			is.True(fail.Retryable)
			is.True(strings.Contains(fail.Detail, "6 attempts failed"))

			// Refusals before any job.
			for _, tc := range []struct {
				body         obj
				status       int
				code, field  string
				detailSubstr string
			}{
				{obj{"entity_samples": mixed}, 400, "sample_commonality_failed", "entity_samples", "do not describe one entity type"},
				{obj{"entity_samples": []obj{{"name": "A", "offices": []obj{{"city": "P"}, {"town": "R"}}}}}, 400, "sample_field_conformance_failed", "entity_samples", "share no field"},
				{obj{"entity_samples": []obj{}}, 400, "invalid_request", "entity_samples", ""},
				{obj{"entity_samples": []any{obj{"a": 1}, 2}}, 400, "invalid_request", "entity_samples.1", ""},
				{obj{"entity_samples": twoCompanies, "sample_commonality_threshold": 1.5}, 400, "invalid_request", "sample_commonality_threshold", ""},
				{obj{"entity_samples": twoCompanies, "attachment_ids": []string{"att_1"}}, 400, "attachment_not_found", "attachment_ids.0", ""},
				{obj{"entity_samples": twoCompanies, "language": "xx"}, 400, "invalid_language", "language", ""},
				{obj{"entity_samples": twoCompanies, "model": "nope::x"}, 400, "invalid_model", "model", ""},
				{obj{"entity_samples": twoCompanies, "extra_instructions": "x"}, 400, "invalid_request", "extra_instructions", ""},
			} {
				var e struct{ Code, Field, Detail string }
				is.Equal(s.call("POST", "/api/schema/generate/stream", editor, tc.body, &e), tc.status)
				is.Equal(e.Code, tc.code)
				is.Equal(e.Field, tc.field)
				is.True(strings.Contains(e.Detail, tc.detailSubstr))
			}
			// Not strict: drifting items pass.
			is.Equal(s.call("POST", "/api/schema/generate/sync", editor, obj{"entity_samples": []obj{{"name": "A", "offices": []obj{{"city": "P"}, {"town": "R"}}}},
				"strict_field_conformance": false, "save_schema": false, "language": "fr", "sample_inputs": obj{"entity_type": "company"}}, &syncRes), 200)

			// The records: one per completed generation.
			var recs struct {
				Records []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					SchemaID string `json:"schema_id"`
					Model    string `json:"model"`
				} `json:"records"`
				Total int `json:"total"`
			}
			is.Equal(s.call("GET", "/api/records?type=schema_generation", operator, nil, &recs), 200)
			is.Equal(recs.Total, 6) // stream, sync, bare, auto, flaky, not strict
			var rec struct {
				Type             string `json:"type"`
				SchemaID         string `json:"schema_id"`
				JobID            string `json:"job_id"`
				EntityData       []obj  `json:"entity_data"`
				StructuredOutput obj    `json:"structured_output"`
				Cost             int64  `json:"cost"`
			}
			is.Equal(s.call("GET", "/api/records/"+recordID, operator, nil, &rec), 200)
			is.Equal(rec.Type, "schema_generation")
			is.Equal(rec.SchemaID, schemaID)
			is.Equal(len(rec.EntityData), 2)
			is.Equal(rec.StructuredOutput, doc)
			is.True(rec.Cost > 0)
			is.Equal(s.call("GET", "/api/records?type=enrichment", operator, nil, &recs), 200)
			is.Equal(recs.Total, 0)

			// Another organization cannot follow the job.
			other := s.register("gen-other@example.com")
			is.Equal(s.call("GET", "/api/llm/stream/"+started.JobID, other.key, nil, nil), 404)
			is.Equal(s.call("GET", "/api/schema/saved/"+schemaID, other.key, nil, nil), 404)
		})
	}
}

// TestSchemaGenerationChecksBeforeSpend: samples refused by the checks
// never reach the provider (the fake server counts zero calls); valid ones
// do, and the usage is in the ledger.
func TestSchemaGenerationChecksBeforeSpend(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			answer, _ := json.Marshal(obj{"schema": obj{"type": "object", "title": "Company",
				"properties": obj{"name": obj{"type": "string", "description": "Name.", "identifying": true}}}, "suggestions": []string{}})
			fake := fakeopenai.New(t, fakeopenai.WithResponder(func(fakeopenai.ChatRequest) (string, int) { return string(answer), 0 }))
			cfg := testConfig(b.dsn(t))
			cfg.Sandbox = false
			cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
			s := start(t, cfg)
			ten := s.register("spend@example.com")
			mixed := []obj{{"name": "Acme", "industry": "Anvils", "ceo": "W. E. Coyote"}, {"title": "Dune", "isbn": "978", "pages": 412, "author": "Herbert"}}
			drift := []obj{{"name": "A", "offices": []obj{{"city": "P"}, {"town": "R"}}}}
			for _, body := range []obj{{"entity_samples": mixed}, {"entity_samples": drift}, {"entity_samples": mixed, "model": "local::fake-1"}} {
				is.Equal(s.call("POST", "/api/schema/generate/sync", ten.key, body, nil), 400)
				is.Equal(s.call("POST", "/api/schema/generate/stream", ten.key, body, nil), 400)
			}
			is.Equal(s.call("POST", "/api/schema/samples/conformance", ten.key, obj{"entity_samples": mixed}, nil), 200)
			is.Equal(fake.Requests(), 0)
			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
			is.NoErr(err)
			is.Equal(len(entries), 0)

			var res obj
			is.Equal(s.call("POST", "/api/schema/generate/sync", ten.key, obj{"entity_samples": twoCompanies}, &res), 200)
			is.Equal(res["model"], "local::fake-1")
			is.Equal(prop(t, res["schema"].(obj), "name")["examples"], []any{"Acme", "Globex"})
			is.Equal(fake.Requests(), 1)
		})
	}
}

// TestSchemaAIEdit edits saved schemas with instructions over HTTP, through
// the stream and the blocking route, on memory and PostgreSQL.
func TestSchemaAIEdit(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("edit@example.com")
			editor, operator := s.newKey(ten.token, "editor"), s.newKey(ten.token, "operator")
			id := s.createSchema(editor, "Company", `{"type":"object","required":["name","industry"],
				"properties":{"name":{"type":"string","identifying":true},"industry":{"type":"string"},"ceo":{"type":"string"}}}`)
			var before struct {
				UpdatedAt string `json:"updated_at"`
			}
			s.call("GET", "/api/schema/saved/"+id, editor, nil, &before)

			// Stream.
			var started struct {
				JobID string `json:"job_id"`
			}
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt/stream", operator, obj{"prompt": "add a field founded_year of type number"}, nil), 403)
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt/stream", editor, obj{"prompt": "add a field founded_year of type number", "model": "sandbox::echo"}, &started), 200)
			evs := s.follow(editor, started.JobID, "")
			is.Equal(names(evs), []string{"model_started", "attempt:schema_edit", "model_completed", "completed"})
			is.Equal(evs[0].Data["job_type"], "schema_edit")
			res := last(evs).Data["result"].(obj)
			is.Equal(res["schema_id"], id)
			is.Equal(prop(t, res["schema_content"].(obj), "founded_year")["type"], "number")
			var saved struct {
				SchemaContent obj    `json:"schema_content"`
				UpdatedAt     string `json:"updated_at"`
			}
			is.Equal(s.call("GET", "/api/schema/saved/"+id, operator, nil, &saved), 200)
			is.Equal(prop(t, saved.SchemaContent, "founded_year")["type"], "number")
			is.Equal(saved.SchemaContent, res["schema_content"])
			is.True(saved.UpdatedAt > before.UpdatedAt)

			// Blocking: rename and remove, the answer is the saved working copy.
			var out struct {
				SchemaContent obj      `json:"schema_content"`
				Suggestions   []string `json:"suggestions"`
				SchemaID      string   `json:"schema_id"`
				RecordID      string   `json:"record_id"`
			}
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt", editor, obj{"prompt": "rename industry to sector; remove ceo"}, &out), 200)
			is.Equal(out.SchemaID, id)
			props := out.SchemaContent["properties"].(obj)
			is.True(props["sector"] != nil && props["industry"] == nil && props["ceo"] == nil)
			is.Equal(out.SchemaContent["required"], []any{"name", "sector"})
			is.Equal(len(out.Suggestions), 0)
			s.call("GET", "/api/schema/saved/"+id, operator, nil, &saved)
			is.Equal(saved.SchemaContent, out.SchemaContent)

			// An instruction the sandbox does not follow leaves the schema as it is.
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt", editor, obj{"prompt": "make it better"}, &out), 200)
			is.Equal(out.SchemaContent, saved.SchemaContent)
			is.Equal(len(out.Suggestions), 1)

			// flaky: repaired on the second attempt.
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt/stream", editor, obj{"prompt": "add a field ticker", "model": "sandbox::flaky"}, &started), 200)
			evs = s.follow(editor, started.JobID, "")
			is.Equal(len(find(evs, "attempt")), 2)
			is.Equal(last(evs).Name, "completed")
			// broken: the working copy is untouched.
			var e struct{ Code string }
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt", editor, obj{"prompt": "add a field x", "model": "sandbox::broken"}, &e), 502)
			is.Equal(e.Code, "model_output_invalid")
			s.call("GET", "/api/schema/saved/"+id, operator, nil, &saved)
			is.True(prop(t, saved.SchemaContent, "ticker") != nil)
			is.True(saved.SchemaContent["properties"].(obj)["x"] == nil)

			// A rule the saved schema already broke (an untyped property) does not fail an edit.
			loose := s.createSchema(editor, "Loose", `{"type":"object","properties":{"legacy":{"description":"untyped"}}}`)
			is.Equal(s.call("POST", "/api/schema/saved/"+loose+"/prompt", editor, obj{"prompt": "add a field y"}, &out), 200)
			is.True(out.SchemaContent["properties"].(obj)["y"] != nil)

			// Refusals.
			other := s.register("edit-other@example.com")
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt/stream", other.key, obj{"prompt": "remove name"}, nil), 404)
			is.Equal(s.call("POST", "/api/schema/saved/nope/prompt", editor, obj{"prompt": "remove name"}, nil), 404)
			var bad struct{ Code, Field string }
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt", editor, obj{"prompt": ""}, &bad), 400)
			is.Equal(bad.Field, "prompt")
			is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt", editor, obj{"prompt": "x", "attachment_ids": []string{"a"}}, &bad), 400)
			is.Equal(bad.Code, "attachment_not_found")

			// The records: one per completed edit.
			var recs struct {
				Records []struct {
					Type     string `json:"type"`
					SchemaID string `json:"schema_id"`
				} `json:"records"`
				Total int `json:"total"`
			}
			is.Equal(s.call("GET", "/api/records?type=schema_edit", operator, nil, &recs), 200)
			is.Equal(recs.Total, 5)
			for _, r := range recs.Records {
				is.Equal(r.Type, "schema_edit")
				is.True(r.SchemaID == id || r.SchemaID == loose)
			}
		})
	}
}

// TestSchemaJobsCancel: a blocking generation that outlives timeout_seconds
// is cancelled (504 timeout), and a streamed edit can be cancelled; the
// working copy is then untouched.
func TestSchemaJobsCancel(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("cancel@example.com")
	var e struct{ Code, Field string }
	is.Equal(s.call("POST", "/api/schema/generate/sync", ten.key, obj{"entity_samples": twoCompanies, "model": "sandbox::slow", "timeout_seconds": 1}, &e), 504)
	is.Equal(e.Code, "timeout")
	is.Equal(e.Field, "timeout_seconds")

	id := s.createSchema(ten.key, "Company", `{"type":"object","properties":{"name":{"type":"string"}}}`)
	var started struct {
		JobID string `json:"job_id"`
	}
	is.Equal(s.call("POST", "/api/schema/saved/"+id+"/prompt/stream", ten.key, obj{"prompt": "add a field x", "model": "sandbox::slow"}, &started), 200)
	is.Equal(s.call("POST", "/api/llm/cancel/"+started.JobID, ten.key, nil, nil), 200)
	evs := s.follow(ten.key, started.JobID, "")
	is.Equal(last(evs).Name, "cancelled")
	var saved struct {
		SchemaContent obj `json:"schema_content"`
	}
	s.call("GET", "/api/schema/saved/"+id, ten.key, nil, &saved)
	is.Equal(saved.SchemaContent["properties"].(obj)["x"], nil)
	var recs struct{ Total int }
	s.call("GET", "/api/records?type=schema_edit", ten.key, nil, &recs)
	is.Equal(recs.Total, 0)
}
