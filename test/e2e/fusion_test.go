package e2e_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// fusionSchema's properties, in name order, meet sandbox::contrarian's
// planned disagreements (adapters/llm/sandbox/contrarian.go): city (its
// own string: a three-way tie), country (echo's string: echo and
// contrarian outvote alt), employees (its own number: a median), name
// (echoed from the entity: all agree), public (echo's negated), tags (its
// own array: a union).
const fusionSchema = `{"type":"object","required":["city","country","employees","name","public","tags"],"properties":{
	"city":{"type":"string"},
	"country":{"type":"string"},
	"employees":{"type":"integer","minimum":1,"maximum":100000},
	"name":{"type":"string"},
	"public":{"type":"boolean"},
	"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}}}`

var fusionModels = []string{"sandbox::echo", "sandbox::alt", "sandbox::contrarian"}

// WIRE.md §7.1 and the fusion events of §6.
var (
	wireFusionResponse = shape{"arbitration_key_source": "string?", "arbitration_model_used": "string?", "conflict_report": "object",
		"cost_usd": "number?", "database": "object?", "error_message": "string?", "input_tokens": "number?", "merged_result": "object",
		"output_tokens": "number?", "processing_time_ms": "number", "record_id": "string", "success": "boolean", "validation_warnings": "array?"}
	wireConflictReport = shape{"agreed_fields": "number", "conflicted_fields": "number", "conflicts": "array?", "total_fields": "number"}
	wireFieldConflict  = shape{"field_type": "string", "needs_arbitration": "boolean", "path": "string", "translation_only": "boolean",
		"values_by_model": "object"}
	wireFusionStarted        = shape{"arbitration_model": "string?", "source_record_ids": "array?"}
	wireConflictsDetected    = shape{"agreed_fields": "number", "conflicted_fields": "number", "total_fields": "number"}
	wireArbitrationStarted   = shape{"arbitration_model": "string", "conflict_count": "number"}
	wireArbitrationCompleted = shape{"cost_usd": "number?", "decisions": "array?", "error_message": "string?", "fallback_to_rule_based": "boolean", "input_tokens": "number?", "output_tokens": "number?", "success": "boolean"}
	wireFusionCompleted      = shape{"conflict_report": "object?", "cost_usd": "number?", "database": "object?", "input_tokens": "number?", "merged_result": "object", "output_tokens": "number?", "processing_time_ms": "number?", "record_id": "string?", "success": "boolean", "validation_warnings": "array?"}
)

type provenance struct {
	Models     []string `json:"models"`
	Arbitrated bool     `json:"arbitrated"`
}

type fusedRecord struct {
	ID               string         `json:"id"`
	Type             string         `json:"type"`
	StructuredOutput map[string]any `json:"structured_output"`
	FusionSources    []struct {
		RecordID  string `json:"record_id"`
		ModelName string `json:"model_name"`
	} `json:"fusion_sources"`
	FusionMethod           string                `json:"fusion_method"`
	FusionArbitrationModel *string               `json:"fusion_arbitration_model"`
	Provenance             map[string]provenance `json:"provenance"`
	Fusion                 struct {
		Agreed, Conflicted, Total int
		Method                    string  `json:"method"`
		ArbitrationModel          *string `json:"arbitration_model"`
	} `json:"fusion"`
	ConflictReport struct {
		Conflicts []struct {
			Path             string         `json:"path"`
			FieldType        string         `json:"field_type"`
			ValuesByModel    map[string]any `json:"values_by_model"`
			NeedsArbitration bool           `json:"needs_arbitration"`
		} `json:"conflicts"`
	} `json:"conflict_report"`
}

// expectedFusion derives, from the three models' own answers, what the
// rules must choose and who must be credited.
func expectedFusion(t *testing.T, results map[string]map[string]any) (map[string]any, map[string][]string) {
	t.Helper()
	e, a, c := results["sandbox::echo"], results["sandbox::alt"], results["sandbox::contrarian"]
	want := map[string]any{}
	prov := map[string][]string{}
	norm := func(v any) string { return strings.ToLower(strings.TrimSpace(v.(string))) }
	// name: all agree.
	mustf(t, e["name"] == "Acme" && a["name"] == "Acme" && c["name"] == "Acme", "name not echoed: %v %v %v", e["name"], a["name"], c["name"])
	want["name"], prov["name"] = "Acme", []string{"sandbox::alt", "sandbox::contrarian", "sandbox::echo"}
	// country: echo and contrarian outvote alt.
	mustf(t, c["country"] == e["country"] && norm(a["country"]) != norm(e["country"]), "country not planted: %v", results)
	want["country"], prov["country"] = e["country"], []string{"sandbox::contrarian", "sandbox::echo"}
	// city: a three-way tie, the longest wins.
	cities := map[string]string{"sandbox::echo": e["city"].(string), "sandbox::alt": a["city"].(string), "sandbox::contrarian": c["city"].(string)}
	mustf(t, norm(cities["sandbox::echo"]) != norm(cities["sandbox::alt"]) && norm(cities["sandbox::alt"]) != norm(cities["sandbox::contrarian"]) &&
		norm(cities["sandbox::echo"]) != norm(cities["sandbox::contrarian"]), "cities not all different: %v", cities)
	best := ""
	for _, m := range []string{"sandbox::alt", "sandbox::contrarian", "sandbox::echo"} { // sandbox prices are 0: key order breaks ties
		if best == "" || utf8.RuneCountInString(strings.TrimSpace(cities[m])) > utf8.RuneCountInString(strings.TrimSpace(cities[best])) {
			best = m
		}
	}
	want["city"], prov["city"] = cities[best], []string{best}
	// employees: the median of three.
	type num struct {
		m string
		x float64
	}
	ns := []num{{"sandbox::echo", e["employees"].(float64)}, {"sandbox::alt", a["employees"].(float64)}, {"sandbox::contrarian", c["employees"].(float64)}}
	sort.SliceStable(ns, func(i, j int) bool { return ns[i].x < ns[j].x })
	mustf(t, ns[0].x != ns[1].x && ns[1].x != ns[2].x, "employees not all different: %v", ns)
	want["employees"], prov["employees"] = ns[1].x, []string{ns[1].m}
	// public: contrarian negates echo; alt decides the majority.
	mustf(t, c["public"] == !e["public"].(bool), "public not negated")
	if a["public"] == e["public"] {
		want["public"], prov["public"] = e["public"], []string{"sandbox::alt", "sandbox::echo"}
	} else {
		want["public"], prov["public"] = c["public"], []string{"sandbox::alt", "sandbox::contrarian"}
	}
	return want, prov
}

// TestAutoFusion: three sandbox models with planted disagreements give the
// fusion events and a fused record whose values and provenance follow the
// rules exactly; the sync answer is the fused one.
func TestAutoFusion(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("fusion-" + b.name + "@example.com")
			id := s.createSchema(ten.key, "Company", fusionSchema)
			jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": fusionModels})
			evs := s.follow(ten.key, jobID, "")
			is.Equal(last(evs).Name, "completed")
			order := []string{"fusion_started", "conflicts_detected", "fusion_completed", "completed"}
			for i := 1; i < len(order); i++ {
				mustf(t, indexOf(evs, order[i-1]) >= 0 && indexOf(evs, order[i-1]) < indexOf(evs, order[i]), "order %v: %v", order, names(evs))
			}
			is.Equal(indexOf(evs, "arbitration_started"), -1) // no arbiter asked, no wild numbers (range 1..100000 may be: see below)

			results := map[string]map[string]any{}
			var sources []any
			for _, mc := range find(evs, "model_completed") {
				results[mc.Data["model"].(string)] = mc.Data["result"].(map[string]any)
				sources = append(sources, mc.Data["record_id"])
			}
			want, prov := expectedFusion(t, results)

			started := find(evs, "fusion_started")[0].Data
			is.Equal(len(started["source_record_ids"].([]any)), 3)
			is.Equal(started["arbitration_model"], nil)
			cd := find(evs, "conflicts_detected")[0].Data
			is.Equal(cd["total_fields"], 6.0)
			fc := find(evs, "fusion_completed")[0].Data
			is.Equal(fc["success"], true)
			arbitrationMetadata(t, fc, "rule_based", nil)
			completed := last(evs).Data
			is.Equal(completed["record_id"], fc["record_id"])
			is.Equal(completed["is_fused"], true)
			is.Equal(completed["source_models"], []any{"sandbox::alt", "sandbox::contrarian", "sandbox::echo"})
			is.Equal(len(completed["record_ids"].([]any)), 4)

			var rec fusedRecord
			is.Equal(s.call("GET", "/api/records/"+completed["record_id"].(string), ten.key, nil, &rec), 200)
			is.Equal(rec.Type, "fusion")
			is.Equal(rec.FusionMethod, "rule_based")
			is.Equal(len(rec.FusionSources), 3)
			for k, v := range want {
				is.Equal(rec.StructuredOutput[k], v) // the rules' value
				is.Equal(rec.Provenance[k].Models, prov[k])
			}
			// tags: the union of the three arrays, cut at maxItems.
			tags := rec.StructuredOutput["tags"].([]any)
			mustf(t, len(tags) >= 1 && len(tags) <= 3, "tags %v", tags)
			is.Equal(completed["result"], any(rec.StructuredOutput))
			// fusion_completed's merged_result is the record's output plus the metadata.
			merged := fc["merged_result"].(map[string]any)
			delete(merged, "_arbitration_metadata")
			is.Equal(merged, rec.StructuredOutput)

			// The records listing filters by the new type.
			var list struct {
				Total int `json:"total"`
			}
			is.Equal(s.call("GET", "/api/records?type=fusion", ten.key, nil, &list), 200)
			is.Equal(list.Total, 1)

			// Sync: the same, as the reference's sync answer.
			var sr struct {
				IsFused      bool           `json:"is_fused"`
				Model        *string        `json:"model"`
				SourceModels []string       `json:"source_models"`
				RecordID     string         `json:"record_id"`
				Result       map[string]any `json:"result"`
				Fusion       struct {
					Method      string `json:"method"`
					TotalFields int    `json:"total_fields"`
				} `json:"fusion"`
				FailedModels []any `json:"failed_models"`
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": fusionModels}, &sr), 200)
			is.True(sr.IsFused)
			is.Equal(sr.Model, nil)
			is.Equal(sr.SourceModels, []string{"sandbox::alt", "sandbox::contrarian", "sandbox::echo"})
			is.Equal(sr.Fusion.Method, "rule_based")
			is.Equal(sr.Fusion.TotalFields, 6)
			is.Equal(len(sr.FailedModels), 0)
			for k, v := range want {
				is.Equal(sr.Result[k], v)
			}
			_ = sources
		})
	}
}

// TestFusionWithFailure: a failing model means no fusion; failed_models
// names it and record_id is a survivor's.
func TestFusionWithFailure(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("fusion-fail-" + b.name + "@example.com")
			id := s.createSchema(ten.key, "Company", fusionSchema)
			var sr struct {
				IsFused      bool    `json:"is_fused"`
				Model        *string `json:"model"`
				RecordID     string  `json:"record_id"`
				FailedModels []struct {
					Model string `json:"model"`
				} `json:"failed_models"`
			}
			body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo", "sandbox::alt", "sandbox::broken"}}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, body, &sr), 200)
			is.True(!sr.IsFused)
			is.Equal(len(sr.FailedModels), 1)
			is.Equal(sr.FailedModels[0].Model, "sandbox::broken")
			var rec struct {
				Type  string `json:"type"`
				Model string `json:"model"`
			}
			is.Equal(s.call("GET", "/api/records/"+sr.RecordID, ten.key, nil, &rec), 200)
			is.Equal(rec.Type, "enrichment")
			is.True(rec.Model == "sandbox::echo" || rec.Model == "sandbox::alt")
			evs := s.follow(ten.key, s.startJob(ten.key, body), "")
			is.Equal(indexOf(evs, "fusion_started"), -1)
			is.Equal(last(evs).Name, "completed")
		})
	}
}

// arbitrationMetadata checks that a fusion_completed event's merged_result
// carries _arbitration_metadata {method, arbitration_model} (WIRE.md §7.1)
// and keeps the fusion block, which says the same.
func arbitrationMetadata(t *testing.T, fc map[string]any, method string, arbiter any) {
	t.Helper()
	is := is.NewRelaxed(t)
	merged, ok := fc["merged_result"].(map[string]any)
	mustf(t, ok, "merged_result %v", fc["merged_result"])
	meta, ok := merged["_arbitration_metadata"].(map[string]any)
	mustf(t, ok, "no _arbitration_metadata in merged_result: %v", merged)
	is.Equal(meta, map[string]any{"method": method, "arbitration_model": arbiter})
	fusion, ok := fc["fusion"].(map[string]any)
	mustf(t, ok, "no fusion block: %v", fc)
	is.Equal(fusion["method"], method)
	is.Equal(fusion["arbitration_model"], arbiter)
}

// arbiterPick answers an arbitration call for the fake provider: every
// conflict goes to pick's candidate when it has one.
func arbiterPick(pick string) fakeopenai.Responder {
	return func(req fakeopenai.ChatRequest) (string, int) {
		text := req.Messages[len(req.Messages)-1].Content
		i := strings.Index(text, "Conflicting fields:")
		if i < 0 {
			return `{}`, 200
		}
		var items []struct {
			Path       string         `json:"path"`
			Candidates map[string]any `json:"candidates"`
		}
		if err := json.NewDecoder(strings.NewReader(text[i+len("Conflicting fields:"):])).Decode(&items); err != nil {
			return `{}`, 200
		}
		var ds []obj
		for _, it := range items {
			if v, ok := it.Candidates[pick]; ok {
				ds = append(ds, obj{"path": it.Path, "value": v, "reason": "fake"})
			}
		}
		b, _ := json.Marshal(obj{"decisions": ds})
		return string(b), 200
	}
}

// TestFusionArbitration: an arbiter on a real (OpenAI-compatible)
// provider decides the conflicts in exactly one call; a failing or garbled
// arbiter leaves the rules standing.
func TestFusionArbitration(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeopenai.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"judge"}}}
			s := start(t, cfg)
			ten := s.register("fusion-arb-" + b.name + "@example.com")
			id := s.createSchema(ten.key, "Company", fusionSchema)
			body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": fusionModels, "arbitration_model": "local::judge"}

			fake.SetResponder(arbiterPick("sandbox::alt"))
			evs := s.follow(ten.key, s.startJob(ten.key, body), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(fake.Requests(), 1) // one call for every conflict
			req, _ := fake.LastRequest()
			is.True(!strings.Contains(req.Messages[len(req.Messages)-1].Content, `"path":"name"`)) // agreed fields are not shown
			as := find(evs, "arbitration_started")
			is.Equal(len(as), 1)
			is.Equal(as[0].Data["arbitration_model"], "local::judge")
			ac := find(evs, "arbitration_completed")[0].Data
			is.Equal(ac["success"], true)
			is.Equal(ac["fallback_to_rule_based"], false)
			arbitrationMetadata(t, find(evs, "fusion_completed")[0].Data, "llm", "local::judge")
			mustf(t, indexOf(evs, "conflicts_detected") < indexOf(evs, "arbitration_started") &&
				indexOf(evs, "arbitration_completed") < indexOf(evs, "fusion_completed"), "order: %v", names(evs))
			results := map[string]map[string]any{}
			for _, mc := range find(evs, "model_completed") {
				results[mc.Data["model"].(string)] = mc.Data["result"].(map[string]any)
			}
			var rec fusedRecord
			is.Equal(s.call("GET", "/api/records/"+last(evs).Data["record_id"].(string), ten.key, nil, &rec), 200)
			is.Equal(rec.FusionMethod, "llm")
			is.Equal(*rec.FusionArbitrationModel, "local::judge")
			is.Equal(rec.StructuredOutput["city"], results["sandbox::alt"]["city"]) // the arbiter's choice, not the longest
			is.Equal(rec.Provenance["city"], provenance{Models: []string{"sandbox::alt"}, Arbitrated: true})
			is.Equal(rec.StructuredOutput["employees"], results["sandbox::alt"]["employees"])
			is.Equal(rec.Provenance["name"].Arbitrated, false)
			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
			is.NoErr(err)
			judged := 0
			for _, e := range entries {
				if e.Model == "local::judge" {
					judged++
					is.Equal(e.Task, "arbitration")
				}
			}
			is.Equal(judged, 1) // the arbiter's call is in the ledger

			// The arbiter fails (500), then garbles its answer: the rules stand.
			want, prov := expectedFusion(t, results)
			for _, tc := range []struct {
				name      string
				responder fakeopenai.Responder
			}{
				{"500", func(fakeopenai.ChatRequest) (string, int) { return "boom", 500 }},
				{"garbage", func(fakeopenai.ChatRequest) (string, int) {
					return `{"decisions":[{"path":"city","value":"Atlantis"}]}`, 200
				}},
				{"not json", func(fakeopenai.ChatRequest) (string, int) { return `no`, 200 }},
			} {
				fake.SetResponder(tc.responder)
				evs := s.follow(ten.key, s.startJob(ten.key, body), "")
				mustf(t, last(evs).Name == "completed", "%s: %v", tc.name, names(evs))
				ac := find(evs, "arbitration_completed")
				mustf(t, len(ac) == 1 && ac[0].Data["success"] == false && ac[0].Data["fallback_to_rule_based"] == true, "%s: %v", tc.name, ac)
				// The rules stood; the arbiter asked is still named.
				arbitrationMetadata(t, find(evs, "fusion_completed")[0].Data, "rule_based", "local::judge")
				var rec fusedRecord
				is.Equal(s.call("GET", "/api/records/"+last(evs).Data["record_id"].(string), ten.key, nil, &rec), 200)
				is.Equal(rec.FusionMethod, "rule_based")
				for k, v := range want {
					is.Equal(rec.StructuredOutput[k], v)
					is.Equal(rec.Provenance[k].Models, prov[k])
				}
			}
		})
	}
}

// TestFusionMerge: merging stored records, blocking and streamed; other
// organizations' records are 404, too few ids 400.
func TestFusionMerge(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("merge-" + b.name + "@example.com")
			other := s.register("merge-other-" + b.name + "@example.com")
			id := s.createSchema(ten.key, "Company", fusionSchema)
			var ids []string
			results := map[string]map[string]any{}
			for _, m := range fusionModels {
				evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{m}}), "")
				ids = append(ids, last(evs).Data["record_id"].(string))
				results[m] = last(evs).Data["result"].(map[string]any)
			}
			want, prov := expectedFusion(t, results)

			var fr struct {
				JobID          string         `json:"job_id"`
				MergedResult   map[string]any `json:"merged_result"`
				RecordID       string         `json:"record_id"`
				ConflictReport struct {
					Conflicts []struct {
						Path string `json:"path"`
					} `json:"conflicts"`
					TotalFields int `json:"total_fields"`
				} `json:"conflict_report"`
				ArbitrationModelUsed *string               `json:"arbitration_model_used"`
				Database             any                   `json:"database"`
				Provenance           map[string]provenance `json:"provenance"`
			}
			var raw obj
			is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": ids}, &raw), 200)
			conforms(t, "FusionResponse", raw, wireFusionResponse)
			conforms(t, "ConflictReport", raw["conflict_report"].(obj), wireConflictReport)
			for _, c := range raw["conflict_report"].(obj)["conflicts"].([]any) {
				conforms(t, "FieldConflict", c.(obj), wireFieldConflict)
				ft := c.(obj)["field_type"]
				mustf(t, ft == "scalar" || ft == "array" || ft == "object" || ft == "multilingual", "field_type %v", ft)
			}
			b, _ := json.Marshal(raw)
			is.NoErr(json.Unmarshal(b, &fr))
			is.Equal(fr.ArbitrationModelUsed, nil)
			is.Equal(fr.ConflictReport.TotalFields, 6)
			meta := fr.MergedResult["_arbitration_metadata"].(map[string]any)
			is.Equal(meta["method"], "rule_based")
			for k, v := range want {
				is.Equal(fr.MergedResult[k], v)
				is.Equal(fr.Provenance[k].Models, prov[k])
			}
			var rec fusedRecord
			is.Equal(s.call("GET", "/api/records/"+fr.RecordID, ten.key, nil, &rec), 200)
			is.Equal(rec.Type, "fusion")
			is.Equal(len(rec.FusionSources), 3)
			_, hasMeta := rec.StructuredOutput["_arbitration_metadata"]
			is.True(!hasMeta)

			// Streamed, with the sandbox arbiter (the alphabetically first model's value).
			var started struct {
				JobID string `json:"job_id"`
			}
			is.Equal(s.call("POST", "/api/fusion/merge/stream", ten.key, obj{"result_ids": ids, "arbitration_model": "sandbox::echo"}, &started), 200)
			evs := s.follow(ten.key, started.JobID, "")
			is.Equal(names(evs)[len(evs)-1], "completed")
			for name, sh := range map[string]shape{"fusion_started": wireFusionStarted, "conflicts_detected": wireConflictsDetected,
				"arbitration_started": wireArbitrationStarted, "arbitration_completed": wireArbitrationCompleted, "fusion_completed": wireFusionCompleted} {
				for _, e := range find(evs, name) {
					conforms(t, name, e.Data, sh)
					conforms(t, name, e.Data, wireEvent)
				}
			}
			for _, n := range []string{"fusion_started", "conflicts_detected", "arbitration_started", "arbitration_completed", "fusion_completed"} {
				mustf(t, indexOf(evs, n) >= 0, "no %s: %v", n, names(evs))
			}
			is.Equal(evs[0].Data["job_type"], "fusion")
			is.Equal(last(evs).Data["result"].(map[string]any)["city"], results["sandbox::alt"]["city"])
			arbitrationMetadata(t, find(evs, "fusion_completed")[0].Data, "llm", "sandbox::echo")
			_, inResult := last(evs).Data["result"].(map[string]any)["_arbitration_metadata"]
			is.True(!inResult) // the job's result is the clean output

			// Refusals.
			var e struct {
				Code  string `json:"code"`
				Field string `json:"field"`
			}
			is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": ids[:1]}, &e), 400)
			is.Equal(e.Field, "result_ids")
			is.Equal(s.call("POST", "/api/fusion/merge", other.key, obj{"result_ids": ids[:2]}, &e), 404)
			is.Equal(s.call("POST", "/api/fusion/merge/stream", other.key, obj{"result_ids": ids[:2]}, &e), 404)
			is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": []string{ids[0], ids[0]}}, &e), 400)
			is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": ids[:2], "attachment_ids": []string{"a"}}, &e), 400)
			is.Equal(e.Code, "attachment_not_found")
			id2 := s.createSchema(ten.key, "Other", fusionSchema)
			evs = s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id2, "models": []string{"sandbox::echo"}}), "")
			is.Equal(s.call("POST", "/api/fusion/merge", ten.key, obj{"result_ids": []string{ids[0], last(evs).Data["record_id"].(string)}}, &e), 400)
			is.Equal(e.Field, "result_ids")
		})
	}
}

// TestFusionMultilingual: a multilingual property is fused per language
// and the fused record validates against the localized schema.
func TestFusionMultilingual(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("fusion-ml@example.com")
	id := s.createSchema(ten.key, "Company", `{"type":"object","required":["name","summary"],"properties":{
		"name":{"type":"string"},"summary":{"type":"string","multilingual":true}}}`)
	evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id,
		"models": []string{"sandbox::echo", "sandbox::contrarian"}, "languages": []string{"en", "fr"}}), "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(last(evs).Data["is_fused"], true)
	summary := last(evs).Data["result"].(map[string]any)["summary"].(map[string]any)
	is.Equal(len(summary), 2) // en and fr
	var rec fusedRecord
	is.Equal(s.call("GET", "/api/records/"+last(evs).Data["record_id"].(string), ten.key, nil, &rec), 200)
	is.Equal(len(rec.ConflictReport.Conflicts), 1)
	c := rec.ConflictReport.Conflicts[0]
	is.Equal(c.Path, "summary")
	is.Equal(c.FieldType, "multilingual")
	// contrarian's primary language is its own, its French echo's: a real conflict, per language.
	is.True(c.NeedsArbitration)
	is.Equal(rec.Provenance["summary.fr"].Models, []string{"sandbox::contrarian", "sandbox::echo"})
}

// TestFusionAfterTakeover: a replica dies while one of two models is in
// flight; the replica that takes the job over does not redo the finished
// model and still fuses.
func TestFusionAfterTakeover(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	var hang atomic.Bool
	hang.Store(true)
	var calls atomic.Int64
	fake := fakeopenai.New(t, fakeopenai.WithModels("m"))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		calls.Add(1)
		for hang.Load() {
			time.Sleep(20 * time.Millisecond) // in flight until the replica dies
		}
		return fakeopenai.DefaultAnswer(req), 0
	})
	a := &replica{t: t, bin: buildEnrichd(t), addr: freeAddr(t), env: []string{
		"DATABASE_URL=" + dsn, "ENRICH_JWT_SECRET=" + strings.Repeat("r", 40), "ENRICH_PASSWORD_HASHING=fast",
		"ENRICH_LOG_LEVEL=error", "ENRICH_LEASE_TTL=2s", "ENRICH_SANDBOX=true",
		"ENRICH_PROVIDER_FAKE_TYPE=openai", "ENRICH_PROVIDER_FAKE_BASE_URL=" + fake.URL(),
		"ENRICH_PROVIDER_FAKE_API_KEY=k", "ENRICH_PROVIDER_FAKE_MODELS=m",
	}}
	a.start()
	sa := &service{t: t, url: "http://" + a.addr, http: testHTTPClient()}
	ten := sa.register("fusion-takeover@example.com")
	id := sa.createSchema(ten.key, "Company", fusionSchema)
	jobID := sa.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo", "fake::m"},
		"strategy": "single_pass"})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs := sa.eventsSoFar(ten.key, jobID)
		if len(find(evs, "model_completed")) == 1 && calls.Load() == 1 {
			break
		}
		mustf(t, time.Now().Before(deadline), "echo did not complete")
	}
	a.kill()
	hang.Store(false)

	cfg := testConfig(dsn)
	cfg.LeaseTTL = 2 * time.Second
	cfg.Providers = []llm.ProviderConfig{{Name: "fake", Type: "openai", BaseURL: fake.URL(), APIKey: "k", Models: []string{"m"}}}
	b := start(t, cfg)
	evs := b.follow(ten.key, jobID, "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "job_resumed")), 1)
	is.Equal(len(find(evs, "expertise_completed")), 2) // echo's once, before the takeover; fake's after
	is.Equal(calls.Load(), int64(2))                   // the call in flight at the kill, again
	is.Equal(len(find(evs, "fusion_completed")), 1)
	is.Equal(last(evs).Data["is_fused"], true)
	var rec fusedRecord
	is.Equal(b.call("GET", "/api/records/"+last(evs).Data["record_id"].(string), ten.key, nil, &rec), 200)
	is.Equal(rec.Type, "fusion")
	is.Equal(rec.Provenance["name"].Models, []string{"fake::m", "sandbox::echo"})
}
