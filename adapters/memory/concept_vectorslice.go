package memory

import (
	"math"

	"github.com/entityenrich/enrich/domain/concept"
)

// vectorKey names the vectors compared together: one organization's
// concepts of one type, embedded by one model.
type vectorKey struct{ org, typ, model string }

// vectorEntry is one concept's vector in a slice, with its
// concept.SquaredNorm so that a lookup does not sum it again.
type vectorEntry struct {
	c    *concept.Concept
	vec  []float32
	norm float64
	root float64
	// row is the vector's row in the slice's sparseIndex, or -1.
	row int32
}

// vectorSlice is a slice's vectors in an array that a lookup scans
// without a map lookup or an allocation per concept, where each
// concept's entry is, and the sparse vectors' inverted index.
type vectorSlice struct {
	entries []vectorEntry
	at      map[string]int
	sparse  sparseIndex
}

// vector is c's vector in model; the caller holds mu.
func (s *ConceptStore) vector(c *concept.Concept, model string) ([]float32, bool) {
	vs := s.vectors[vectorKey{c.OrgID, c.Type, model}]
	if vs == nil {
		return nil, false
	}
	i, ok := vs.at[c.ID]
	if !ok {
		return nil, false
	}
	return vs.entries[i].vec, true
}

// setVector stores v (which the store then owns) as c's vector in model;
// the caller holds mu.
func (s *ConceptStore) setVector(c *concept.Concept, model string, v []float32) {
	key := vectorKey{c.OrgID, c.Type, model}
	vs := s.vectors[key]
	if vs == nil {
		vs = &vectorSlice{at: map[string]int{}}
		s.vectors[key] = vs
	}
	n := concept.SquaredNorm(v)
	if i, ok := vs.at[c.ID]; ok {
		vs.sparse.remove(vs.entries[i].row)
		vs.entries[i] = vectorEntry{c: c, vec: v, norm: n, root: math.Sqrt(n), row: vs.sparse.add(v, i, math.Sqrt(n))}
		vs.compact()
		return
	}
	e := vectorEntry{c: c, vec: v, norm: n, root: math.Sqrt(n), row: vs.sparse.add(v, len(vs.entries), math.Sqrt(n))}
	vs.at[c.ID] = len(vs.entries)
	vs.entries = append(vs.entries, e)
}

// dropVector removes c's vector in model, if any; the caller holds mu.
func (s *ConceptStore) dropVector(c *concept.Concept, model string) {
	key := vectorKey{c.OrgID, c.Type, model}
	vs := s.vectors[key]
	if vs == nil {
		return
	}
	i, ok := vs.at[c.ID]
	if !ok {
		return
	}
	vs.sparse.remove(vs.entries[i].row)
	last := len(vs.entries) - 1
	if i != last {
		vs.entries[i] = vs.entries[last]
		vs.at[vs.entries[i].c.ID] = i
		vs.sparse.moved(vs.entries[i].row, i)
	}
	vs.entries[last] = vectorEntry{}
	vs.entries = vs.entries[:last]
	delete(vs.at, c.ID)
	if len(vs.entries) == 0 {
		delete(s.vectors, key)
		return
	}
	vs.compact()
}

// dropVectors removes c's vectors in every model and returns them by
// model; the caller holds mu.
func (s *ConceptStore) dropVectors(c *concept.Concept) map[string][]float32 {
	gone := map[string][]float32{}
	for key := range s.vectors {
		if key.org != c.OrgID || key.typ != c.Type {
			continue
		}
		if v, ok := s.vector(c, key.model); ok {
			gone[key.model] = v
			s.dropVector(c, key.model)
		}
	}
	return gone
}

// nearest is the k first of the slice's vectors of q's length, in
// concept.Nearest's order; the caller holds mu for reading. A sparse
// query reads the inverted index (scanSparse) when that is cheaper. One
// goroutine scans: splitting the full scan across two cores did not
// shorten a lookup of 100,000 vectors of 384 dimensions (it reads 150 MB,
// and memory, not arithmetic, is what bounds it).
func (vs *vectorSlice) nearest(q []float32, k int) []concept.Neighbor {
	qn := concept.SquaredNorm(q)
	if vs.sparseWorth(q, qn) {
		return vs.scanSparse(q, qn, k).Sorted()
	}
	return scanNearest(vs.entries, q, qn, k).Sorted()
}

// scanNearest ranks entries against q (of squared norm qn), building a
// neighbour only for those the selection admits.
func scanNearest(entries []vectorEntry, q []float32, qn float64, k int) *concept.TopK {
	top := concept.NewTopK(k)
	for i := range entries {
		e := &entries[i]
		if len(e.vec) != len(q) {
			continue
		}
		offer(top, e, concept.CosineNormed(q, e.vec, qn, e.norm))
	}
	return top
}
