package llm_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

func TestEmbeddingModel(t *testing.T) {
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "oa", Type: "openai", BaseURL: "http://127.0.0.1:1/v1", APIKey: "sk-x", Models: []string{"gpt-4o"}},
		{Name: "an", Type: "anthropic", APIKey: "sk-y", Models: []string{"claude-sonnet-4"}},
		{Name: "ol", Type: "ollama", BaseURL: "http://127.0.0.1:2", Models: []string{"llama3"}},
	}, Prices: map[string]model.Price{"ol::priced-embed": {InputPerMTok: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key     string
		dims    int
		perMTok int64
		err     error
	}{
		{key: "builtin::ngram-384", dims: 384},
		{key: "oa::text-embedding-3-small", dims: 1536, perMTok: 20_000},
		{key: "oa::text-embedding-3-large", dims: 3072, perMTok: 130_000},
		{key: "oa::gpt-4o", err: ports.ErrInvalid},                 // a chat model
		{key: "oa::no-such-embedder", err: ports.ErrInvalid},       // unknown to the catalog
		{key: "an::text-embedding-3-small", err: ports.ErrInvalid}, // no embeddings in the protocol
		{key: "nobody::text-embedding-3-small", err: ports.ErrUnknownModel},
		{key: "builtin::ngram-999", err: ports.ErrUnknownModel},
		{key: "ol::nomic-embed-text", dims: 768},
		{key: "ol::anything-pulled"}, // a local Ollama serves what it pulled, free
		{key: "ol::priced-embed", perMTok: 7},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			is := is.New(t)
			k, err := model.ParseKey(tt.key)
			is.NoErr(err)
			info, err := r.EmbeddingModel(k)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(info.Key, k)
			is.Equal(info.Dims, tt.dims)
			is.Equal(info.Price.InputPerMTok, tt.perMTok)
			is.Equal(info.Price.OutputPerMTok, int64(0))
		})
	}
}
