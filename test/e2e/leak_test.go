package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestErrorsNoAdapterText: what a provider says when it fails (here a
// message carrying a key and a host) reaches neither the event stream nor a
// blocking call's answer; clients see the code's fixed text instead.
func TestErrorsNoAdapterText(t *testing.T) {
	const secret = "sk-live-LEAK1234"
	fake := fakeopenai.New(t, fakeopenai.WithResponder(func(fakeopenai.ChatRequest) (string, int) {
		return "upstream failure for key " + secret + " (db.internal.example:5432)", 500
	}))
	cfg := testConfig("")
	cfg.Sandbox = false
	cfg.LLMAttempts = 2
	cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
	s := start(t, cfg)
	ten := s.register("leak@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"local::fake-1"}, "strategy": "single_pass"}

	t.Run("stream", func(t *testing.T) {
		is := is.New(t)
		evs := s.follow(ten.key, s.startJob(ten.key, body), "")
		is.Equal(last(evs).Name, "failed")
		is.Equal(last(evs).Data["error_code"], "llm_unavailable")
		is.Equal(len(find(evs, "attempt")), 2) // ENRICH_LLM_ATTEMPTS
		for _, e := range evs {
			raw, _ := json.Marshal(e.Data)
			is.True(!strings.Contains(string(raw), "LEAK"))     // no provider text in any event
			is.True(!strings.Contains(string(raw), "internal")) // nor its host
		}
		is.True(strings.Contains(last(evs).Data["error_message"].(string), "provider failed"))
	})
	t.Run("sync", func(t *testing.T) {
		is := is.New(t)
		var e struct {
			Detail, Code string
			Retryable    bool
		}
		is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, body, &e), 502)
		is.Equal(e.Code, "llm_unavailable")
		is.True(e.Retryable)
		is.True(!strings.Contains(e.Detail, "LEAK"))
		is.True(strings.Contains(e.Detail, "provider failed"))
	})
	t.Run("refused key", func(t *testing.T) {
		is := is.New(t)
		fake.SetResponder(func(fakeopenai.ChatRequest) (string, int) {
			return "Incorrect API key provided: " + secret, 401
		})
		evs := s.follow(ten.key, s.startJob(ten.key, body), "")
		is.Equal(last(evs).Data["error_code"], "no_usable_provider_key")
		for _, e := range evs {
			raw, _ := json.Marshal(e.Data)
			is.True(!strings.Contains(string(raw), "LEAK"))
		}
	})
}
