package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// TestBuiltinEmbedder: builtin::ngram-384 is offered without the sandbox
// or any provider, needs no key, costs nothing, and answers
// concept.NgramEmbed's vectors in the texts' order.
func TestBuiltinEmbedder(t *testing.T) {
	is := is.New(t)
	r, err := llm.NewRegistry(llm.Config{})
	is.NoErr(err)
	is.Equal(llm.NgramModel.String(), "builtin::ngram-384")

	infos := r.EmbeddingModels()
	is.Equal(len(infos), 1)
	is.Equal(infos[0].Key, llm.NgramModel)
	is.Equal(infos[0].Dims, 384)
	is.Equal(infos[0].Price, model.Price{})
	for _, m := range r.Models() {
		is.True(m.Key != llm.NgramModel) // not a chat model
	}
	p, ok := r.Provider(llm.BuiltinProvider)
	is.True(ok)
	is.True(p.Keyless)

	texts := []string{"IBM", "International Business Machines Corp.", "", "Apple Inc."}
	resp, err := r.Embed(context.Background(), ports.EmbedRequest{Model: llm.NgramModel, Texts: texts})
	is.NoErr(err)
	is.Equal(len(resp.Vectors), len(texts))
	for i, text := range texts {
		is.Equal(resp.Vectors[i], concept.NgramEmbed(text, 384))
	}
	is.Equal(resp.InputTokens, 0)

	t.Run("a cancelled call fails", func(t *testing.T) {
		is := is.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := r.Embed(ctx, ports.EmbedRequest{Model: llm.NgramModel, Texts: texts})
		is.True(errors.Is(err, context.Canceled))
	})
	t.Run("another size is unknown", func(t *testing.T) {
		is := is.New(t)
		_, err := r.Embed(context.Background(), ports.EmbedRequest{Model: model.Key{Provider: "builtin", Model: "ngram-768"}, Texts: texts})
		is.True(errors.Is(err, ports.ErrUnknownModel))
	})
	t.Run("the name is reserved", func(t *testing.T) {
		is := is.New(t)
		_, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{{Name: "builtin", Type: llm.TypeOllama, Models: []string{"m"}}}})
		is.True(err != nil && strings.Contains(err.Error(), "reserved"))
	})
}
