package e2e_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestEmbeddingModelCostsHTTP checks that an embedding call's tokens and
// cost show in the cost summary and by model, apart from the chat tokens.
func TestEmbeddingModelCostsHTTP(t *testing.T) {
	is := is.New(t)
	const model = "openai::text-embedding-3-small"
	cfg := testConfig("")
	cfg.Providers = append(cfg.Providers, llm.ProviderConfig{Name: "openai", Type: "openai", BaseURL: fakeopenai.New(t).URL(),
		APIKey: "sk-embedding-costs-key", Models: []string{"gpt-4o-mini"}})
	cfg.EmbeddingModel = model
	s := start(t, cfg)
	home := s.register("embedding-costs@example.com")

	var probe conceptProbe
	is.Equal(s.call("POST", "/api/semantic-concepts/probe", home.key, obj{"text": "International Business Machines", "concept_type": "company"}, &probe), 200)
	is.Equal(probe.Outcome, "no_match")

	var sum struct {
		TotalCost        float64 `json:"total_cost"`
		TotalInputTokens int     `json:"total_input_tokens"`
		EmbeddingTokens  int     `json:"embedding_tokens"`
		EmbeddingCostUSD float64 `json:"embedding_cost_usd"`
	}
	is.Equal(s.call("GET", "/api/costs/summary", home.key, nil, &sum), 200)
	is.True(sum.EmbeddingTokens > 0)
	is.True(sum.EmbeddingCostUSD > 0)
	is.Equal(sum.EmbeddingCostUSD, sum.TotalCost) // nothing else was called
	is.Equal(sum.TotalInputTokens, 0)

	var rows []struct {
		CompositeKey     string  `json:"composite_key"`
		EmbeddingTokens  int     `json:"embedding_tokens"`
		EmbeddingCostUSD float64 `json:"embedding_cost_usd"`
	}
	is.Equal(s.call("GET", "/api/costs/by-model", home.key, nil, &rows), 200)
	is.Equal(len(rows), 1)
	is.Equal(rows[0].CompositeKey, model)
	is.Equal(rows[0].EmbeddingTokens, sum.EmbeddingTokens)
	is.Equal(rows[0].EmbeddingCostUSD, sum.EmbeddingCostUSD)

	// The daily rows (stats by day, and a preset's daily figures) carry
	// them too.
	type daily struct {
		Period           string   `json:"period"`
		EmbeddingTokens  *int     `json:"embedding_tokens"`
		EmbeddingCostUSD *float64 `json:"embedding_cost_usd"`
	}
	var days []daily
	is.Equal(s.call("GET", "/api/costs/stats?group_by=day", home.key, nil, &days), 200)
	is.Equal(len(days), 1)
	is.True(days[0].EmbeddingTokens != nil && days[0].EmbeddingCostUSD != nil)
	is.Equal(*days[0].EmbeddingTokens, sum.EmbeddingTokens)
	is.Equal(*days[0].EmbeddingCostUSD, sum.EmbeddingCostUSD)
	var preset struct {
		Daily []daily `json:"daily"`
	}
	is.Equal(s.call("GET", "/api/costs/presets/7d", home.key, nil, &preset), 200)
	is.Equal(len(preset.Daily), 1)
	is.True(preset.Daily[0].EmbeddingTokens != nil)
	is.Equal(*preset.Daily[0].EmbeddingTokens, sum.EmbeddingTokens)
}
