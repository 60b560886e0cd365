package contract

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// RunExactVectorIndex checks that an exact index's Nearest is the full
// sort cut to k: every concept of the slice ranked with concept.Cosine in
// concept.Nearest's order, similarities to the last bit. The slice holds
// many exact ties (few distinct directions, repeated vectors, equal
// reference counts), sits among other organizations', models' and types'
// concepts with the same vectors, and has lost vectors (deleted, replaced,
// their concept deleted). k runs from 1 to past the slice's size.
func RunExactVectorIndex(t *testing.T, newPorts func(t *testing.T) ConceptPorts) {
	t.Run("nearest is the full sort", func(t *testing.T) { exactFullSort(t, newPorts(t)) })
}

func exactFullSort(t *testing.T, p ConceptPorts) {
	ctx := context.Background()
	is := is.New(t)
	r := rand.New(rand.NewPCG(30, 3))
	vec := func() []float32 {
		return []float32{float32(r.IntN(3) - 1), float32(r.IntN(3)), float32(r.IntN(2))}
	}
	org, other := newID("org"), newID("org")
	sl := concept.Slice{Type: "company", EmbeddingModel: testModel}
	type live struct {
		c    *concept.Concept
		v    []float32
		refs int
	}
	var all []*live
	for i := range 36 {
		v := vec()
		c := newConcept(t, p.Store, org, "company", fmt.Sprint("Company ", i), v, i)
		all = append(all, &live{c: c, v: v})
		// The same vector elsewhere: another organization, type, model.
		newConcept(t, p.Store, other, "company", fmt.Sprint("Theirs ", i), v, i)
		newConcept(t, p.Store, org, "publisher", fmt.Sprint("Publisher ", i), v, i)
		is.NoErr(p.Index.Upsert(ctx, org, concept.Slice{Type: "company", EmbeddingModel: "other/embed"}, c.ID, []float32{v[0], v[1], v[2]}))
	}
	var bumps []ports.RefBump
	for _, l := range all {
		if d := r.IntN(3); d > 0 {
			bumps = append(bumps, ports.RefBump{ConceptID: l.c.ID, Delta: d})
			l.refs = d
		}
	}
	is.NoErr(p.Store.BumpRefCounts(ctx, org, bumps))
	// Lost: a deleted vector, a deleted concept; a replaced vector.
	is.NoErr(p.Index.Delete(ctx, org, sl, all[0].c.ID))
	_, err := p.Store.DeleteConcepts(ctx, org, ports.ConceptSelection{IDs: []string{all[1].c.ID}})
	is.NoErr(err)
	all = all[2:]
	all[0].v = []float32{0, 1, 1}
	is.NoErr(p.Index.Upsert(ctx, org, sl, all[0].c.ID, all[0].v))

	for _, q := range [][]float32{{1, 0, 0}, {0, 1, 1}, {-1, 2, 1}, {0.5, 0.25, -3}} {
		var full []concept.Neighbor
		for _, l := range all {
			full = append(full, concept.Neighbor{ConceptID: l.c.ID, Text: l.c.CanonicalText, CanonicalText: l.c.CanonicalText,
				IsCanonical: true, RefCount: l.refs, Similarity: concept.Cosine(q, l.v)})
		}
		full = concept.Nearest(full)
		for _, k := range []int{1, 2, 3, 5, 8, 13, len(all), 100} {
			ns, err := p.Index.Nearest(ctx, org, sl, q, k)
			is.NoErr(err)
			want := full[:min(k, len(full))]
			is.Equal(len(ns), len(want))
			for i := range want {
				if ns[i] != want[i] {
					t.Fatalf("query %v, k %d, place %d: got %+v, want %+v", q, k, i, ns[i], want[i])
				}
			}
		}
	}
}
