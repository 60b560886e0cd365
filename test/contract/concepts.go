package contract

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// ConceptPorts are the two ports of one vocabulary: the index must see the
// store's concepts (their vectors, types and reference counts).
type ConceptPorts struct {
	Store ports.ConceptStore
	Index ports.VectorIndex
}

// testModel is the embedding model of the suites' concepts.
const testModel = "test/embed"

// newConcept creates a concept of org and type typ with text, vector and
// creation time at(n).
func newConcept(t *testing.T, s ports.ConceptStore, org, typ, text string, vector []float32, n int) *concept.Concept {
	t.Helper()
	c, err := s.CreateConcept(context.Background(), ports.NewConcept{ID: TestUUID(), OrgID: org, Type: typ, AliasID: TestUUID(),
		Text: text, Origin: concept.OriginManual, EmbeddingModel: testModel, Vector: vector, CreatedAt: at(n)})
	if err != nil {
		t.Fatalf("create concept %q: %v", text, err)
	}
	return c
}

// RunConceptStore checks creation with the canonical alias, exact lookups
// by text and alias after normalization, the organization scope, the
// alias rules (a text once per type, the last alias kept, promotion),
// reference counts, listings, the types facet and deletion.
func RunConceptStore(t *testing.T, newPorts func(t *testing.T) ConceptPorts) {
	t.Run("create and exact", func(t *testing.T) { conceptCreateExact(t, newPorts(t).Store) })
	t.Run("refused input", func(t *testing.T) { conceptRefused(t, newPorts(t).Store) })
	t.Run("alias rules", func(t *testing.T) { conceptAliasRules(t, newPorts(t).Store) })
	t.Run("ref counts and types", func(t *testing.T) { conceptRefsAndTypes(t, newPorts(t).Store) })
	t.Run("list", func(t *testing.T) { conceptList(t, newPorts(t).Store) })
	t.Run("delete", func(t *testing.T) { conceptDelete(t, newPorts(t)) })
	t.Run("merge", func(t *testing.T) { conceptMerge(t, newPorts(t)) })
}

func conceptCreateExact(t *testing.T, s ports.ConceptStore) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	c := newConcept(t, s, org, "company", "  IBM   (US) ", []float32{1, 0, 0}, 1)
	is.Equal(c.CanonicalText, "  IBM   (US) ")
	is.Equal(c.NormalizedText, "ibm")
	is.Equal(c.Dims, 3)
	is.Equal(c.EmbeddingModel, testModel)
	is.Equal(len(c.Aliases), 1)
	is.True(c.Aliases[0].IsCanonical)
	is.Equal(c.Aliases[0].NormalizedText, "ibm")
	is.Equal(c.Aliases[0].Origin, concept.OriginManual)
	sameTime(t, "created_at", c.CreatedAt, at(1))
	sameTime(t, "alias created_at", c.Aliases[0].CreatedAt, at(1))

	got, err := s.GetConcept(ctx, org, c.ID)
	is.NoErr(err)
	sameTime(t, "created_at", got.CreatedAt, at(1))
	is.Equal(got.Aliases[0].ID, c.Aliases[0].ID)
	is.Equal(got.CanonicalText, c.CanonicalText)
	_, err = s.GetConcept(ctx, other, c.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // another organization's

	alias, err := s.AddAlias(ctx, org, c.ID, ports.NewAlias{ID: TestUUID(), Text: "International\tBusiness  Machines", Origin: concept.OriginEnrichment, CreatedAt: at(2)})
	is.NoErr(err)
	is.Equal(len(alias.Aliases), 2)

	// Exact by canonical text and by alias, whatever the case and spaces.
	for text, wantCanonical := range map[string]bool{"ibm": true, "  IBM ": true, "ibm (hq)": true,
		"international business machines": false, "  INTERNATIONAL Business\nMachines ": false} {
		n, err := s.FindExact(ctx, org, "company", text)
		is.NoErr(err)
		is.Equal(n.ConceptID, c.ID)
		is.Equal(n.Similarity, 1.0)
		is.Equal(n.IsCanonical, wantCanonical)
		is.Equal(n.CanonicalText, c.CanonicalText)
	}
	n, err := s.FindExact(ctx, org, "company", "international business machines")
	is.NoErr(err)
	is.Equal(n.AliasID, alias.Aliases[1].ID)
	is.Equal(n.Text, "International\tBusiness  Machines")

	// Another type, another organization, another text: nothing.
	for _, q := range [][3]string{{org, "publisher", "ibm"}, {other, "company", "ibm"}, {org, "company", "ibm corp"}} {
		_, err := s.FindExact(ctx, q[0], q[1], q[2])
		is.True(errors.Is(err, ports.ErrNotFound))
	}
	// The same text in another type or organization is its own concept.
	newConcept(t, s, org, "publisher", "IBM", nil, 3)
	newConcept(t, s, other, "company", "IBM", nil, 3)
	n, err = s.FindExact(ctx, org, "company", "IBM")
	is.NoErr(err)
	is.Equal(n.ConceptID, c.ID)
}

func conceptRefused(t *testing.T, s ports.ConceptStore) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	c := newConcept(t, s, org, "company", "Acme", nil, 1)
	is.Equal(c.Dims, 0)
	create := func(text string, vector []float32) error {
		_, err := s.CreateConcept(ctx, ports.NewConcept{ID: TestUUID(), OrgID: org, Type: "company", AliasID: TestUUID(),
			Text: text, Origin: concept.OriginManual, EmbeddingModel: testModel, Vector: vector, CreatedAt: at(2)})
		return err
	}
	is.True(errors.Is(create(" ACME  ", nil), ports.ErrConflict))   // the incumbent's text
	is.True(errors.Is(create("acme (uk)", nil), ports.ErrConflict)) // normalizes to it
	for _, bad := range []string{"", "  ", "(only a parenthetical)", "nul\x00byte", "bad \xff utf-8"} {
		is.True(errors.Is(create(bad, nil), ports.ErrInvalid))
	}
	is.True(errors.Is(create("Nan Corp", []float32{1, float32(math.NaN())}), ports.ErrInvalid))
	is.True(errors.Is(create("Inf Corp", []float32{float32(math.Inf(1))}), ports.ErrInvalid))

	add := func(conceptID, text string) error {
		_, err := s.AddAlias(ctx, org, conceptID, ports.NewAlias{ID: TestUUID(), Text: text, Origin: concept.OriginManual, CreatedAt: at(3)})
		return err
	}
	d := newConcept(t, s, org, "company", "Globex", nil, 2)
	is.True(errors.Is(add(d.ID, "acme"), ports.ErrConflict))    // another concept's text
	is.True(errors.Is(add(c.ID, "ACME"), ports.ErrConflict))    // its own
	is.True(errors.Is(add(c.ID, "nul\x00"), ports.ErrInvalid))  // never reaches a store
	is.True(errors.Is(add(c.ID, "  "), ports.ErrInvalid))       // blank
	is.True(errors.Is(add(TestUUID(), "x"), ports.ErrNotFound)) // no such concept
	_, err := s.AddAlias(ctx, newID("org"), c.ID, ports.NewAlias{ID: TestUUID(), Text: "acme inc", CreatedAt: at(3)})
	is.True(errors.Is(err, ports.ErrNotFound)) // another organization's
	got, err := s.GetConcept(ctx, org, c.ID)
	is.NoErr(err)
	is.Equal(len(got.Aliases), 1) // nothing half-way
}

func conceptAliasRules(t *testing.T, s ports.ConceptStore) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	c := newConcept(t, s, org, "company", "IBM", nil, 1)
	canonical := c.Aliases[0].ID
	_, err := s.RemoveAlias(ctx, org, c.ID, canonical)
	is.True(errors.Is(err, concept.ErrLastAlias)) // a concept always has a text

	second, third := TestUUID(), TestUUID()
	_, err = s.AddAlias(ctx, org, c.ID, ports.NewAlias{ID: third, Text: "Big Blue", Origin: concept.OriginImport, CreatedAt: at(3)})
	is.NoErr(err)
	_, err = s.AddAlias(ctx, org, c.ID, ports.NewAlias{ID: second, Text: "International Business Machines", Origin: concept.OriginManual, CreatedAt: at(2)})
	is.NoErr(err)

	// Promote: the canonical text moves, the old canonical stays an alias.
	p, err := s.PromoteAlias(ctx, org, c.ID, third)
	is.NoErr(err)
	is.Equal(p.CanonicalText, "Big Blue")
	is.Equal(p.NormalizedText, "big blue")
	got, err := s.GetConcept(ctx, org, c.ID)
	is.NoErr(err)
	is.Equal(got.CanonicalText, "Big Blue")
	is.Equal([]string{got.Aliases[0].ID, got.Aliases[1].ID, got.Aliases[2].ID}, []string{canonical, second, third}) // oldest first
	is.Equal([]bool{got.Aliases[0].IsCanonical, got.Aliases[1].IsCanonical, got.Aliases[2].IsCanonical}, []bool{false, false, true})
	n, err := s.FindExact(ctx, org, "company", "ibm")
	is.NoErr(err)
	is.True(!n.IsCanonical)
	is.Equal(n.CanonicalText, "Big Blue")

	// Removing the canonical alias promotes the oldest remaining one.
	r, err := s.RemoveAlias(ctx, org, c.ID, third)
	is.NoErr(err)
	is.Equal(r.CanonicalText, "IBM")
	got, err = s.GetConcept(ctx, org, c.ID)
	is.NoErr(err)
	is.Equal(len(got.Aliases), 2)
	is.Equal(got.CanonicalText, "IBM")
	is.True(got.Aliases[0].IsCanonical)
	_, err = s.FindExact(ctx, org, "company", "big blue")
	is.True(errors.Is(err, ports.ErrNotFound)) // its text is free again
	_, err = s.AddAlias(ctx, org, c.ID, ports.NewAlias{ID: TestUUID(), Text: "BIG BLUE", Origin: concept.OriginManual, CreatedAt: at(4)})
	is.NoErr(err)

	// Unknown alias, unknown concept, another organization.
	_, err = s.PromoteAlias(ctx, org, c.ID, TestUUID())
	is.True(errors.Is(err, concept.ErrAliasNotFound))
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.RemoveAlias(ctx, org, c.ID, TestUUID())
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.RemoveAlias(ctx, org, TestUUID(), second)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.PromoteAlias(ctx, newID("org"), c.ID, second)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.RemoveAlias(ctx, newID("org"), c.ID, second)
	is.True(errors.Is(err, ports.ErrNotFound))
	got, err = s.GetConcept(ctx, org, c.ID)
	is.NoErr(err)
	is.Equal(len(got.Aliases), 3)
}

func conceptRefsAndTypes(t *testing.T, s ports.ConceptStore) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	a := newConcept(t, s, org, "company", "Acme", []float32{1, 0}, 1)
	b := newConcept(t, s, org, "company", "Globex", []float32{0, 1}, 2)
	newConcept(t, s, org, "company", "Initech", []float32{1, 1}, 3)
	pub := newConcept(t, s, org, "publisher", "Penguin", []float32{1, 0, 0}, 4)
	theirs := newConcept(t, s, other, "company", "Umbrella", []float32{1}, 5)

	alias, err := s.AddAlias(ctx, org, a.ID, ports.NewAlias{ID: TestUUID(), Text: "Acme Corp", Origin: concept.OriginEnrichment, CreatedAt: at(6)})
	is.NoErr(err)
	aliasID := alias.Aliases[1].ID
	err = s.BumpRefCounts(ctx, org, []ports.RefBump{
		{ConceptID: a.ID, AliasID: aliasID, Delta: 2}, {ConceptID: a.ID, Delta: 1}, {ConceptID: b.ID, Delta: 1},
		{ConceptID: b.ID, Delta: -5},          // never below 0
		{ConceptID: theirs.ID, Delta: 7},      // another organization's: skipped
		{ConceptID: TestUUID(), Delta: 1},     // unknown: skipped
		{ConceptID: pub.ID, AliasID: aliasID}, // an alias of another concept: the concept only
	})
	is.NoErr(err)
	got, err := s.GetConcept(ctx, org, a.ID)
	is.NoErr(err)
	is.Equal(got.RefCount, 3)
	is.Equal([]int{got.Aliases[0].RefCount, got.Aliases[1].RefCount}, []int{0, 2})
	got, err = s.GetConcept(ctx, org, b.ID)
	is.NoErr(err)
	is.Equal(got.RefCount, 0)
	got, err = s.GetConcept(ctx, other, theirs.ID)
	is.NoErr(err)
	is.Equal(got.RefCount, 0)
	n, err := s.FindExact(ctx, org, "company", "acme corp")
	is.NoErr(err)
	is.Equal(n.RefCount, 3)

	types, err := s.ConceptTypes(ctx, org)
	is.NoErr(err)
	is.Equal(types, []ports.ConceptTypeInfo{
		{Type: "company", EmbeddingModel: testModel, Dims: 2, ConceptCount: 3, UnusedCount: 2},
		{Type: "publisher", EmbeddingModel: testModel, Dims: 3, ConceptCount: 1, UnusedCount: 1},
	})
	types, err = s.ConceptTypes(ctx, newID("org"))
	is.NoErr(err)
	is.Equal(len(types), 0)
}

func conceptList(t *testing.T, s ports.ConceptStore) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	ids := map[string]string{}
	for i, text := range []string{"Charlie Co", "Alpha Inc", "Bravo Ltd", "Delta Corp"} {
		c := newConcept(t, s, org, "company", text, nil, i)
		ids[text] = c.ID
	}
	pub := newConcept(t, s, org, "publisher", "Alpha Press", nil, 10)
	newConcept(t, s, newID("org"), "company", "Alpha Other", nil, 0)
	_, err := s.AddAlias(ctx, org, ids["Delta Corp"], ports.NewAlias{ID: TestUUID(), Text: "ALPHA-ish", Origin: concept.OriginManual, CreatedAt: at(20)})
	is.NoErr(err)
	is.NoErr(s.BumpRefCounts(ctx, org, []ports.RefBump{{ConceptID: ids["Bravo Ltd"], Delta: 5}, {ConceptID: ids["Alpha Inc"], Delta: 2}}))

	texts := func(f ports.ConceptFilter) ([]string, int) {
		t.Helper()
		cs, total, err := s.ListConcepts(ctx, org, f)
		is.NoErr(err)
		out := make([]string, 0, len(cs))
		for _, c := range cs {
			out = append(out, c.CanonicalText)
		}
		return out, total
	}
	got, total := texts(ports.ConceptFilter{})
	is.Equal(total, 5)
	is.Equal(got, []string{"Charlie Co", "Alpha Inc", "Bravo Ltd", "Delta Corp", "Alpha Press"})
	got, total = texts(ports.ConceptFilter{Types: []string{"company"}, Sort: ports.SortConceptText, Limit: 2, Offset: 1})
	is.Equal(total, 4)
	is.Equal(got, []string{"Bravo Ltd", "Charlie Co"})
	got, _ = texts(ports.ConceptFilter{Sort: ports.SortConceptRefCount, Descending: true, Limit: 2})
	is.Equal(got, []string{"Bravo Ltd", "Alpha Inc"})
	got, total = texts(ports.ConceptFilter{Search: "  ALPHA ", Sort: ports.SortConceptText})
	is.Equal(total, 3) // canonical texts and aliases
	is.Equal(got, []string{"Alpha Inc", "Alpha Press", "Delta Corp"})
	_, total = texts(ports.ConceptFilter{MinRefCount: 2})
	is.Equal(total, 2)
	got, total = texts(ports.ConceptFilter{CreatedAfter: atPtr(0), CreatedBefore: atPtr(3)})
	is.Equal(total, 2) // both bounds exclusive
	is.Equal(got, []string{"Alpha Inc", "Bravo Ltd"})
	cs, _, err := s.ListConcepts(ctx, org, ports.ConceptFilter{Types: []string{"publisher"}})
	is.NoErr(err)
	is.Equal(len(cs), 1)
	is.Equal(cs[0].ID, pub.ID)
	is.Equal(len(cs[0].Aliases), 1) // listed concepts carry their aliases
}

func conceptDelete(t *testing.T, p ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	s := p.Store
	org, other := newID("org"), newID("org")
	a := newConcept(t, s, org, "company", "Acme", []float32{1, 0}, 1)
	b := newConcept(t, s, org, "company", "Globex", []float32{0, 1}, 2)
	c := newConcept(t, s, org, "publisher", "Penguin", []float32{1, 0}, 3)
	theirs := newConcept(t, s, other, "company", "Acme", []float32{1, 0}, 4)
	is.NoErr(s.BumpRefCounts(ctx, org, []ports.RefBump{{ConceptID: b.ID, Delta: 1}}))

	_, err := s.DeleteConcepts(ctx, org, ports.ConceptSelection{})
	is.True(errors.Is(err, ports.ErrInvalid)) // never everything by accident
	gone, err := s.DeleteConcepts(ctx, org, ports.ConceptSelection{IDs: []string{theirs.ID}})
	is.NoErr(err)
	is.Equal(len(gone), 0) // another organization's
	for _, sel := range []ports.ConceptSelection{{IDs: []string{"nul\x00"}}, {Types: []string{"bad \xff"}}, {IDs: []string{a.ID}, Types: []string{"\x00"}}} {
		gone, err = s.DeleteConcepts(ctx, org, sel)
		is.NoErr(err)
		is.Equal(len(gone), 0) // what no text holds matches nothing, never everything
	}
	cs, total, err := s.ListConcepts(ctx, org, ports.ConceptFilter{Types: []string{"nul\x00"}})
	is.NoErr(err)
	is.Equal(len(cs)+total, 0)
	gone, err = s.DeleteConcepts(ctx, org, ports.ConceptSelection{Types: []string{"company"}, UnusedOnly: true})
	is.NoErr(err)
	is.Equal(gone, []string{a.ID})
	_, err = s.GetConcept(ctx, org, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.FindExact(ctx, org, "company", "acme")
	is.True(errors.Is(err, ports.ErrNotFound))
	ns, err := p.Index.Nearest(ctx, org, concept.Slice{Type: "company", EmbeddingModel: testModel}, []float32{1, 0}, 5)
	is.NoErr(err)
	is.Equal(len(ns), 1) // its vector went with it
	is.Equal(ns[0].ConceptID, b.ID)
	// Its text is free again.
	newConcept(t, s, org, "company", "ACME", nil, 5)

	gone, err = s.DeleteConcepts(ctx, org, ports.ConceptSelection{IDs: []string{b.ID, c.ID}, Types: []string{"publisher"}})
	is.NoErr(err)
	is.Equal(gone, []string{c.ID}) // both must hold
	_, err = s.GetConcept(ctx, other, theirs.ID)
	is.NoErr(err)
}

// conceptMerge checks MergeConcepts: the loser's aliases move to the
// winner (never canonical, origin merge), the counts add up, the loser and
// its vector go, and the refusals leave both as they were.
func conceptMerge(t *testing.T, p ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	s := p.Store
	org, other := newID("org"), newID("org")
	w := newConcept(t, s, org, "company", "IBM", []float32{1, 0}, 1)
	l := newConcept(t, s, org, "company", "International Business Machines", []float32{0.9, 0.1}, 2)
	_, err := s.AddAlias(ctx, org, l.ID, ports.NewAlias{ID: TestUUID(), Text: "Intl. Business Machines", Origin: concept.OriginImport, CreatedAt: at(3)})
	is.NoErr(err)
	pub := newConcept(t, s, org, "publisher", "IBM Press", nil, 4)
	theirs := newConcept(t, s, other, "company", "Big Blue", nil, 5)
	is.NoErr(s.BumpRefCounts(ctx, org, []ports.RefBump{{ConceptID: w.ID, Delta: 2}, {ConceptID: l.ID, AliasID: l.Aliases[0].ID, Delta: 3}}))

	for _, bad := range []struct {
		w, l string
		err  error
	}{
		{w.ID, w.ID, ports.ErrInvalid}, {w.ID, pub.ID, ports.ErrConflict}, {w.ID, theirs.ID, ports.ErrNotFound},
		{theirs.ID, l.ID, ports.ErrNotFound}, {w.ID, "nul\x00", ports.ErrNotFound},
	} {
		_, err := s.MergeConcepts(ctx, org, bad.w, bad.l)
		is.True(errors.Is(err, bad.err))
	}
	got, err := s.GetConcept(ctx, org, l.ID)
	is.NoErr(err)
	is.Equal(len(got.Aliases), 2) // a refusal changes nothing

	m, err := s.MergeConcepts(ctx, org, w.ID, l.ID)
	is.NoErr(err)
	is.Equal(m.AliasesMoved, 2)
	is.Equal(m.Winner.ID, w.ID)
	is.Equal(m.Winner.CanonicalText, "IBM")
	is.Equal(m.Winner.RefCount, 5)
	is.Equal(len(m.Winner.Aliases), 3)
	for _, a := range m.Winner.Aliases[1:] {
		is.True(!a.IsCanonical)
		is.Equal(a.Origin, concept.OriginMerge)
	}
	is.Equal(m.Winner.Aliases[1].RefCount, 3) // an alias keeps its count
	_, err = s.GetConcept(ctx, org, l.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	for _, text := range []string{"international business machines", "intl. business machines", "ibm"} {
		n, err := s.FindExact(ctx, org, "company", text)
		is.NoErr(err)
		is.Equal(n.ConceptID, w.ID)
	}
	ns, err := p.Index.Nearest(ctx, org, concept.Slice{Type: "company", EmbeddingModel: testModel}, []float32{0, 1}, 5)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{w.ID}) // the loser's vector went with it
	_, err = s.MergeConcepts(ctx, org, w.ID, l.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // merged once
}

// RunVectorIndex checks Upsert, Nearest's order and cosine values on small
// vectors (ties, another slice, another organization, other lengths) and
// Delete.
func RunVectorIndex(t *testing.T, newPorts func(t *testing.T) ConceptPorts) {
	t.Run("nearest", func(t *testing.T) { vectorNearest(t, newPorts(t)) })
	t.Run("upsert and delete", func(t *testing.T) { vectorUpsertDelete(t, newPorts(t)) })
}

func neighborIDs(ns []concept.Neighbor) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.ConceptID)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func vectorNearest(t *testing.T, p ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	s := p.Store
	x := newConcept(t, s, org, "company", "X", []float32{1, 0, 0}, 1)
	diag := newConcept(t, s, org, "company", "Diagonal", []float32{1, 1, 0}, 2)
	y := newConcept(t, s, org, "company", "Y", []float32{0, 2, 0}, 3)
	anti := newConcept(t, s, org, "company", "Anti", []float32{-1, 0, 0}, 4)
	// Two concepts with one vector: a tie, broken by reference count, then id.
	tie1 := newConcept(t, s, org, "company", "Tie one", []float32{0, 0, 3}, 5)
	tie2 := newConcept(t, s, org, "company", "Tie two", []float32{0, 0, 1}, 6)
	tie3 := newConcept(t, s, org, "company", "Tie three", []float32{0, 0, 2}, 7)
	is.NoErr(s.BumpRefCounts(ctx, org, []ports.RefBump{{ConceptID: tie3.ID, Delta: 4}}))
	// Invisible: another type, another model, another organization, another length.
	newConcept(t, s, org, "publisher", "X press", []float32{1, 0, 0}, 8)
	otherModel, err := s.CreateConcept(ctx, ports.NewConcept{ID: TestUUID(), OrgID: org, Type: "company", AliasID: TestUUID(),
		Text: "X other model", EmbeddingModel: "other/embed", Vector: []float32{1, 0, 0}, CreatedAt: at(9)})
	is.NoErr(err)
	newConcept(t, s, other, "company", "X theirs", []float32{1, 0, 0}, 10)
	newConcept(t, s, org, "company", "X longer", []float32{1, 0, 0, 0}, 11)
	newConcept(t, s, org, "company", "No vector", nil, 12)

	sl := concept.Slice{Type: "company", EmbeddingModel: testModel}
	ns, err := p.Index.Nearest(ctx, org, sl, []float32{2, 0, 0}, 10)
	is.NoErr(err)
	is.Equal(len(ns), 7)
	is.Equal(neighborIDs(ns)[:2], []string{x.ID, diag.ID})
	is.True(near(ns[0].Similarity, 1))
	is.True(near(ns[1].Similarity, 1/math.Sqrt2))
	// y and the ties are all orthogonal (0): the most referenced first, then by id.
	is.Equal(ns[2].ConceptID, tie3.ID)
	zeros := []string{y.ID, tie1.ID, tie2.ID}
	slices.Sort(zeros)
	is.Equal(neighborIDs(ns)[3:6], zeros)
	for _, n := range ns[2:6] {
		is.True(near(n.Similarity, 0))
	}
	is.Equal(ns[6].ConceptID, anti.ID)
	is.True(near(ns[6].Similarity, -1))
	is.Equal(ns[0].CanonicalText, "X")
	is.Equal(ns[0].Text, "X")
	is.True(ns[0].IsCanonical)
	is.Equal(ns[0].AliasID, "")
	is.Equal(ns[2].RefCount, 4)

	// k bounds the answer; ties among equal vectors.
	ns, err = p.Index.Nearest(ctx, org, sl, []float32{0, 0, 0.5}, 2)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{tie3.ID, min(tie1.ID, tie2.ID)})
	is.True(near(ns[0].Similarity, 1) && near(ns[1].Similarity, 1))
	ns, err = p.Index.Nearest(ctx, org, sl, []float32{1, 0, 0}, 0)
	is.NoErr(err)
	is.Equal(len(ns), 0)

	// The other model's slice holds its one concept only.
	ns, err = p.Index.Nearest(ctx, org, concept.Slice{Type: "company", EmbeddingModel: "other/embed"}, []float32{1, 1, 0}, 10)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{otherModel.ID})
	is.True(near(ns[0].Similarity, 1/math.Sqrt2))
	ns, err = p.Index.Nearest(ctx, newID("org"), sl, []float32{1, 0, 0}, 10)
	is.NoErr(err)
	is.Equal(len(ns), 0)
}

func vectorUpsertDelete(t *testing.T, p ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	s := p.Store
	sl := concept.Slice{Type: "company", EmbeddingModel: testModel}
	a := newConcept(t, s, org, "company", "Acme", []float32{1, 0}, 1)
	b := newConcept(t, s, org, "company", "Globex", nil, 2)

	// A vector for a concept that had none; another replaces it.
	is.NoErr(p.Index.Upsert(ctx, org, sl, b.ID, []float32{1, 0}))
	got, err := s.GetConcept(ctx, org, b.ID)
	is.NoErr(err)
	is.Equal(got.Dims, 2)
	is.NoErr(p.Index.Upsert(ctx, org, sl, a.ID, []float32{0, 1}))
	ns, err := p.Index.Nearest(ctx, org, sl, []float32{1, 0.1}, 5)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{b.ID, a.ID})
	is.True(near(ns[1].Similarity, 0.1/math.Sqrt(1.01)))

	// A second model's vectors live beside the first's (a migration).
	next := concept.Slice{Type: "company", EmbeddingModel: "next/embed"}
	is.NoErr(p.Index.Upsert(ctx, org, next, a.ID, []float32{1, 2, 3}))
	ns, err = p.Index.Nearest(ctx, org, next, []float32{1, 2, 3}, 5)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{a.ID})
	got, err = s.GetConcept(ctx, org, a.ID)
	is.NoErr(err)
	is.Equal(got.Dims, 2) // still in its own model

	// Refused: another organization, another type, unknown, bad vectors.
	is.True(errors.Is(p.Index.Upsert(ctx, newID("org"), sl, a.ID, []float32{1, 0}), ports.ErrNotFound))
	is.True(errors.Is(p.Index.Upsert(ctx, org, concept.Slice{Type: "publisher", EmbeddingModel: testModel}, a.ID, []float32{1, 0}), ports.ErrNotFound))
	is.True(errors.Is(p.Index.Upsert(ctx, org, sl, TestUUID(), []float32{1, 0}), ports.ErrNotFound))
	is.True(errors.Is(p.Index.Upsert(ctx, org, sl, a.ID, nil), ports.ErrInvalid))
	is.True(errors.Is(p.Index.Upsert(ctx, org, sl, a.ID, []float32{float32(math.NaN()), 1}), ports.ErrInvalid))

	// Delete takes one model's vector; another organization's call does nothing.
	is.NoErr(p.Index.Delete(ctx, newID("org"), sl, a.ID))
	is.NoErr(p.Index.Delete(ctx, org, sl, a.ID))
	is.NoErr(p.Index.Delete(ctx, org, sl, a.ID))
	ns, err = p.Index.Nearest(ctx, org, sl, []float32{0, 1}, 5)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{b.ID})
	ns, err = p.Index.Nearest(ctx, org, next, []float32{1, 2, 3}, 5)
	is.NoErr(err)
	is.Equal(neighborIDs(ns), []string{a.ID})
	_, err = s.GetConcept(ctx, org, a.ID)
	is.NoErr(err) // the concept stays
}
