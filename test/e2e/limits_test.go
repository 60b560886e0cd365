package e2e_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestProviderConcurrency: with one call at a time allowed per organization
// at a provider, a job's three expertise calls go out one after another,
// the waiting ones show provider_queued, the job completes, and the
// provider never sees two calls of the organization at once.
func TestProviderConcurrency(t *testing.T) {
	is := is.New(t)
	var inFlight, peak atomic.Int32
	fake := fakeopenai.New(t, fakeopenai.WithResponder(func(req fakeopenai.ChatRequest) (string, int) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		return fakeopenai.DefaultAnswer(req), 0
	}))
	cfg := testConfig("")
	cfg.LLMOrgConcurrency = 1
	cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
	s := start(t, cfg)
	ten := s.register("limits@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id,
		"models": []string{"local::fake-1"}, "strategy": "multi_expertise"}), "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "attempt")), 3)
	queued := find(evs, "provider_queued")
	is.Equal(len(queued), 2) // the first call went out at once, the other two waited
	for _, q := range queued {
		is.Equal(q.Data["provider"], "local")
		is.Equal(q.Data["model"], "local::fake-1")
	}
	is.Equal(peak.Load(), int32(1))
	is.Equal(fake.Requests(), 3)

	// The sandbox is never bounded: no provider_queued.
	evs = s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id,
		"models": []string{"sandbox::echo"}, "strategy": "multi_expertise"}), "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "provider_queued")), 0)
}
