package app_test

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/concept"
)

func TestEmbeddingModelSetting(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	r := newConceptRig(t, "sk-good-key-0001", "sk-good-key-0001")
	s := r.svc

	got, err := s.EmbeddingModelSetting(ctx, rigOrg)
	is.NoErr(err)
	is.Equal(got, app.EmbeddingModelSetting{Model: "builtin::ngram-384", Default: true, DefaultModel: "builtin::ngram-384", Dims: 384})

	for _, bad := range []string{"oa::judge-model", "nobody::x", "no-separator"} { // a chat model, no provider, no key
		_, err = s.SetEmbeddingModel(ctx, rigOrg, bad)
		e, ok := app.AsError(err)
		is.True(ok)
		is.Equal(e.Field, "embedding_model")
	}
	// No concepts yet: any embedding model.
	got, err = s.SetEmbeddingModel(ctx, rigOrg, "oa::text-embedding-3-small")
	is.NoErr(err)
	is.Equal(got.Model, "oa::text-embedding-3-small")
	is.Equal(got.Dims, 1536)
	is.True(!got.Default)
	got, err = s.SetEmbeddingModel(ctx, rigOrg, "builtin::ngram-384")
	is.NoErr(err)

	_, err = s.Resolve(ctx, rigOrg, app.ResolveRequest{Type: "company", Text: "Acme", Mode: app.ResolveWrite, Origin: concept.OriginManual})
	is.NoErr(err)
	// Concepts exist: a switch is refused, the same model and clearing are not.
	_, err = s.SetEmbeddingModel(ctx, rigOrg, "oa::text-embedding-3-small")
	e, ok := app.AsError(err)
	is.True(ok)
	is.Equal(e.Code, app.CodeEmbeddingModelLocked)
	got, err = s.SetEmbeddingModel(ctx, rigOrg, "builtin::ngram-384")
	is.NoErr(err)
	is.Equal(got.ConceptCount, 1)
	got, err = s.SetEmbeddingModel(ctx, rigOrg, "")
	is.NoErr(err)
	is.Equal(got.Model, "")
	is.Equal(got.ConceptCount, 1)
	_, err = s.ModelFor(ctx, rigOrg, "")
	e, ok = app.AsError(err)
	is.True(ok)
	is.Equal(e.Code, app.CodeSemanticDisabled)
}
