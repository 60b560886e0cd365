package memory

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// sparseValues are few, so that many similarities tie; tiny ones
// underflow a cosine; -0 is a zero the postings leave out.
var sparseValues = []float32{-2, -1, -0.5, 0.5, 1, 2, 1e-30, -1e-30, float32(math.Copysign(0, -1)), 3}

// randomVector is a sparse vector of dims (0 to 6 values set), a dense
// one, a zero one or a short one.
func randomVector(r *rand.Rand, dims int) []float32 {
	pick := func() float32 { return sparseValues[r.IntN(len(sparseValues))] }
	switch r.IntN(10) {
	case 0: // dense: left to the full comparison
		v := make([]float32, dims)
		for i := range v {
			v[i] = pick()
			if v[i] == 0 {
				v[i] = 1
			}
		}
		return v
	case 1: // another length
		return randomVector(r, dims/2+1)
	case 2:
		return make([]float32, dims)
	}
	v := make([]float32, dims)
	for range r.IntN(7) {
		v[r.IntN(dims)] = pick()
	}
	return v
}

// wantNearest is the full sort: concept.Cosine of every vector of q's
// length, in Nearest's order, cut to k.
func wantNearest(vs *vectorSlice, q []float32, k int) []concept.Neighbor {
	out := []concept.Neighbor{}
	for _, e := range vs.entries {
		if len(e.vec) == len(q) {
			out = append(out, concept.Neighbor{ConceptID: e.c.ID, Text: e.c.CanonicalText, CanonicalText: e.c.CanonicalText,
				IsCanonical: true, RefCount: e.c.RefCount, Similarity: concept.Cosine(q, e.vec)})
		}
	}
	slices.SortFunc(out, concept.CompareNeighbors)
	return out[:min(k, len(out))]
}

// sameBits compares neighbours with their similarities' bits (== takes
// -0 for +0).
func sameBits(t *testing.T, what string, got, want []concept.Neighbor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d neighbours, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.ConceptID != w.ConceptID || g.RefCount != w.RefCount || math.Float64bits(g.Similarity) != math.Float64bits(w.Similarity) ||
			g.Text != w.Text || g.IsCanonical != w.IsCanonical {
			t.Fatalf("%s: #%d is %+v, want %+v", what, i, g, w)
		}
	}
}

// checkPostings checks that the live rows' postings are their entries'
// non-zero values and the counts add up.
func checkPostings(t *testing.T, vs *vectorSlice) {
	t.Helper()
	ix := &vs.sparse
	live := map[int32]*vectorEntry{}
	plain := 0
	for i := range vs.entries {
		e := &vs.entries[i]
		if e.row < 0 {
			plain++
			continue
		}
		if live[e.row] != nil || e.row >= ix.rows {
			t.Fatalf("row %d reused or out of range (%d rows)", e.row, ix.rows)
		}
		live[e.row] = e
	}
	if plain != ix.plain || len(live)+ix.dead != int(ix.rows) {
		t.Fatalf("plain %d (index says %d), live %d + dead %d != rows %d", plain, ix.plain, len(live), ix.dead, ix.rows)
	}
	if len(ix.at) != int(ix.rows) || len(ix.roots) != int(ix.rows) {
		t.Fatalf("%d rows, %d entries of rows, %d roots", ix.rows, len(ix.at), len(ix.roots))
	}
	for row, at := range ix.at {
		e := live[int32(row)]
		switch {
		case e == nil && at != -1, e != nil && (&vs.entries[at] != e || ix.roots[row] != e.root || e.root != math.Sqrt(e.norm)):
			t.Fatalf("row %d: entry %d", row, at)
		}
	}
	seen := map[int32]int{}
	for d, ps := range ix.postings {
		for _, p := range ps {
			if e := live[p.row]; e != nil {
				if e.vec[d] != p.v || p.v == 0 {
					t.Fatalf("row %d dim %d: posting %v, vector %v", p.row, d, p.v, e.vec[d])
				}
				seen[p.row]++
			}
		}
	}
	for row, e := range live {
		nonZero := 0
		for _, x := range e.vec {
			if x != 0 {
				nonZero++
			}
		}
		if seen[row] != nonZero {
			t.Fatalf("row %d: %d postings, %d non-zero values", row, seen[row], nonZero)
		}
	}
}

// TestSparseNearestIsTheFullScan runs random writes, deletes, merges and
// merges undone on one slice, and after each compares the sparse lookup,
// the full scan and the full sort of random queries, bit for bit.
func TestSparseNearestIsTheFullScan(t *testing.T) {
	defer func(n int) { compactMin = n }(compactMin)
	compactMin = 4
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { sparseRun(t, seed) })
	}
}

func sparseRun(t *testing.T, seed uint64) {
	is := is.New(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 30))
	const dims = 24
	s := NewConceptStore()
	sl := concept.Slice{Type: "company", EmbeddingModel: "m"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	next := 0
	create := func() {
		id := fmt.Sprintf("c-%04d", next)
		_, err := s.CreateConcept(ctx, ports.NewConcept{ID: id, OrgID: "org", Type: sl.Type, AliasID: "a-" + id, Text: "text " + id,
			EmbeddingModel: sl.EmbeddingModel, Vector: randomVector(r, dims), CreatedAt: at})
		is.NoErr(err)
		ids = append(ids, id)
		next++
	}
	for range 40 {
		create()
	}
	sparseLookups := 0
	for step := range 600 {
		pick := func() string { return ids[r.IntN(len(ids))] }
		switch op := r.IntN(9); {
		case op < 2 || len(ids) < 4:
			create()
		case op == 2:
			is.NoErr(s.Upsert(ctx, "org", sl, pick(), randomVector(r, dims)))
		case op == 3:
			is.NoErr(s.Delete(ctx, "org", sl, pick()))
		case op == 4:
			gone, err := s.DeleteConcepts(ctx, "org", ports.ConceptSelection{IDs: []string{pick(), pick()}})
			is.NoErr(err)
			ids = slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(gone, id) })
		case op == 5:
			w, l := pick(), pick()
			if _, err := s.MergeConcepts(ctx, "org", w, l); err == nil {
				ids = slices.DeleteFunc(ids, func(id string) bool { return id == l })
			}
		case op == 6:
			if _, undo, err := s.merge("org", pick(), pick()); err == nil {
				undo()
			}
		default:
			is.NoErr(s.BumpRefCounts(ctx, "org", []ports.RefBump{{ConceptID: pick(), Delta: r.IntN(3)}}))
		}
		vs := s.vectors[vectorKey{"org", sl.Type, sl.EmbeddingModel}]
		if vs == nil {
			continue
		}
		checkPostings(t, vs)
		for range 3 {
			q := randomVector(r, dims)
			if d := vs.sparse.dims; d != 0 && r.IntN(4) > 0 {
				q = randomVector(r, d)
			}
			k := 1 + r.IntN(len(vs.entries)+3)
			if r.IntN(2) == 0 { // ties at a full selection's floor
				k = 1 + r.IntN(3)
			}
			want := wantNearest(vs, q, k)
			qn := concept.SquaredNorm(q)
			sameBits(t, fmt.Sprintf("step %d: full scan", step), scanNearest(vs.entries, q, qn, k).Sorted(), want)
			got, err := s.Nearest(ctx, "org", sl, q, k)
			is.NoErr(err)
			sameBits(t, fmt.Sprintf("step %d: Nearest", step), got, want)
			if vs.sparse.dims == len(q) {
				sparseLookups++
				sameBits(t, fmt.Sprintf("step %d: sparse, k %d, q %v", step, k, q), vs.scanSparse(q, qn, k).Sorted(), want)
			}
		}
	}
	is.True(sparseLookups > 900)
}

// TestSparseNgram checks that the built-in embedding's vectors take the
// sparse path and that it finds what the full scan finds.
func TestSparseNgram(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := NewConceptStore()
	sl := concept.Slice{Type: "company", EmbeddingModel: "builtin::ngram-384"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		text := CompanyName(r)
		_, err := s.CreateConcept(ctx, ports.NewConcept{ID: fmt.Sprintf("c-%05d", i), OrgID: "org", Type: sl.Type, AliasID: fmt.Sprint("a-", i),
			Text: fmt.Sprint(text, " ", i), EmbeddingModel: sl.EmbeddingModel, Vector: concept.NgramEmbed(text, concept.NgramDims)})
		is.NoErr(err)
	}
	vs := s.vectors[vectorKey{"org", sl.Type, sl.EmbeddingModel}]
	is.Equal(vs.sparse.plain, 0)
	for range 50 {
		q := concept.NgramEmbed(CompanyName(r), concept.NgramDims)
		qn := concept.SquaredNorm(q)
		is.True(vs.sparseWorth(q, qn))
		sameBits(t, "ngram", vs.scanSparse(q, qn, 10).Sorted(), scanNearest(vs.entries, q, qn, 10).Sorted())
	}
}

// CompanyName is a made-up company name of two or three words.
func CompanyName(r *rand.Rand) string {
	syllables := []string{"ac", "me", "tro", "nix", "ga", "lo", "bri", "ton", "vel", "ex", "or", "qua", "zen", "ka", "ri", "sol", "ind", "ust"}
	suffixes := []string{"corp", "inc", "group", "holdings", "labs", "systems", "gmbh", "ltd", "partners"}
	var words []string
	for range 1 + r.IntN(2) {
		w := ""
		for range 2 + r.IntN(2) {
			w += syllables[r.IntN(len(syllables))]
		}
		words = append(words, w)
	}
	return fmt.Sprint(words[0], " ", words[len(words)-1], " ", suffixes[r.IntN(len(suffixes))])
}
