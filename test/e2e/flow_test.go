package e2e_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestMinimalFlow is SPEC.md's minimal integration flow through real HTTP and
// a real SSE client, with the sandbox model, on every storage.
func TestMinimalFlow(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("flow@example.com")
			editor := s.newKey(ten.token, "editor")

			// (1) list or obtain a schema
			id := s.createSchema(editor, "Company", companySchema)
			var list struct {
				Schemas []struct {
					ID            string `json:"id"`
					PropertyCount int    `json:"property_count"`
				} `json:"schemas"`
			}
			is.Equal(s.call("GET", "/api/schema/saved", ten.key, nil, &list), 200)
			is.Equal(len(list.Schemas), 1)
			is.Equal(list.Schemas[0].ID, id)
			is.Equal(list.Schemas[0].PropertyCount, 7)

			// (2) start enrichment
			entity := obj{"name": "Acme Corp", "industry": "Anvils"}
			job := s.startJob(ten.key, obj{"entity_data": entity, "schema_id": id, "models": []string{"sandbox::echo"}, "strategy": "multi_expertise"})

			// (3) follow it
			evs := s.follow(ten.key, job, "")
			for i, e := range evs {
				is.Equal(e.ID, strconv.Itoa(i+1)) // ids are 1..n, in order
				is.Equal(e.Data["job_id"], job)
			}
			is.Equal(evs[0].Name, "model_started")
			is.Equal(evs[0].Data["model"], "sandbox::echo")
			is.Equal(len(find(evs, "expertise_started")), 3)
			is.Equal(len(find(evs, "attempt")), 3)
			is.Equal(len(find(evs, "expertise_completed")), 3)
			for _, d := range []string{"general", "finance", "headquarters"} {
				n := names(evs)
				started, attempt, done := idx(n, "expertise_started:"+d), idx(n, "attempt:"+d), idx(n, "expertise_completed:"+d)
				mustf(t, started >= 0 && started < attempt && attempt < done, "domain %s out of order: %v", d, n)
			}
			for _, e := range find(evs, "expertise_completed") {
				is.True(e.Data["partial_result"] != nil)
				is.Equal(e.Data["success"], true)
			}
			mc := find(evs, "model_completed")
			is.Equal(len(mc), 1)
			is.Equal(mc[0].Data["success"], true)
			recordID, _ := mc[0].Data["record_id"].(string)
			is.True(recordID != "")
			is.True(mc[0].Data["cost"].(float64) > 0)
			end := last(evs)
			is.Equal(end.Name, "completed")
			is.Equal(indexOf(evs, "model_completed"), len(evs)-2)
			result := end.Data["result"].(obj)
			is.Equal(result["name"], "Acme Corp") // known attributes are echoed
			hq := result["headquarters"].(obj)
			is.True(hq["city"] != nil)

			// (4) read the record
			var rec struct {
				ID               string `json:"id"`
				Type             string `json:"type"`
				SchemaID         string `json:"schema_id"`
				JobID            string `json:"job_id"`
				Model            string `json:"model"`
				StructuredOutput obj    `json:"structured_output"`
				Sandbox          bool   `json:"sandbox"`
			}
			is.Equal(s.call("GET", "/api/records/"+recordID, ten.key, nil, &rec), 200)
			is.Equal(rec.ID, recordID)
			is.Equal(rec.Type, "enrichment")
			is.Equal(rec.SchemaID, id)
			is.Equal(rec.JobID, job)
			is.Equal(rec.Model, "sandbox::echo")
			is.True(rec.Sandbox)
			is.Equal(rec.StructuredOutput, result)

			var recs struct {
				Records []struct {
					ID string `json:"id"`
				} `json:"records"`
				NextCursor *string `json:"next_cursor"`
			}
			is.Equal(s.call("GET", "/api/records?type=enrichment&page_size=10", ten.key, nil, &recs), 200)
			is.Equal(len(recs.Records), 1)
			is.Equal(recs.Records[0].ID, recordID)
			is.Equal(recs.NextCursor, nil)

			// Replay from Last-Event-ID: exactly the events after it, in order.
			again := s.follow(ten.key, job, "3")
			is.Equal(len(again), len(evs)-3)
			is.Equal(again[0].ID, "4")
			is.Equal(names(again), names(evs[3:]))

			// The same input gives the same output (the sandbox is deterministic).
			job2 := s.startJob(ten.key, obj{"entity_data": entity, "schema_id": id, "models": []string{"sandbox::echo"}, "strategy": "multi_expertise"})
			is.Equal(last(s.follow(ten.key, job2, "")).Data["result"], end.Data["result"])
		})
	}
}

func idx(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

func TestStrategies(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("strategies@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	small := s.createSchema(ten.key, "Small", `{"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"}}}`)
	tests := []struct {
		schema, strategy string
		selected         string
		calls            int
	}{
		{id, "single_pass", "", 1},
		{id, "expert_domains", "", 1},
		{id, "multi_expertise", "", 3},
		{id, "auto", "multi_expertise", 3},
		{small, "auto", "single_pass", 1},
		{small, "", "single_pass", 1},
	}
	for _, tt := range tests {
		t.Run(tt.strategy+"/"+tt.selected, func(t *testing.T) {
			body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": tt.schema, "model": "sandbox::echo"}
			if tt.strategy != "" {
				body["strategy"] = tt.strategy
			}
			evs := s.follow(ten.key, s.startJob(ten.key, body), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(len(find(evs, "attempt")), tt.calls)
			sel := find(evs, "strategy_selected")
			if tt.selected == "" {
				is.Equal(len(sel), 0)
				return
			}
			is.Equal(len(sel), 1)
			is.Equal(sel[0].Data["strategy"], tt.selected)
			is.Equal(sel[0].Data["requested"], "auto")
			is.True(sel[0].Data["reason"] != "")
		})
	}
}

func TestAutoModel(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("auto@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "model": "auto"}), "")
	auto := find(evs, "model_auto_selected")
	is.Equal(len(auto), 1)
	is.Equal(auto[0].Data["model"], "sandbox::echo")
	is.Equal(last(evs).Name, "completed")

	// Web search: of the sandbox models only sandbox::search can, so auto
	// takes it (TestWebSearchSandbox follows it through).
	evs = s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "enable_web_search": true}), "")
	is.Equal(find(evs, "model_auto_selected")[0].Data["model"], "sandbox::search")
	is.Equal(last(evs).Name, "completed")

	var opts struct {
		Models []struct {
			Key     string `json:"key"`
			Sandbox bool   `json:"sandbox"`
		} `json:"models"`
		Languages  map[string]string `json:"languages"`
		Strategies []struct {
			Name, Description string
		} `json:"strategies"`
		DefaultModels map[string]struct {
			Key string `json:"key"`
		} `json:"default_models"`
		DefaultModelsWebSearch map[string]struct {
			Key string `json:"key"`
		} `json:"default_models_web_search"`
	}
	is.Equal(s.call("GET", "/api/enrichment/options", ten.key, nil, &opts), 200)
	keys := fmt.Sprint(opts.Models)
	is.True(strings.Contains(keys, "sandbox::echo"))
	is.Equal(opts.Languages["en"], "English")
	is.True(len(opts.Strategies) == 4)
	is.Equal(opts.DefaultModels["enrichment"].Key, "sandbox::echo")
	is.Equal(opts.DefaultModels["sample_generation"].Key, "sandbox::echo")
	is.Equal(opts.DefaultModels["schema_generation"].Key, "sandbox::echo")
	for _, d := range opts.DefaultModelsWebSearch {
		is.Equal(d.Key, "sandbox::search") // every task's web-search preview
	}
	is.Equal(opts.DefaultModelsWebSearch["enrichment"].Key, "sandbox::search")
}

func TestSync(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("sync@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	var out struct {
		JobID    string `json:"job_id"`
		Status   string `json:"status"`
		Result   obj    `json:"result"`
		RecordID string `json:"record_id"`
	}
	is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}}, &out), 200)
	is.Equal(out.Status, "completed")
	is.Equal(out.Result["name"], "Acme")
	var rec struct {
		StructuredOutput obj `json:"structured_output"`
	}
	is.Equal(s.call("GET", "/api/records/"+out.RecordID, ten.key, nil, &rec), 200)
	is.Equal(rec.StructuredOutput, out.Result)

	// A sync call that outlives its timeout is 504 and its job is cancelled.
	var e struct{ Detail, Code string }
	t0 := time.Now()
	is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}, "timeout_seconds": 1}, &e), 504)
	is.Equal(e.Code, "timeout")
	is.True(time.Since(t0) < 2*time.Second)
	var recs struct {
		Records []any `json:"records"`
	}
	s.call("GET", "/api/records", ten.key, nil, &recs)
	is.Equal(len(recs.Records), 1) // the slow job stored nothing

	// A model that always answers invalid output fails with 502 model_output_invalid, retryable.
	is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::broken"}}, &e), 502)
	is.Equal(e.Code, "model_output_invalid")
}
