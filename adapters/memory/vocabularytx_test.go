package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// TestVocabularyInUnitOfWork: a merge's vocabulary steps in a unit that
// fails later leave the concepts (texts, vectors), the links and the
// review pairs as they were; in a unit that commits they stay.
func TestVocabularyInUnitOfWork(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	concepts, links, reviews := memory.NewConceptStore(), memory.NewConceptLinks(), memory.NewConceptReviews()
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), nil).
		WithConcepts(concepts, links, reviews)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct{ id, text string }{{"w", "IBM"}, {"l", "Big Blue"}} {
		_, err := concepts.CreateConcept(ctx, ports.NewConcept{ID: c.id, OrgID: "org", Type: "company", AliasID: c.id + "-a",
			Text: c.text, Origin: concept.OriginManual, EmbeddingModel: "m", Vector: []float32{1, 0}, CreatedAt: at})
		is.NoErr(err)
	}
	is.NoErr(links.AddLinks(ctx, []ports.ConceptLink{{OrgID: "org", ConceptID: "l", AliasID: "l-a", RecordID: "r1", JSONPath: "$.id", CreatedAt: at}}))
	is.NoErr(reviews.FileReviews(ctx, []ports.ConceptReview{{ID: "p", OrgID: "org", Type: "company", EmbeddingModel: "m",
		AID: "w", BID: "l", Similarity: 0.9, Reason: ports.ReviewEscalated, CreatedAt: at}}))
	merge := func(fail error) error {
		return uow.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
			m, err := r.Vocabulary.MergeConcepts(ctx, "org", "w", "l")
			is.NoErr(err)
			is.Equal(m.AliasesMoved, 1)
			n, err := r.Vocabulary.RepointLinks(ctx, "org", "l", "w")
			is.NoErr(err)
			is.Equal(n, 1)
			n, err = r.Vocabulary.DropReviews(ctx, "org", []string{"l"})
			is.NoErr(err)
			is.Equal(n, 1)
			return fail
		})
	}
	errLater := errors.New("a later step failed")
	is.Equal(merge(errLater), errLater)
	l, err := concepts.GetConcept(ctx, "org", "l")
	is.NoErr(err)
	is.Equal(len(l.Aliases), 1)
	hit, err := concepts.FindExact(ctx, "org", "company", "big blue")
	is.NoErr(err)
	is.Equal(hit.ConceptID, "l")
	near, err := concepts.Nearest(ctx, "org", concept.Slice{Type: "company", EmbeddingModel: "m"}, []float32{1, 0}, 5)
	is.NoErr(err)
	is.Equal(len(near), 2) // the loser's vector is back
	w, err := concepts.GetConcept(ctx, "org", "w")
	is.NoErr(err)
	is.Equal(len(w.Aliases), 1)
	got, err := links.LinksOf(ctx, "org", "l", 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	_, pairs, err := reviews.ListReviews(ctx, "org", ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(pairs, 1)

	is.NoErr(merge(nil))
	_, err = concepts.GetConcept(ctx, "org", "l")
	is.True(errors.Is(err, ports.ErrNotFound))
	hit, err = concepts.FindExact(ctx, "org", "company", "big blue")
	is.NoErr(err)
	is.Equal(hit.ConceptID, "w")
	got, err = links.LinksOf(ctx, "org", "w", 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	_, pairs, err = reviews.ListReviews(ctx, "org", ports.ReviewFilter{})
	is.NoErr(err)
	is.Equal(pairs, 0)
}
