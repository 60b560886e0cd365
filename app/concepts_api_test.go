package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// ngramEmbedder is the built-in embedder's arithmetic, or a failure.
type ngramEmbedder struct{ err error }

func (e ngramEmbedder) Embed(_ context.Context, req ports.EmbedRequest) (ports.EmbedResponse, error) {
	if e.err != nil {
		return ports.EmbedResponse{}, e.err
	}
	out := ports.EmbedResponse{}
	for _, t := range req.Texts {
		out.Vectors = append(out.Vectors, concept.NgramEmbed(t, concept.NgramDims))
	}
	return out, nil
}

func conceptService(emb ports.Embedder) *app.ConceptService {
	store := memory.NewConceptStore()
	return &app.ConceptService{Store: store, Vectors: store, Reviews: memory.NewConceptReviews(), Embedder: emb,
		DefaultModel: model.Key{Provider: "builtin", Model: "ngram-384"}, Clock: system.Clock{}, IDs: system.IDs{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestConceptAPIValidation(t *testing.T) {
	editor := &access.Principal{OrgID: "o1", Role: access.Editor, Scopes: access.DefaultScopes()}
	operator := &access.Principal{OrgID: "o1", Role: access.Operator, Scopes: access.DefaultScopes()}
	zero, two, many := 0.0, 2.0, 101
	svc := conceptService(ngramEmbedder{})
	ctx := context.Background()
	tests := []struct {
		name  string
		call  func() error
		field string
		kind  error
	}{
		{"probe without type", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Text: "IBM"})
			return err
		}, "concept_type", ports.ErrInvalid},
		{"probe NUL text", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Type: "company", Text: "I\x00BM"})
			return err
		}, "text", ports.ErrInvalid},
		{"probe lone surrogate text", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Type: "company", Text: "I\xed\xa0\x80BM"})
			return err
		}, "text", ports.ErrInvalid},
		{"probe threshold 0", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Type: "company", Text: "IBM", Threshold: &zero})
			return err
		}, "threshold", ports.ErrInvalid},
		{"probe threshold 2", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Type: "company", Text: "IBM", Threshold: &two})
			return err
		}, "threshold", ports.ErrInvalid},
		{"probe 101 neighbours", func() error {
			_, err := svc.ProbeConcept(ctx, operator, app.ProbeRequest{Type: "company", Text: "IBM", Neighbors: &many})
			return err
		}, "neighbors", ports.ErrInvalid},
		{"list limit", func() error {
			_, _, err := svc.ListConcepts(ctx, operator, app.ConceptQuery{Limit: 500})
			return err
		}, "limit", ports.ErrInvalid},
		{"list offset", func() error {
			_, _, err := svc.ListConcepts(ctx, operator, app.ConceptQuery{Offset: -1})
			return err
		}, "offset", ports.ErrInvalid},
		{"list sort", func() error {
			_, _, err := svc.ListConcepts(ctx, operator, app.ConceptQuery{SortBy: "x"})
			return err
		}, "sort_by", ports.ErrInvalid},
		{"operator cannot create", func() error {
			_, err := svc.CreateConcept(ctx, operator, app.ConceptCreate{Type: "company", Text: "IBM"})
			return err
		}, "", access.ErrForbidden},
		{"editor cannot clear types", func() error {
			_, err := svc.DeleteConcepts(ctx, editor, app.ConceptDeletion{Types: []string{"company"}})
			return err
		}, "", access.ErrForbidden},
		{"empty delete", func() error {
			_, err := svc.DeleteConcepts(ctx, editor, app.ConceptDeletion{})
			return err
		}, "ids", ports.ErrInvalid},
		{"another organization's concept", func() error {
			_, err := svc.GetConcept(ctx, &access.Principal{OrgID: "o2", Role: access.Owner, Scopes: access.DefaultScopes()}, "c")
			return err
		}, "", ports.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := tt.call()
			is.True(errors.Is(err, tt.kind))
			if tt.field != "" {
				e, ok := app.AsError(err)
				is.True(ok)
				is.Equal(e.Field, tt.field)
			}
		})
	}
}

// TestConceptProbeOutcomes: the probe's outcomes, and unavailable when
// the embedder fails; nothing is created by a probe.
func TestConceptProbeOutcomes(t *testing.T) {
	ctx := context.Background()
	editor := &access.Principal{OrgID: "o1", Role: access.Editor, Scopes: access.DefaultScopes()}
	svc := conceptService(ngramEmbedder{})
	_, err := svc.CreateConcept(ctx, editor, app.ConceptCreate{Type: "company", Text: "International Business Machines"})
	is.New(t).NoErr(err)
	tests := []struct{ text, want string }{
		{"international  business machines", "exact_hit"},
		{"International Business Machine", "match"},
		{"Umbrella", "no_match"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			is := is.New(t)
			pr, err := svc.ProbeConcept(ctx, editor, app.ProbeRequest{Type: "company", Text: tt.text})
			is.NoErr(err)
			is.Equal(pr.Outcome, tt.want)
		})
	}
	is := is.New(t)
	_, n, err := svc.ListConcepts(ctx, editor, app.ConceptQuery{})
	is.NoErr(err)
	is.Equal(n, 1)
	down := conceptService(ngramEmbedder{err: ports.ErrLLMUnavailable})
	pr, err := down.ProbeConcept(ctx, editor, app.ProbeRequest{Type: "company", Text: "IBM"})
	is.NoErr(err)
	is.Equal(pr.Outcome, "unavailable")
	is.True(pr.Detail != "")
}
