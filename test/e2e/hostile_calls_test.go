package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// wideSchema is a schema of n top-level properties, all but one an object
// (each its own expertise domain): the 2,000-call schema.
func wideSchema(n int) string {
	props := map[string]any{"name": map[string]any{"type": "string"}}
	for i := range n - 1 {
		props[fmt.Sprintf("part%04d", i)] = map[string]any{"type": "object", "additionalProperties": true}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	return string(b)
}

// TestHostileCalls (issue 27, finding 2): a request cannot make the service
// call models without bound. A schema of 2,000 properties, 1,999 of them
// objects, used to make 1,999 calls per model; its domains are grouped to
// the cap now (ENRICH_MAX_EXPERTISE_DOMAINS, 16). A request that plans more
// calls than ENRICH_MAX_CALLS_PER_JOB is refused before anything is spent,
// single and batch alike; and a run whose retries reach the cap fails with
// too_many_calls, the call past it not made.
func TestHostileCalls(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres
		}
		t.Run(b.name, func(t *testing.T) {
			t.Run("a wide schema makes at most the domain cap's calls", func(t *testing.T) {
				is := is.New(t)
				s := start(t, testConfig(b.dsn(t)))
				ten := s.register("wide@example.com")
				schemaID := s.createSchema(ten.key, "Wide", wideSchema(2000))
				jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
					"models": []string{"sandbox::echo"}, "strategy": "multi_expertise"})
				evs := s.follow(ten.key, jobID, "")
				is.Equal(last(evs).Name, "completed")
				is.Equal(len(find(evs, "expertise_started")), 16)
				entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
				is.NoErr(err)
				is.Equal(len(entries), 16)
				// auto groups alike, and says so.
				jobID = s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}})
				evs = s.follow(ten.key, jobID, "")
				is.Equal(last(evs).Name, "completed")
				is.Equal(len(find(evs, "expertise_started")), 16)
				sel := find(evs, "strategy_selected")
				is.Equal(len(sel), 1)
				signals, _ := sel[0].Data["signals"].(map[string]any)
				is.Equal(signals["grouped_from_domain_count"], float64(2000))
			})

			t.Run("the call cap refuses at submit and stops a run", func(t *testing.T) {
				is := is.New(t)
				cfg := testConfig(b.dsn(t))
				cfg.MaxCallsPerJob = 10
				s := start(t, cfg)
				ten := s.register("calls@example.com")
				schemaID := s.createSchema(ten.key, "Company", companySchema) // 3 domains
				// 4 models × 3 domains + an arbitration: 13 planned calls.
				four := []string{"sandbox::echo", "sandbox::alt", "sandbox::contrarian", "sandbox::flaky"}
				var e struct{ Code, Field, Detail string }
				for _, route := range []string{"/api/single/enrich/stream", "/api/single/enrich/sync"} {
					is.Equal(s.call("POST", route, ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": four,
						"strategy": "multi_expertise"}, &e), 400)
					is.Equal(e.Code, "too_many_calls")
					is.Equal(e.Field, "models")
					is.True(strings.Contains(e.Detail, "10"))
				}
				// A batch's cap is per entity: the same plan is refused whatever the entities.
				is.Equal(s.call("POST", "/api/batch/start", ten.key, obj{"entities": []obj{{"name": "Acme"}}, "schema_id": schemaID,
					"models": four, "strategy": "multi_expertise"}, &e), 400)
				is.Equal(e.Code, "too_many_calls")
				// 3 models fit (9 calls + 1), in a batch of 3 entities too.
				bj := s.startBatch(ten.key, obj{"entities": []obj{{"name": "A"}, {"name": "B"}, {"name": "C"}}, "schema_id": schemaID,
					"models": four[:3], "strategy": "multi_expertise"})
				is.Equal(last(s.follow(ten.key, bj.JobID, "")).Name, "completed")
			})

			t.Run("a run's call past the cap is not made", func(t *testing.T) {
				is := is.New(t)
				cfg := testConfig(b.dsn(t))
				cfg.MaxCallsPerJob = 3
				s := start(t, cfg)
				ten := s.register("retries@example.com")
				schemaID := s.createSchema(ten.key, "Company", companySchema)
				// A model whose answers never validate retries each call up
				// to 5 times: the 4th call of a single_pass run is refused.
				before, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
				is.NoErr(err)
				cfg2 := obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::broken"}, "strategy": "single_pass"}
				evs := s.follow(ten.key, s.startJob(ten.key, cfg2), "")
				is.Equal(last(evs).Name, "failed")
				is.Equal(last(evs).Data["error_code"], "too_many_calls")
				is.Equal(len(find(evs, "attempt")), 4) // the 4th attempt's call was never made
				after, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
				is.NoErr(err)
				is.Equal(len(after)-len(before), 3)
				is.Equal(s.runningAfter(5*time.Second), 0)
			})
		})
	}
}
