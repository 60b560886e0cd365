package contract

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// RunConceptCutOver checks what an embedding-model migration asks of a
// vocabulary: a slice read page by page in id order, and a cut-over that
// moves only the concepts holding a vector in the target model, drops their
// source vectors and leaves other slices and organizations alone.
func RunConceptCutOver(t *testing.T, newPorts func(t *testing.T) ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	p := newPorts(t)
	org, other := newID("org"), newID("org")
	src := concept.Slice{Type: "company", EmbeddingModel: testModel}
	const target = "test/embed-2"
	var ids []string
	for i, text := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		ids = append(ids, newConcept(t, p.Store, org, "company", text, []float32{1, float32(i)}, i).ID)
	}
	city := newConcept(t, p.Store, org, "city", "alpha", []float32{1, 0}, 9)
	theirs := newConcept(t, p.Store, other, "company", "alpha", []float32{1, 0}, 9)
	slices.Sort(ids)

	// Pages in id order, after a cursor.
	first, err := p.Store.SliceConcepts(ctx, org, src, "", 3)
	is.NoErr(err)
	is.Equal(len(first), 3)
	rest, err := p.Store.SliceConcepts(ctx, org, src, first[2].ID, 3)
	is.NoErr(err)
	is.Equal(len(rest), 2)
	var got []string
	for _, c := range append(first, rest...) {
		got = append(got, c.ID)
		is.True(c.CanonicalText != "")
	}
	is.Equal(got, ids)
	none, err := p.Store.SliceConcepts(ctx, org, src, "", 0)
	is.NoErr(err)
	is.Equal(len(none), 0)

	// Three of five get a target vector (three dimensions); only they move.
	dst := concept.Slice{Type: "company", EmbeddingModel: target}
	for _, id := range ids[:3] {
		is.NoErr(p.Index.Upsert(ctx, org, dst, id, []float32{0, 1, 1}))
	}
	c, err := p.Store.GetConcept(ctx, org, ids[0])
	is.NoErr(err)
	is.Equal(c.EmbeddingModel, testModel) // a target vector is not a cut-over
	is.Equal(c.Dims, 2)
	n, err := p.Store.CutOver(ctx, org, src, target)
	is.NoErr(err)
	is.Equal(n, 3)
	c, err = p.Store.GetConcept(ctx, org, ids[0])
	is.NoErr(err)
	is.Equal(c.EmbeddingModel, target)
	is.Equal(c.Dims, 3)
	left, err := p.Store.SliceConcepts(ctx, org, src, "", 10)
	is.NoErr(err)
	is.Equal(len(left), 2)
	near, err := p.Index.Nearest(ctx, org, src, []float32{1, 0}, 10)
	is.NoErr(err)
	is.Equal(len(near), 2) // the moved concepts' source vectors are gone
	near, err = p.Index.Nearest(ctx, org, dst, []float32{0, 1, 1}, 10)
	is.NoErr(err)
	is.Equal(len(near), 3)
	moved, err := p.Store.SliceConcepts(ctx, org, dst, "", 10)
	is.NoErr(err)
	is.Equal(len(moved), 3)
	facets, err := p.Store.ConceptTypes(ctx, org)
	is.NoErr(err)
	is.Equal(len(facets), 3) // city, company in each model
	// Other slices and organizations are untouched; a second cut-over
	// moves nothing more.
	for _, id := range []string{city.ID} {
		c, err := p.Store.GetConcept(ctx, org, id)
		is.NoErr(err)
		is.Equal(c.EmbeddingModel, testModel)
	}
	c, err = p.Store.GetConcept(ctx, other, theirs.ID)
	is.NoErr(err)
	is.Equal(c.EmbeddingModel, testModel)
	n, err = p.Store.CutOver(ctx, org, src, target)
	is.NoErr(err)
	is.Equal(n, 0)
	n, err = p.Store.CutOver(ctx, other, src, target)
	is.NoErr(err)
	is.Equal(n, 0)
}

// RunConceptMigrations checks the migrations' state: one running per
// organization, the latest first, and saves that never revive an ended
// migration nor take its progress back.
func RunConceptMigrations(t *testing.T, s ports.ConceptMigrations) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	_, err := s.LatestMigration(ctx, org)
	is.True(errors.Is(err, ports.ErrNotFound))
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	m := ports.ConceptMigration{ID: TestUUID(), OrgID: org, SourceModel: "a::x", TargetModel: "b::y", ConceptTypes: []string{"city", "company"},
		AllTypes: true, TotalCount: 10, StartedAt: t0}
	is.NoErr(s.StartMigration(ctx, m))
	second := m
	second.ID = TestUUID()
	is.True(errors.Is(s.StartMigration(ctx, second), ports.ErrConflict)) // one running at a time
	is.NoErr(s.StartMigration(ctx, ports.ConceptMigration{ID: TestUUID(), OrgID: other, SourceModel: "a::x", TargetModel: "b::y", StartedAt: t0}))

	got, err := s.LatestMigration(ctx, org)
	is.NoErr(err)
	is.Equal(got.ID, m.ID)
	is.Equal(got.Status, ports.MigrationRunning)
	is.Equal(got.ConceptTypes, []string{"city", "company"})
	is.True(got.AllTypes)
	is.Equal(len(got.CutTypes), 0)
	is.True(got.StartedAt.Equal(t0))
	is.True(got.CompletedAt == nil)

	m.Status, m.Cursor, m.EmbeddedCount, m.EmbeddingTokens, m.CutTypes = ports.MigrationRunning, "c-5", 5, 50, []string{"city"}
	is.NoErr(s.SaveMigration(ctx, m))
	back := m
	back.EmbeddedCount, back.Cursor = 3, "c-3"
	is.True(errors.Is(s.SaveMigration(ctx, back), ports.ErrConflict)) // progress never goes back
	got, err = s.GetMigration(ctx, org, m.ID)
	is.NoErr(err)
	is.Equal(got.Cursor, "c-5")
	is.Equal(got.EmbeddedCount, 5)
	is.Equal(got.EmbeddingTokens, 50)
	is.Equal(got.CutTypes, []string{"city"})

	done := t0.Add(time.Minute)
	m.Status, m.CompletedAt, m.LastError = ports.MigrationCancelled, &done, "cancelled"
	is.NoErr(s.SaveMigration(ctx, m))
	m.Status, m.EmbeddedCount = ports.MigrationRunning, 9
	is.True(errors.Is(s.SaveMigration(ctx, m), ports.ErrConflict)) // an ended migration stays ended
	got, err = s.GetMigration(ctx, org, m.ID)
	is.NoErr(err)
	is.Equal(got.Status, ports.MigrationCancelled)
	is.True(got.CompletedAt.Equal(done))
	is.Equal(got.LastError, "cancelled")

	// The next one may start, and is the latest.
	second.StartedAt = t0.Add(2 * time.Minute)
	is.NoErr(s.StartMigration(ctx, second))
	got, err = s.LatestMigration(ctx, org)
	is.NoErr(err)
	is.Equal(got.ID, second.ID)
	_, err = s.GetMigration(ctx, other, m.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // another organization's
}
