package contract

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

// RunConceptReviews checks the review list: a pair is kept once per
// organization whichever order it comes in (its first filing wins), the
// listing is most similar first and paged, filtered by type and scoped to
// the organization, drops remove every pair naming a concept, and
// unstorable pairs are refused.
func RunConceptReviews(t *testing.T, newStore func(t *testing.T) ports.ConceptReviews) {
	t.Run("file once", func(t *testing.T) { reviewsFileOnce(t, newStore(t)) })
	t.Run("list", func(t *testing.T) { reviewsList(t, newStore(t)) })
	t.Run("drop", func(t *testing.T) { reviewsDrop(t, newStore(t)) })
	t.Run("refused", func(t *testing.T) { reviewsRefused(t, newStore(t)) })
}

func review(org, typ, a, b string, sim float64, n int) ports.ConceptReview {
	return ports.ConceptReview{ID: TestUUID(), OrgID: org, Type: typ, EmbeddingModel: testModel, AID: a, BID: b,
		Similarity: sim, Reason: ports.ReviewEscalated, Detail: "why", CreatedAt: at(n)}
}

func reviewsFileOnce(t *testing.T, s ports.ConceptReviews) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	first := review(org, "company", "c1", "c2", 0.85, 1)
	is.NoErr(s.FileReviews(ctx, []ports.ConceptReview{first}))
	// The same pair again, reversed and within one call twice: kept once.
	again := review(org, "company", "c2", "c1", 0.86, 2)
	again.Reason = ports.ReviewSeparated
	is.NoErr(s.FileReviews(ctx, []ports.ConceptReview{again, review(org, "company", "c1", "c2", 0.87, 3)}))
	is.NoErr(s.FileReviews(ctx, nil))
	got, n, err := s.ListReviews(ctx, org, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(len(got), 1)
	is.Equal(got[0].ID, first.ID)
	is.Equal(got[0].AID, "c1")
	is.Equal(got[0].BID, "c2")
	is.Equal(got[0].Similarity, 0.85)
	is.Equal(got[0].Reason, ports.ReviewEscalated)
	is.Equal(got[0].Detail, "why")
	is.Equal(got[0].Type, "company")
	is.Equal(got[0].EmbeddingModel, testModel)
	sameTime(t, "created_at", got[0].CreatedAt, at(1))
	// Another organization files the same ids: its own pair.
	is.NoErr(s.FileReviews(ctx, []ports.ConceptReview{review(other, "company", "c2", "c1", 0.9, 4)}))
	_, n, err = s.ListReviews(ctx, other, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 1)
	_, n, err = s.ListReviews(ctx, org, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 1)
}

func reviewsList(t *testing.T, s ports.ConceptReviews) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	is.NoErr(s.FileReviews(ctx, []ports.ConceptReview{
		review(org, "company", "a", "b", 0.81, 1),
		review(org, "company", "a", "c", 0.91, 2),
		review(org, "person", "p", "q", 0.85, 3),
	}))
	got, n, err := s.ListReviews(ctx, org, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 3)
	sims := []float64{}
	for _, r := range got {
		sims = append(sims, r.Similarity)
	}
	is.Equal(sims, []float64{0.91, 0.85, 0.81}) // most similar first
	got, n, err = s.ListReviews(ctx, org, ports.ReviewFilter{Limit: 1, Offset: 1})
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(len(got), 1)
	is.Equal(got[0].Similarity, 0.85)
	got, n, err = s.ListReviews(ctx, org, ports.ReviewFilter{Types: []string{"company"}})
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(len(got), 2)
	got, n, err = s.ListReviews(ctx, org, ports.ReviewFilter{Types: []string{"x\x00"}})
	is.NoErr(err) // a type no store holds matches nothing
	is.Equal(n, 0)
	is.Equal(len(got), 0)
	got, n, err = s.ListReviews(ctx, org, ports.ReviewFilter{Offset: 10})
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(len(got), 0)
	_, n, err = s.ListReviews(ctx, newID("org"), ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 0)
}

func reviewsDrop(t *testing.T, s ports.ConceptReviews) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	is.NoErr(s.FileReviews(ctx, []ports.ConceptReview{
		review(org, "company", "a", "b", 0.81, 1),
		review(org, "company", "c", "a", 0.82, 2),
		review(org, "company", "c", "d", 0.83, 3),
		review(other, "company", "a", "b", 0.84, 4),
	}))
	n, err := s.DropReviews(ctx, org, []string{"a", "zz"})
	is.NoErr(err)
	is.Equal(n, 2) // a's pairs, on either side
	got, total, err := s.ListReviews(ctx, org, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(total, 1)
	is.Equal(got[0].AID, "c")
	is.Equal(got[0].BID, "d")
	_, total, err = s.ListReviews(ctx, other, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(total, 1) // another organization's pair stays
	n, err = s.DropReviews(ctx, org, nil)
	is.NoErr(err)
	is.Equal(n, 0)
	n, err = s.DropReviews(ctx, org, []string{"\x00"})
	is.NoErr(err)
	is.Equal(n, 0)
}

func reviewsRefused(t *testing.T, s ports.ConceptReviews) {
	ctx := context.Background()
	org := newID("org")
	self := review(org, "company", "a", "a", 0.9, 1)
	empty := review(org, "company", "a", "", 0.9, 1)
	nan := review(org, "company", "a", "b", math.NaN(), 1)
	nul := review(org, "company", "a", "b", 0.9, 1)
	nul.Detail = "judge said \x00"
	for name, p := range map[string]ports.ConceptReview{"self": self, "empty id": empty, "NaN": nan, "NUL detail": nul} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			err := s.FileReviews(ctx, []ports.ConceptReview{review(org, "company", "x", "y", 0.9, 1), p})
			is.True(errors.Is(err, ports.ErrInvalid))
		})
	}
	is := is.New(t)
	_, n, err := s.ListReviews(ctx, org, ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(n, 0) // a refused call files nothing
}
