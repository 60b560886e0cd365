package e2e_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
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

var _ = context.Background
var _ = time.Second
var _ = json.Marshal
var _ = llm.ProviderConfig{}
var _ = fakeopenai.New
