package e2e_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// contractSchema has two identifying keys, two preserve paths (one nested)
// and an array whose items are keyed.
const contractSchema = `{
  "type": "object",
  "required": ["name", "internal_id", "industry"],
  "properties": {
    "name": {"type": "string", "identifying": true},
    "domain": {"type": ["string", "null"], "identifying": true},
    "internal_id": {"type": "string", "preserve": true},
    "industry": {"type": "string"},
    "hq": {"type": "object", "properties": {"city": {"type": "string", "preserve": true}, "country": {"type": "string"}}},
    "people": {"type": "array", "items": {"type": "object", "properties": {"full_name": {"type": "string", "identifying": true}, "role": {"type": "string"}}}}
  }
}`

// TestInputContract: an entity the schema's input contract refuses is a
// 400 input_contract_unsatisfied naming the paths, on both routes, before
// any LLM call (the fake provider counts none) and without a job; preserved
// values are never asked of the model and come back exactly as sent.
func TestInputContract(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			fake := fakeopenai.New(t)
			// The fake model invents a value for every preserved property,
			// as a model asked for them would.
			fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
				out, _ := sandbox.Generate(req.Schema, req.Entity, "fake").(map[string]any)
				if out == nil {
					out = map[string]any{}
				}
				out["internal_id"] = "INVENTED"
				raw, _ := json.Marshal(out)
				return string(raw), 200
			})
			cfg := testConfig(b.dsn(t))
			cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
			s := start(t, cfg)
			ten := s.register("contract@example.com")
			id := s.createSchema(ten.key, "Contracted", contractSchema)

			t.Run("the schema shows its contract", func(t *testing.T) {
				is := is.New(t)
				var sc struct {
					InputContract struct {
						IdentifyingKeys []string            `json:"identifying_keys"`
						Preserve        []string            `json:"preserve"`
						ArrayItemKeys   map[string][]string `json:"array_item_keys"`
					} `json:"input_contract"`
				}
				is.Equal(s.call("GET", "/api/schema/saved/"+id, ten.key, nil, &sc), 200)
				is.Equal(sc.InputContract.IdentifyingKeys, []string{"domain", "name"})
				is.Equal(sc.InputContract.Preserve, []string{"hq.city", "internal_id"})
				is.Equal(sc.InputContract.ArrayItemKeys, map[string][]string{"people": {"full_name"}})
			})

			refused := []struct {
				name   string
				entity obj
				paths  []string
			}{
				{"no identifying value", obj{"industry": "Anvils", "internal_id": "X-1", "hq": obj{"city": "Paris"}}, []string{"domain", "name"}},
				{"blank identifying values", obj{"name": " ", "domain": nil, "internal_id": "X-1", "hq": obj{"city": "Paris"}}, []string{"domain", "name"}},
				{"preserved value missing", obj{"name": "Acme", "hq": obj{"city": "Paris"}}, []string{"internal_id"}},
				{"nested preserved value missing", obj{"name": "Acme", "internal_id": "X-1"}, []string{"hq.city"}},
				{"preserved value does not fit its schema", obj{"name": "Acme", "internal_id": 42, "hq": obj{"city": "Paris"}}, []string{"internal_id"}},
				{"array item without a key", obj{"name": "Acme", "internal_id": "X-1", "hq": obj{"city": "Paris"},
					"people": []obj{{"full_name": "Ann"}, {"role": "CFO"}}}, []string{"people.1"}},
			}
			for _, tc := range refused {
				for _, route := range []string{"stream", "sync"} {
					t.Run(tc.name+"/"+route, func(t *testing.T) {
						is := is.New(t)
						var e struct {
							Detail string   `json:"detail"`
							Code   string   `json:"code"`
							Field  string   `json:"field"`
							Paths  []string `json:"paths"`
						}
						st := s.call("POST", "/api/single/enrich/"+route, ten.key,
							obj{"entity_data": tc.entity, "schema_id": id, "models": []string{"local::fake-1"}}, &e)
						is.Equal(st, 400)
						is.Equal(e.Code, "input_contract_unsatisfied")
						is.Equal(e.Paths, tc.paths)
						is.Equal(e.Field, "entity_data")
						is.True(e.Detail != "")
						is.Equal(fake.Requests(), 0) // nothing spent
					})
				}
			}
			t.Run("refused requests create no job", func(t *testing.T) {
				is := is.New(t)
				var recs struct {
					Total int `json:"total"`
				}
				is.Equal(s.call("GET", "/api/records", ten.key, nil, &recs), 200)
				is.Equal(recs.Total, 0)
			})

			sent := obj{"name": "Acme", "internal_id": "X-0001 (kept as sent)", "hq": obj{"city": "Paris, 5e"},
				"people": []obj{{"full_name": "Ann"}}}
			t.Run("preserved values are the caller's", func(t *testing.T) {
				is := is.New(t)
				evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": sent, "schema_id": id, "models": []string{"local::fake-1"}}), "")
				is.Equal(last(evs).Name, "completed")
				// Not asked of the model: the schemas it was sent lack them.
				reqs := fake.AllRequests()
				is.True(len(reqs) > 0)
				for _, r := range reqs {
					raw, _ := json.Marshal(r.Schema)
					props, _ := r.Schema["properties"].(map[string]any)
					is.True(props["internal_id"] == nil)
					if hq, ok := props["hq"].(map[string]any); ok {
						hqProps, _ := hq["properties"].(map[string]any)
						mustf(t, hqProps["city"] == nil, "hq.city asked of the model: %s", raw)
					}
				}
				rec := readRecord(t, s, ten.key, last(evs).Data["record_id"].(string))
				is.Equal(rec["internal_id"], "X-0001 (kept as sent)") // not the model's INVENTED
				is.Equal(rec["hq"].(map[string]any)["city"], "Paris, 5e")
				is.Equal(last(evs).Data["result"].(map[string]any)["internal_id"], "X-0001 (kept as sent)")
			})

			t.Run("sandbox::alt keeps them too", func(t *testing.T) {
				is := is.New(t)
				var res struct {
					RecordID string `json:"record_id"`
					Result   obj    `json:"result"`
				}
				is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": sent, "schema_id": id, "models": []string{"sandbox::alt"}}, &res), 200)
				rec := readRecord(t, s, ten.key, res.RecordID)
				is.Equal(rec["internal_id"], "X-0001 (kept as sent)")
				is.Equal(rec["hq"].(map[string]any)["city"], "Paris, 5e")
			})

			t.Run("a schema without flags accepts any entity", func(t *testing.T) {
				is := is.New(t)
				plain := s.createSchema(ten.key, "Plain", companySchema)
				var res struct {
					RecordID string `json:"record_id"`
				}
				is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"anything": 1}, "schema_id": plain, "models": []string{"sandbox::echo"}}, &res), 200)
			})
		})
	}
}

// readRecord returns a record's structured output.
func readRecord(t *testing.T, s *service, cred, id string) map[string]any {
	t.Helper()
	var rec struct {
		StructuredOutput map[string]any `json:"structured_output"`
	}
	if st := s.call("GET", "/api/records/"+id, cred, nil, &rec); st != 200 {
		t.Fatalf("record %s: %d", id, st)
	}
	if rec.StructuredOutput == nil {
		t.Fatal(fmt.Sprintf("record %s has no structured output", id))
	}
	return rec.StructuredOutput
}
