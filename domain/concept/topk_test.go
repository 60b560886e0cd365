package concept_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func ids(ns []concept.Neighbor) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ConceptID)
	}
	return out
}

func TestTopK(t *testing.T) {
	nan := math.NaN()
	all := []concept.Neighbor{
		{ConceptID: "b", Similarity: 0.9, RefCount: 1},
		{ConceptID: "a", Similarity: 0.9, RefCount: 1},
		{ConceptID: "c", Similarity: 0.9, RefCount: 5},
		{ConceptID: "a", AliasID: "a2", Similarity: 0.7, RefCount: 1},
		{ConceptID: "d", Similarity: 0.95},
		{ConceptID: "e", Similarity: nan},
		{ConceptID: "f", Similarity: -1},
	}
	tests := []struct {
		name string
		in   []concept.Neighbor
		k    int
		want []string
	}{
		{"k 0 keeps none", all, 0, []string{}},
		{"k negative keeps none", all, -3, []string{}},
		{"the first", all, 1, []string{"d"}},
		{"ties at the k-th place: references, then id", all, 3, []string{"d", "c", "a"}},
		{"tie on similarity and references: the smaller id", all, 4, []string{"d", "c", "a", "b"}},
		{"k past the list: all but NaN, once per concept", all, 50, []string{"d", "c", "a", "b", "f"}},
		{"empty", nil, 3, []string{}},
		{"a concept's later, more similar entry replaces it", []concept.Neighbor{
			{ConceptID: "x", AliasID: "x1", Similarity: 0.5}, {ConceptID: "y", Similarity: 0.6},
			{ConceptID: "x", AliasID: "x2", Similarity: 0.8}}, 2, []string{"x", "y"}},
		{"an evicted concept comes back more similar", []concept.Neighbor{
			{ConceptID: "x", Similarity: 0.1}, {ConceptID: "y", Similarity: 0.6}, {ConceptID: "z", Similarity: 0.5},
			{ConceptID: "x", Similarity: 0.9}}, 2, []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			top := concept.NewTopK(tt.k)
			for _, n := range tt.in {
				top.Push(n)
			}
			got := top.Sorted()
			is.Equal(ids(got), tt.want)
			is.Equal(top.Len(), len(tt.want))
			want := concept.Nearest(tt.in)
			is.Equal(got, want[:min(max(tt.k, 0), len(want))])
		})
	}
}

func TestTopKKeepsTheFirstOfEquallySimilarEntries(t *testing.T) {
	is := is.New(t)
	top := concept.NewTopK(2)
	top.Push(concept.Neighbor{ConceptID: "x", AliasID: "x1", Similarity: 0.5})
	top.Push(concept.Neighbor{ConceptID: "x", AliasID: "x2", Similarity: 0.5})
	top.Push(concept.Neighbor{ConceptID: "x", AliasID: "x3", Similarity: 0.4})
	got := top.Sorted()
	is.Equal(len(got), 1)
	is.Equal(got[0].AliasID, "x1")
}

func TestTopKFloorAndAdmits(t *testing.T) {
	is := is.New(t)
	top := concept.NewTopK(2)
	_, ok := top.Floor()
	is.True(!ok)
	is.True(top.Admits(-1, 0, "z"))
	is.True(!top.Admits(math.NaN(), 0, "z"))
	top.Push(concept.Neighbor{ConceptID: "m", Similarity: 0.5, RefCount: 2})
	top.Push(concept.Neighbor{ConceptID: "n", Similarity: 0.7})
	f, ok := top.Floor()
	is.True(ok)
	is.Equal(f, 0.5)
	is.True(!top.Admits(0.4, 9, "a"))
	is.True(top.Admits(0.5, 3, "z")) // more references
	is.True(!top.Admits(0.5, 1, "a"))
	is.True(top.Admits(0.5, 2, "l")) // same references, smaller id
	is.True(!top.Admits(0.5, 2, "m"))
	is.True(!top.Admits(0.5, 2, "n"))

	none := concept.NewTopK(0)
	f, ok = none.Floor()
	is.True(ok && math.IsInf(f, 1))
	is.True(!none.Admits(1, 0, "a"))
}

// TestTopKIsTheFullSortCut compares TopK with sorting everything and
// cutting to k, on random lists full of exact ties (few distinct
// similarities and reference counts) and repeated concepts, pushed whole
// or in parts merged.
func TestTopKIsTheFullSortCut(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 384))
	for round := range 2000 {
		n := r.IntN(60)
		concepts := 1 + r.IntN(40)
		refs := make([]int, concepts)
		for i := range refs {
			refs[i] = r.IntN(3)
		}
		in := make([]concept.Neighbor, n)
		for i := range in {
			c := r.IntN(concepts)
			sim := float64(r.IntN(5)) / 4
			if r.IntN(20) == 0 {
				sim = math.NaN()
			}
			in[i] = concept.Neighbor{ConceptID: fmt.Sprintf("c%02d", c), AliasID: fmt.Sprint("alias", i), Similarity: sim, RefCount: refs[c]}
		}
		k := r.IntN(12)
		want := concept.Nearest(in)
		want = want[:min(k, len(want))]

		whole := concept.NewTopK(k)
		for _, x := range in {
			whole.Push(x)
		}
		if got := whole.Sorted(); !equalNeighbors(got, want) {
			t.Fatalf("round %d, k %d: got %v, want %v", round, k, ids(got), ids(want))
		}
		// Parts scanned apart and merged, as a parallel scan does; a
		// concept's entries stay in one part, in their order.
		parts := []*concept.TopK{concept.NewTopK(k), concept.NewTopK(k), concept.NewTopK(k)}
		for _, x := range in {
			var c int
			_, _ = fmt.Sscanf(x.ConceptID, "c%d", &c)
			parts[c%3].Push(x)
		}
		merged := concept.NewTopK(k)
		for _, p := range parts {
			merged.Merge(p)
		}
		if got := merged.Sorted(); !equalNeighbors(got, want) {
			t.Fatalf("round %d, k %d, merged: got %v, want %v", round, k, ids(got), ids(want))
		}
	}
}

func equalNeighbors(a, b []concept.Neighbor) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cosineOneLoop is Cosine as it was before the norms were split out: the
// split must not change a bit.
func cosineOneLoop(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 || math.IsNaN(dot) || math.IsInf(dot, 0) {
		return 0
	}
	c := dot / (math.Sqrt(na) * math.Sqrt(nb))
	return max(-1, min(1, c))
}

func TestCosineNormedIsCosine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		d := 1 + r.IntN(400)
		a, b := make([]float32, d), make([]float32, d)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		switch r.IntN(10) {
		case 0:
			clear(b)
		case 1:
			a[r.IntN(d)] = float32(math.Inf(1))
		case 2:
			b[r.IntN(d)] = float32(math.NaN())
		}
		got := concept.CosineNormed(a, b, concept.SquaredNorm(a), concept.SquaredNorm(b))
		if want := cosineOneLoop(a, b); got != want || concept.Cosine(a, b) != want {
			t.Fatalf("CosineNormed %v, Cosine %v, want %v", got, concept.Cosine(a, b), want)
		}
	}
}
