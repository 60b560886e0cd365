package e2e_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

type batchStarted struct {
	JobID   string `json:"job_id"`
	Message string `json:"message"`
	Total   int    `json:"total"`
	Invalid []struct {
		Index int      `json:"index"`
		Paths []string `json:"paths"`
	} `json:"invalid_entities"`
}

func (s *service) startBatch(cred string, body obj) batchStarted {
	s.t.Helper()
	var out batchStarted
	if st := s.call("POST", "/api/batch/start", cred, body, &out); st != 200 || out.JobID == "" || out.Message == "" {
		s.t.Fatalf("start batch: %d", st)
	}
	return out
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// byEntity groups a batch's events by entity_index (-1: the batch's own).
func byEntity(evs []event) map[int][]event {
	out := map[int][]event{}
	for _, e := range evs {
		i := -1
		if v, ok := e.Data["entity_index"]; ok && v != nil {
			i = num(v)
		}
		out[i] = append(out[i], e)
	}
	return out
}

// TestBatchOutcomes: a batch of 50 entities with planted outcomes — every
// 10th from 3 fails in every model (the sandbox's _sandbox: fail), every
// 10th from 7 is a confident classification mismatch (skipped), every 10th
// from 9 a soft one (enriched, the verdict in its prompts) — ends with
// exactly those per-entity outcomes, in the entity events, the counters,
// batch_completed's summary, the completed result and the stored records.
func TestBatchOutcomes(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("batch@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			var entities []obj
			want := map[int]string{}
			for i := range 50 {
				e := obj{"name": fmt.Sprintf("Company %02d", i)}
				want[i] = "completed"
				switch i % 10 {
				case 3:
					e["_sandbox"], want[i] = "fail", "failed"
				case 7:
					e["kind"], want[i] = "person", "skipped"
				case 9:
					e["kind"] = "person?" // a soft mismatch: enriched
				}
				entities = append(entities, e)
			}
			st := s.startBatch(ten.key, obj{"entities": entities, "schema_id": id, "models": []string{"sandbox::echo"},
				"classification_model": "sandbox::echo"})
			is.Equal(st.Total, 50)
			is.Equal(len(st.Invalid), 0)
			evs := s.follow(ten.key, st.JobID, "")
			consecutive(t, evs)
			is.Equal(evs[0].Name, "batch_started")
			is.Equal(evs[0].Data["total_entities"], float64(50))
			is.Equal(evs[0].Data["job_type"], "batch_enrichment")
			is.Equal(last(evs).Name, "completed")
			v, present := last(evs).Data["record_id"]
			is.True(present && v == nil) // records, but no one record: null, not ""
			is.Equal(evs[len(evs)-2].Name, "batch_completed")
			is.Equal(indexOf(evs, "error"), -1) // no entity's failure is an error event (a terminal one for clients)

			// The reference's shapes (WIRE.md §6): the common block on every
			// event, the batch events' own fields.
			wireShapes := map[string]shape{
				"entity_started":           {"entity_index": "number", "entity_label": "string"},
				"entity_completed":         {"entity_index": "number", "entity_label": "string", "error": "string?", "results": "array", "success": "boolean", "total_cost_usd": "number", "total_processing_time_ms": "number"},
				"entity_skipped":           {"code": "string", "entity_index": "number", "entity_label": "string"},
				"batch_completed":          {"stopped_early_reason": "string?"},
				"classification_started":   {"model": "string", "entity_index": "number?"},
				"classification_completed": {"classification": "object?", "entity_index": "number?", "error_message": "string?", "model": "string", "success": "boolean"},
				"model_started":            {"model": "string", "entity_index": "number?"},
			}
			for _, e := range evs {
				conforms(t, e.Name, e.Data, wireEvent)
				if sh, ok := wireShapes[e.Name]; ok {
					conforms(t, e.Name, e.Data, sh)
				}
			}
			for _, r := range find(evs, "entity_completed")[0].Data["results"].([]any) {
				conforms(t, "entity_completed.results[]", r.(obj), shape{"success": "boolean", "result": "object?", "record_id": "string?", "model": "string", "cost_usd": "number?"})
			}
			cls, _ := find(evs, "classification_completed")[0].Data["classification"].(obj)
			conforms(t, "ClassificationContext", cls, shape{"alternative_interpretations": "array", "classification_model": "string",
				"confidence": "number", "cost_usd": "number?", "entity_description": "string", "expected_type": "string",
				"input_tokens": "number", "output_tokens": "number", "processing_time_ms": "number", "reasoning": "string", "status": "string"})

			groups := byEntity(evs)
			is.Equal(len(groups), 51)
			for i := range 50 {
				g := groups[i]
				is.Equal(g[0].Name, "entity_started")
				is.Equal(g[0].Data["entity_label"], fmt.Sprintf("Company %02d", i))
				end := g[len(g)-1]
				switch want[i] {
				case "completed", "failed":
					is.Equal(end.Name, "entity_completed")
					is.Equal(end.Data["success"], want[i] == "completed")
					res, _ := end.Data["results"].([]any)
					is.Equal(len(res), 1)
					r0, _ := res[0].(obj)
					is.Equal(r0["model"], "sandbox::echo")
					if want[i] == "completed" {
						is.True(r0["record_id"] != nil)
						is.Equal(end.Data["error"], nil)
					} else {
						is.Equal(r0["record_id"], nil)
						is.Equal(end.Data["error_code"], "model_output_invalid")
					}
					is.Equal(len(find(g, "model_started")), 1)
					is.Equal(len(find(g, "expertise_completed")), 3)
				case "skipped":
					is.Equal(end.Name, "entity_skipped")
					is.Equal(end.Data["code"], "classification_mismatch")
					is.Equal(indexOf(g, "model_started"), -1) // never enriched
				}
				cc := find(g, "classification_completed")
				is.Equal(len(cc), 1)
			}
			// The common block's counters, at the end.
			fin := last(evs)
			is.Equal(fin.Data["total_entities"], float64(50))
			is.Equal(fin.Data["completed_entities"], float64(40))
			is.Equal(fin.Data["failed_entities"], float64(5))
			is.Equal(fin.Data["skipped_entities"], float64(5))
			bc := evs[len(evs)-2]
			is.Equal(bc.Data["stopped_early_reason"], nil)
			sum, _ := fin.Data["result"].(obj)
			is.Equal(sum, bc.Data["summary"])
			is.Equal(sum["completed_entities"], float64(40))
			is.Equal(sum["failed_entities"], float64(5))
			is.Equal(sum["skipped_entities"], float64(5))
			ents, _ := sum["entities"].([]any)
			is.Equal(len(ents), 50)
			ids := map[string]bool{}
			for i, x := range ents {
				e, _ := x.(obj)
				is.Equal(num(e["entity_index"]), i)
				is.Equal(e["status"], want[i])
				if want[i] == "completed" {
					rid, _ := e["record_id"].(string)
					is.True(rid != "" && !ids[rid])
					ids[rid] = true
				}
			}
			recIDs, _ := sum["record_ids"].([]any)
			is.Equal(len(recIDs), 40)

			// The 40 records are stored, each with its own entity.
			var recs struct {
				Records []obj `json:"records"`
				Total   int   `json:"total"`
			}
			is.Equal(s.call("GET", "/api/records?page_size=100&job_id="+st.JobID, ten.key, nil, &recs), 200)
			is.Equal(recs.Total, 40)
			for _, r := range recs.Records {
				is.True(ids[r["id"].(string)])
				ent, _ := r["entity_data"].(obj)
				name, _ := ent["name"].(string)
				n, _ := strconv.Atoi(strings.TrimPrefix(name, "Company "))
				is.Equal(want[n], "completed")
			}
		})
	}
}

// TestBatchCancel: a cancel stops new entities and the calls in flight; the
// job ends cancelled with the summary so far, the unfinished entities are
// skipped (code cancelled), and the records of those that completed are
// stored.
func TestBatchCancel(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("batch-cancel@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			var entities []obj
			for i := range 24 {
				entities = append(entities, obj{"name": fmt.Sprintf("Slow %02d", i)})
			}
			st := s.startBatch(ten.key, obj{"entities": entities, "schema_id": id, "models": []string{"sandbox::slow"}})
			s.waitEvent(ten.key, st.JobID, "entity_completed").Body.Close()
			var e struct{ Code string }
			is.Equal(s.call("POST", "/api/llm/continue/"+st.JobID, ten.key, nil, &e), 409) // a batch never pauses
			is.Equal(e.Code, "job_not_paused")
			t0 := time.Now()
			var c struct{ Status string }
			is.Equal(s.call("POST", "/api/llm/cancel/"+st.JobID, ten.key, nil, &c), 200)
			is.Equal(c.Status, "cancelled")
			is.True(time.Since(t0) < 2*time.Second) // the calls in flight were cancelled, not awaited
			evs := s.follow(ten.key, st.JobID, "")
			consecutive(t, evs)
			is.Equal(last(evs).Name, "cancelled")
			bc := find(evs, "batch_completed")
			is.Equal(len(bc), 1)
			is.Equal(bc[0].Data["stopped_early_reason"], "cancelled")
			sum, _ := last(evs).Data["result"].(obj)
			done := num(sum["completed_entities"])
			is.True(done >= 1 && done < 24)
			is.Equal(num(sum["skipped_entities"]), 24-done)
			is.Equal(len(find(evs, "entity_completed")), done)
			for _, e := range find(evs, "entity_skipped") {
				is.Equal(e.Data["code"], "cancelled")
			}
			var recs struct{ Total int }
			is.Equal(s.call("GET", "/api/records?job_id="+st.JobID, ten.key, nil, &recs), 200)
			is.Equal(recs.Total, done)
			is.Equal(s.call("POST", "/api/llm/cancel/"+st.JobID, ten.key, nil, &e), 409) // already cancelled
			is.Equal(e.Code, "job_not_cancellable")
		})
	}
}

// TestBatchCancelAcrossInstances: a batch running on A and cancelled through
// B is cancelled by A itself (B asks it), so it keeps the records of the
// entities it finished, as a cancel on A does.
func TestBatchCancelAcrossInstances(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	a, b := start(t, testConfig(dsn)), start(t, testConfig(dsn))
	ten := a.register("batch-xcancel@example.com")
	id := a.createSchema(ten.key, "Company", companySchema)
	var entities []obj
	for i := range 24 {
		entities = append(entities, obj{"name": fmt.Sprintf("Slow %02d", i)})
	}
	st := a.startBatch(ten.key, obj{"entities": entities, "schema_id": id, "models": []string{"sandbox::slow"}})
	a.waitEvent(ten.key, st.JobID, "entity_completed").Body.Close()
	is.Equal(len(a.srv.RunningJobs()), 1)
	t0 := time.Now()
	var c struct{ Status string }
	is.Equal(b.call("POST", "/api/llm/cancel/"+st.JobID, ten.key, nil, &c), 200)
	is.Equal(c.Status, "cancelled")
	is.True(time.Since(t0) < jobrun.HolderCancelWait) // A answered; B did not wait it out
	evs := b.follow(ten.key, st.JobID, "")
	consecutive(t, evs)
	is.Equal(last(evs).Name, "cancelled")
	is.Equal(len(find(evs, "job_resumed")), 0)
	sum, _ := last(evs).Data["result"].(obj)
	done := num(sum["completed_entities"])
	is.True(done >= 1 && done < 24)
	is.Equal(len(find(evs, "entity_completed")), done)
	var recs struct{ Total int }
	is.Equal(b.call("GET", "/api/records?job_id="+st.JobID, ten.key, nil, &recs), 200)
	is.Equal(recs.Total, done) // the finished entities' records are kept
}

// TestBatchRefusals: the entity limit, malformed entities and selections,
// fields a batch does not take, and a batch whose every entity the input
// contract refuses are 400 naming the field; entities the contract refuses
// among valid ones are skipped.
func TestBatchRefusals(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.BatchMaxEntities = 5
			s := start(t, cfg)
			ten := s.register("batch-refusals@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			keyed := s.createSchema(ten.key, "Keyed", `{"type":"object","properties":{"name":{"type":"string","identifying":true},"city":{"type":"string"}}}`)
			six := []obj{{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}, {"name": "f"}}
			for _, tt := range []struct {
				name        string
				body        obj
				field, code string
			}{
				{"too many", obj{"entities": six, "schema_id": id}, "entities", "too_many_entities"},
				{"none", obj{"entities": []obj{}, "schema_id": id}, "entities", "invalid_request"},
				{"empty entity", obj{"entities": []any{obj{"name": "a"}, obj{}}, "schema_id": id}, "entities.1", "invalid_request"},
				{"not an object", obj{"entities": []any{obj{"name": "a"}, "x"}, "schema_id": id}, "entities.1", "invalid_request"},
				{"selection out of range", obj{"entities": six[:2], "schema_id": id, "selected_indices": []int{0, 2}}, "selected_indices.1", "invalid_request"},
				{"selection twice", obj{"entities": six[:2], "schema_id": id, "selected_indices": []int{1, 1}}, "selected_indices.1", "invalid_request"},
				{"entity_data", obj{"entities": six[:2], "schema_id": id, "entity_data": obj{"name": "a"}}, "entity_data", "invalid_request"},
				{"pause", obj{"entities": six[:2], "schema_id": id, "pause_timeout_seconds": 5}, "pause_timeout_seconds", "invalid_request"},
				{"every entity refused", obj{"entities": []obj{{"city": "Paris"}}, "schema_id": keyed}, "entities.0", "input_contract_unsatisfied"},
				{"unknown model", obj{"entities": six[:1], "schema_id": id, "models": []string{"openai::nope"}}, "models", "invalid_model"},
				{"unknown arbiter", obj{"entities": six[:1], "schema_id": id, "arbitration_model": "openai::nope"}, "arbitration_model", "invalid_model"},
			} {
				var e struct{ Code, Field, Detail string }
				is.Equal(s.call("POST", "/api/batch/start", ten.key, tt.body, &e), 400)
				is.Equal(e.Field, tt.field)
				is.Equal(e.Code, tt.code)
			}
			// The contract's refusals among valid entities are skipped; only
			// the selected entities run.
			st := s.startBatch(ten.key, obj{"entities": []obj{{"name": "Acme"}, {"city": "Paris"}, {"name": "Globex"}},
				"schema_id": keyed, "models": []string{"sandbox::echo"}, "selected_indices": []int{1, 2}})
			is.Equal(st.Total, 2)
			is.Equal(len(st.Invalid), 1)
			is.Equal(st.Invalid[0].Index, 1)
			is.Equal(st.Invalid[0].Paths, []string{"name"})
			evs := s.follow(ten.key, st.JobID, "")
			is.Equal(last(evs).Name, "completed")
			sk := find(evs, "entity_skipped")
			is.Equal(len(sk), 1)
			is.Equal(sk[0].Data["code"], "input_contract_unsatisfied")
			is.Equal(num(sk[0].Data["entity_index"]), 1)
			is.Equal(len(find(evs, "entity_started")), 1)
			is.Equal(num(find(evs, "entity_started")[0].Data["entity_index"]), 2)
			sum, _ := last(evs).Data["result"].(obj)
			is.Equal(sum["selected_entities"], float64(2))
			is.Equal(sum["total_entities"], float64(3))
		})
	}
}

// TestBatchResumeSkipsFinishedEntities: a batch whose replica dies is taken
// over by another; the entities whose entity_completed was durable are not
// enriched again (no call, no second entity_completed), the one in flight
// is, and every completed entity's record is stored once.
func TestBatchResumeSkipsFinishedEntities(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	var hang atomic.Bool
	hang.Store(true)
	var mu sync.Mutex
	calls := map[string]int{}
	fake := fakeopenai.New(t, fakeopenai.WithModels("m"))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		name, _ := req.Entity["name"].(string)
		mu.Lock()
		calls[name]++
		mu.Unlock()
		for name == "Hang" && hang.Load() {
			time.Sleep(20 * time.Millisecond) // in flight until the replica dies
		}
		return fakeopenai.DefaultAnswer(req), 0
	})
	bin := buildEnrichd(t)
	a := &replica{t: t, bin: bin, addr: freeAddr(t), env: []string{
		"DATABASE_URL=" + dsn, "ENRICH_JWT_SECRET=" + strings.Repeat("r", 40), "ENRICH_PASSWORD_HASHING=fast",
		"ENRICH_LOG_LEVEL=error", "ENRICH_LEASE_TTL=2s",
		"ENRICH_PROVIDER_FAKE_TYPE=openai", "ENRICH_PROVIDER_FAKE_BASE_URL=" + fake.URL(),
		"ENRICH_PROVIDER_FAKE_API_KEY=k", "ENRICH_PROVIDER_FAKE_MODELS=m",
	}}
	a.start()
	sa := &service{t: t, url: "http://" + a.addr, http: testHTTPClient()}
	ten := sa.register("batch-resume@example.com")
	schemaID := sa.createSchema(ten.key, "Company", companySchema)
	entities := []obj{{"name": "A0"}, {"name": "A1"}, {"name": "Hang"}, {"name": "A3"}, {"name": "A4"}}
	st := sa.startBatch(ten.key, obj{"entities": entities, "schema_id": schemaID, "model": "fake::m", "strategy": "single_pass"})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if len(find(sa.eventsSoFar(ten.key, st.JobID), "entity_completed")) == 4 {
			break
		}
		mustf(t, time.Now().Before(deadline), "the quick entities did not complete")
	}
	killedAt := time.Now()
	a.kill()
	hang.Store(false)

	cfg := testConfig(dsn)
	cfg.Sandbox = false
	cfg.LeaseTTL = 2 * time.Second
	cfg.Providers = []llm.ProviderConfig{{Name: "fake", Type: "openai", BaseURL: fake.URL(), APIKey: "k", Models: []string{"m"}}}
	b := start(t, cfg)
	evs := b.follow(ten.key, st.JobID, "")
	oneTerminal(t, evs)
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "job_resumed")), 1)
	is.Equal(len(find(evs, "batch_started")), 1)
	is.Equal(len(find(evs, "entity_completed")), 5) // four before the takeover, one after
	is.Equal(len(find(evs, "entity_started")), 5)   // not repeated for the one in flight
	mu.Lock()
	for _, n := range []string{"A0", "A1", "A3", "A4"} {
		is.Equal(calls[n], 1) // finished entities were not enriched again
	}
	is.Equal(calls["Hang"], 2) // the one in flight at the kill was
	mu.Unlock()
	sum, _ := last(evs).Data["result"].(obj)
	is.Equal(sum["completed_entities"], float64(5))
	var recs struct {
		Total   int
		Records []struct {
			CreatedAt time.Time `json:"created_at"`
		}
	}
	is.Equal(b.call("GET", "/api/records?job_id="+st.JobID, ten.key, nil, &recs), 200)
	is.Equal(recs.Total, 5) // the four rebuilt from their events, once each, and the fifth
	before := 0
	for _, r := range recs.Records {
		if r.CreatedAt.Before(killedAt) {
			before++
		}
	}
	is.Equal(before, 4) // a rebuilt record is dated when its entity completed, not at the takeover
}

// TestBatchConcurrencyBound: at most ENRICH_BATCH_CONCURRENCY entities of a
// batch are in flight at once.
func TestBatchConcurrencyBound(t *testing.T) {
	is := is.New(t)
	var inFlight, peak atomic.Int64
	fake := fakeopenai.New(t, fakeopenai.WithModels("m"))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		inFlight.Add(-1)
		return fakeopenai.DefaultAnswer(req), 0
	})
	cfg := testConfig("")
	cfg.Sandbox = false
	cfg.BatchConcurrency = 3
	cfg.Providers = []llm.ProviderConfig{{Name: "fake", Type: "openai", BaseURL: fake.URL(), APIKey: "k", Models: []string{"m"}}}
	s := start(t, cfg)
	ten := s.register("batch-bound@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	var entities []obj
	for i := range 12 {
		entities = append(entities, obj{"name": fmt.Sprintf("E%d", i)})
	}
	st := s.startBatch(ten.key, obj{"entities": entities, "schema_id": id, "model": "fake::m", "strategy": "single_pass"})
	evs := s.follow(ten.key, st.JobID, "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "entity_completed")), 12)
	is.Equal(peak.Load(), int64(3)) // one call per entity (single_pass): three entities at a time
}

// TestBatchFusesEachEntity: with several models, each entity of a batch is
// fused like a single enrichment: fusion events carry its entity_index, its
// entity_completed names the fused record, and an arbiter may be named.
func TestBatchFusesEachEntity(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("batch-fusion@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			st := s.startBatch(ten.key, obj{"entities": []obj{{"name": "Acme"}, {"name": "Globex"}}, "schema_id": id,
				"models": []string{"sandbox::echo", "sandbox::alt", "sandbox::contrarian"}, "arbitration_model": "sandbox::echo"})
			evs := s.follow(ten.key, st.JobID, "")
			is.Equal(last(evs).Name, "completed")
			groups := byEntity(evs)
			for i := range 2 {
				g := groups[i]
				fc := find(g, "fusion_completed")
				is.Equal(len(fc), 1) // one fusion per entity, tagged with it
				is.Equal(len(find(g, "fusion_started")), 1)
				done := find(g, "entity_completed")
				is.Equal(len(done), 1)
				recID, _ := done[0].Data["record_id"].(string)
				var rec struct {
					Type    string `json:"type"`
					Sources []any  `json:"fusion_sources"`
				}
				is.Equal(s.call("GET", "/api/records/"+recID, ten.key, nil, &rec), 200)
				is.Equal(rec.Type, "fusion")
				is.Equal(len(rec.Sources), 3)
			}
			var recs struct{ Total int }
			is.Equal(s.call("GET", "/api/records?job_id="+st.JobID+"&type=fusion", ten.key, nil, &recs), 200)
			is.Equal(recs.Total, 2)
		})
	}
}
