package e2e_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestOpenAICompatible runs the flow through the OpenAI client against an
// in-process OpenAI-compatible server that answers well, slowly, with
// errors, or with invalid JSON.
func TestOpenAICompatible(t *testing.T) {
	fake := fakeopenai.New(t)
	cfg := testConfig("")
	cfg.Sandbox = false
	cfg.Providers = []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "test-key", Models: []string{"fake-1"}}}
	s := start(t, cfg)
	ten := s.register("openai@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"local::fake-1"}, "strategy": "multi_expertise"}

	t.Run("success", func(t *testing.T) {
		is := is.New(t)
		evs := s.follow(ten.key, s.startJob(ten.key, body), "")
		is.Equal(last(evs).Name, "completed")
		mc := find(evs, "model_completed")[0]
		is.True(mc.Data["input_tokens"].(float64) > 0)
		is.True(mc.Data["cost"].(float64) > 0)
		is.Equal(len(find(evs, "attempt")), 3)
	})

	t.Run("auto picks the real model", func(t *testing.T) {
		is := is.New(t)
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id}), "")
		is.Equal(find(evs, "model_auto_selected")[0].Data["model"], "local::fake-1")
		is.Equal(last(evs).Name, "completed")
	})

	t.Run("invalid JSON is retried with the error fed back", func(t *testing.T) {
		is := is.New(t)
		fake.InvalidNext(1)
		evs := s.follow(ten.key, s.startJob(ten.key, body), "")
		is.Equal(last(evs).Name, "completed")
		attempts := find(evs, "attempt")
		is.Equal(len(attempts), 4)
		var retry event
		for _, a := range attempts {
			if a.Data["attempt"].(float64) == 2 {
				retry = a
			}
		}
		is.True(strings.HasPrefix(retry.Data["reason"].(string), "model_output_invalid"))
		is.True(retry.Data["expertise"] != "")
	})

	t.Run("schema-invalid output exhausts retries and fails", func(t *testing.T) {
		is := is.New(t)
		fake.SchemaInvalidNext(1000)
		defer fake.SchemaInvalidNext(0)
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"local::fake-1"}, "strategy": "single_pass"}), "")
		end := last(evs)
		is.Equal(end.Name, "failed")
		is.Equal(end.Data["error_code"], "model_output_invalid")
		is.Equal(evs[len(evs)-2].Name, "error")
		is.Equal(len(find(evs, "attempt")), 5) // the reference's 5 attempts
	})

	t.Run("server errors fail with llm_unavailable", func(t *testing.T) {
		is := is.New(t)
		fake.FailNext(1000, 500)
		defer fake.FailNext(0, 500)
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"local::fake-1"}, "strategy": "single_pass"}), "")
		is.Equal(last(evs).Name, "failed")
		is.Equal(last(evs).Data["error_code"], "llm_unavailable")
	})

	t.Run("a transient failure is retried", func(t *testing.T) {
		is := is.New(t)
		fake.FailNext(1, 500)
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"local::fake-1"}, "strategy": "single_pass"}), "")
		is.Equal(last(evs).Name, "completed")
		is.Equal(len(find(evs, "attempt")), 2)
	})
}
