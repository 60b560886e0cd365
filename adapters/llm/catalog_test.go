package llm_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
)

func TestLoadCatalog(t *testing.T) {
	tests := []struct {
		name     string
		override string
		err      string
	}{
		{"embedded only", "", ""},
		{"override", `{"models":[{"model":"gpt-4o","context_length":1,"input_usd_per_mtok":1,"output_usd_per_mtok":2}]}`, ""},
		{"not JSON", `{"models":`, "model catalog 1"},
		{"no model name", `{"models":[{"context_length":1}]}`, "model is required"},
		{"negative price", `{"models":[{"model":"m","input_usd_per_mtok":-1,"output_usd_per_mtok":1}]}`, "prices must be 0 or more"},
		{"negative context", `{"models":[{"model":"m","context_length":-5}]}`, "context_length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var overrides [][]byte
			if tt.override != "" {
				overrides = append(overrides, []byte(tt.override))
			}
			c, err := llm.LoadCatalog(overrides...)
			if tt.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tt.err))
				return
			}
			is.NoErr(err)
			is.True(len(c) >= 10) // the embedded models are there
		})
	}
}

// The registry describes configured models from the catalog: capabilities,
// context and prices; an override by composite key singles out one
// provider's model; a model the catalog does not know keeps the default
// price and no capability.
func TestRegistryUsesCatalog(t *testing.T) {
	is := is.New(t)
	cat, err := llm.LoadCatalog([]byte(`{"models":[
		{"model":"cheap::gpt-4o","context_length":64000,"input_usd_per_mtok":0.5,"output_usd_per_mtok":1.5,"vision":false},
		{"model":"house-model","context_length":32000,"input_usd_per_mtok":0,"output_usd_per_mtok":0,"structured_output":true}]}`))
	is.NoErr(err)
	r, err := llm.NewRegistry(llm.Config{Catalog: cat, Providers: []llm.ProviderConfig{
		{Name: "openai", Type: "openai", APIKey: "sk", Models: []string{"gpt-4o", "house-model", "mystery"}},
		{Name: "cheap", Type: "openai", BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk", Models: []string{"gpt-4o"}},
		{Name: "claude", Type: "anthropic", APIKey: "sk", Models: []string{"claude-sonnet-4-5"}},
		{Name: "gemini", Type: "googleai", APIKey: "sk", Models: []string{"gemini-2.5-pro"}},
	}})
	is.NoErr(err)
	get := func(k string) model.Info {
		key, err := model.ParseKey(k)
		is.NoErr(err)
		m, err := r.Model(key)
		is.NoErr(err)
		return m
	}
	m := get("openai::gpt-4o")
	is.Equal(m.ContextLength, 128000)
	is.Equal(m.Price, model.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, PerSearch: 10_000}) // $10 per 1,000 searches
	is.True(m.Vision && m.PDFInput && m.ResponseSchema && m.StrictOutput && m.AudioInput)
	is.True(m.WebSearch && m.WebSearchTool) // offered, and the Responses API's tool is called
	is.True(modelsel.CanSearch(m))
	is.True(modelsel.CanSearch(get("claude::claude-sonnet-4-5"))) // Anthropic's server tool
	g := get("gemini::gemini-2.5-pro")
	is.True(g.WebSearch && !g.WebSearchTool) // Google offers grounding; enrich calls no tool for googleai
	is.True(!modelsel.CanSearch(g))
	c := get("cheap::gpt-4o")
	is.Equal(c.ContextLength, 64000)
	is.Equal(c.Price, model.Price{InputPerMTok: 500_000, OutputPerMTok: 1_500_000})
	is.True(!c.Vision)
	is.True(!modelsel.CanSearch(c)) // its own entry says no web search
	h := get("openai::house-model")
	is.Equal(h.Price, model.Price{}) // the catalog may say a model is free
	is.True(h.ResponseSchema)
	u := get("openai::mystery")
	is.Equal(u.Price, llm.DefaultModelPrice) // unknown models are not free
	is.Equal(u.ContextLength, 0)
}
