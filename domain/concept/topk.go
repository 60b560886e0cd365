package concept

import (
	"math"
	"slices"
)

// TopK keeps the k first neighbours, in Nearest's order, of those pushed
// into it, without holding or sorting the others: after any pushes,
// Sorted is what Nearest of everything pushed, cut to k, would be. An
// exact index scans a slice of any size with it in O(n log k) time and
// O(k) memory.
//
// Like Nearest it drops NaN similarities and keeps one entry per concept,
// the most similar (the first of equally similar ones). The entries of one
// concept are expected to carry the same RefCount, as they do when they
// come from one read of a store; an index that yields each concept once
// (one vector per concept and model) always meets that.
//
// A TopK is not safe for concurrent use; concurrent scans keep one each
// and Merge them.
type TopK struct {
	k int
	// heap holds the kept neighbours with the last in order (the first to
	// go) at the root.
	heap []Neighbor
}

// NewTopK returns an empty selection of the k first; k below 1 keeps none.
func NewTopK(k int) *TopK {
	k = max(k, 0)
	return &TopK{k: k, heap: make([]Neighbor, 0, min(k, 1024))}
}

// Len is how many neighbours are kept, at most k.
func (t *TopK) Len() int { return len(t.heap) }

// Floor is the similarity of the last kept neighbour once k are kept:
// a neighbour less similar than it cannot enter. ok is false while fewer
// than k are kept, when anything not NaN can (with k 0 it is +Inf: none
// can).
func (t *TopK) Floor() (similarity float64, ok bool) {
	switch {
	case t.k == 0:
		return math.Inf(1), true
	case len(t.heap) < t.k:
		return math.Inf(-1), false
	}
	return t.heap[0].Similarity, true
}

// Admits reports whether a neighbour with these fields would enter now,
// so that a scan builds a Neighbor only for those that do. A concept
// already kept may be admitted and then not replace its entry (Push).
func (t *TopK) Admits(similarity float64, refCount int, conceptID string) bool {
	switch {
	case t.k == 0 || math.IsNaN(similarity):
		return false
	case len(t.heap) < t.k:
		return true
	}
	w := &t.heap[0]
	return compareRank(similarity, refCount, conceptID, w.Similarity, w.RefCount, w.ConceptID) < 0
}

// Push offers n.
func (t *TopK) Push(n Neighbor) {
	if !t.Admits(n.Similarity, n.RefCount, n.ConceptID) {
		return
	}
	for i := range t.heap {
		if t.heap[i].ConceptID != n.ConceptID {
			continue
		}
		// Nearest keeps the first of a concept's entries unless a later
		// one is strictly more similar.
		if n.Similarity > t.heap[i].Similarity {
			t.heap[i] = n
			t.down(i)
		}
		return
	}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, n)
		t.up(len(t.heap) - 1)
		return
	}
	t.heap[0] = n
	t.down(0)
}

// Merge pushes what o keeps: the k first of a scan split in parts are
// the k first of the parts' k first.
func (t *TopK) Merge(o *TopK) {
	for _, n := range o.heap {
		t.Push(n)
	}
}

// Sorted is the kept neighbours, first first, in a new slice.
func (t *TopK) Sorted() []Neighbor {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, CompareNeighbors)
	return out
}

// later reports whether the i-th kept neighbour comes after the j-th.
func (t *TopK) later(i, j int) bool { return CompareNeighbors(t.heap[i], t.heap[j]) > 0 }

func (t *TopK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.later(i, p) {
			return
		}
		t.heap[i], t.heap[p] = t.heap[p], t.heap[i]
		i = p
	}
}

func (t *TopK) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(t.heap) {
			return
		}
		c := l
		if r := l + 1; r < len(t.heap) && t.later(r, l) {
			c = r
		}
		if !t.later(c, i) {
			return
		}
		t.heap[i], t.heap[c] = t.heap[c], t.heap[i]
		i = c
	}
}
