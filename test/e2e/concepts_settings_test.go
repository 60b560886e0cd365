package e2e_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

type embeddingModelSetting struct {
	EmbeddingModel *string `json:"embedding_model"`
	IsDefault      bool    `json:"is_default"`
	DefaultModel   string  `json:"default_model"`
	Dims           int     `json:"dims"`
	ConceptCount   int     `json:"concept_count"`
}

// TestEmbeddingModelSettingHTTP drives GET and PUT
// /api/org-keys/embedding-model on every store: the default, clearing
// (semantic ids off: probes unavailable, creates refused), setting the
// concepts' own model back, the lock against another model while concepts
// exist, unknown models and the owner rule.
func TestEmbeddingModelSettingHTTP(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			const path, builtin = "/api/org-keys/embedding-model", "builtin::ngram-384"
			bi := builtin
			// An OpenAI provider, so that its embedding model is a known
			// one the lock refuses.
			cfg := testConfig(b.dsn(t))
			cfg.Providers = append(cfg.Providers, llm.ProviderConfig{Name: "openai", Type: "openai", BaseURL: fakeopenai.New(t).URL(),
				Models: []string{"gpt-4o-mini"}})
			s := start(t, cfg)
			home := s.register("setting@example.com")
			editor, operator := s.newKey(home.token, "editor"), s.newKey(home.token, "operator")

			var got embeddingModelSetting
			is.Equal(s.call("GET", path, operator, nil, &got), 200)
			is.Equal(got, embeddingModelSetting{EmbeddingModel: &bi, IsDefault: true, DefaultModel: builtin, Dims: 384})
			// A concept, then the setting counts it.
			is.Equal(s.call("POST", "/api/semantic-concepts", home.key, obj{"text": "IBM", "concept_type": "company"}, nil), 201)

			// Only owners set it; operators read it.
			is.Equal(s.call("PUT", path, editor, obj{"embedding_model": nil}, nil), 403)
			is.Equal(s.call("PUT", path, operator, obj{"embedding_model": nil}, nil), 403)

			// Cleared: semantic ids are off.
			is.Equal(s.call("PUT", path, home.key, obj{"embedding_model": nil}, &got), 200)
			is.Equal(got, embeddingModelSetting{DefaultModel: builtin, ConceptCount: 1})
			is.Equal(s.call("GET", path, operator, nil, &got), 200)
			is.Equal(got.EmbeddingModel, nil)
			var probe conceptProbe
			is.Equal(s.call("POST", "/api/semantic-concepts/probe", operator, obj{"text": "IBM", "concept_type": "company"}, &probe), 200)
			is.Equal(probe.Outcome, "unavailable")
			var e apiError
			is.Equal(s.call("POST", "/api/semantic-concepts", home.key, obj{"text": "Acme", "concept_type": "company"}, &e), 409)
			is.Equal(e.Code, "semantic_ids_disabled")

			// Back to the concepts' own model.
			is.Equal(s.call("PUT", path, home.key, obj{"embedding_model": builtin}, &got), 200)
			is.Equal(got, embeddingModelSetting{EmbeddingModel: &bi, DefaultModel: builtin, Dims: 384, ConceptCount: 1})
			is.Equal(s.call("POST", "/api/semantic-concepts/probe", operator, obj{"text": "IBM", "concept_type": "company"}, &probe), 200)
			is.Equal(probe.Outcome, "exact_hit")

			// Another model while concepts of the built-in one exist.
			e = apiError{}
			is.Equal(s.call("PUT", path, home.key, obj{"embedding_model": "openai::text-embedding-3-small"}, &e), 409)
			is.Equal(e.Code, "embedding_model_locked")
			// Unknown models and malformed bodies name the field.
			for _, body := range []obj{{"embedding_model": "nope::nothing"}, {"embedding_model": "openai::gpt-4o-mini"}, {"embedding_model": "no-separator"},
				{"embedding_model": ""}, {"embedding_model": 7}, {}} {
				e = apiError{}
				is.Equal(s.call("PUT", path, home.key, body, &e), 400)
				is.Equal(e.Field, "embedding_model")
			}
			is.Equal(s.call("GET", path, operator, nil, &got), 200)
			is.Equal(*got.EmbeddingModel, builtin)
		})
	}
}
