package memory

import (
	"math"
	"sync"

	"github.com/entityenrich/enrich/domain/concept"
)

// sparseIndex is a slice's inverted index: for each dimension, the
// (row, value) of every indexed vector whose value there is not zero.
// The built-in embedding's vectors (concept.NgramEmbed) have a few dozen
// non-zero values of 384, so a lookup with such a query sums the dot
// products of the few postings of its non-zero dimensions rather than
// reading every vector.
//
// The sum is CosineNormed's to the last bit: it visits the query's
// dimensions in increasing order, so each row's accumulator, started at
// +0, adds the same non-zero products in the same order; the products it
// leaves out are exact zeros (a product of two float32 values is exact in
// float64), and adding a zero to a sum that started at +0, which is never
// -0, leaves it as it was.
//
// A vector with more than half its values non-zero (another model's dense
// embedding), a non-finite one or one of another length than the index's
// is not indexed (row -1): a sparse lookup compares it in full.
//
// Rows are numbered as vectors are indexed and are not renumbered when
// the slice moves an entry: a removed or re-embedded entry leaves a dead
// row whose postings stay until compact drops them.
type sparseIndex struct {
	// dims is the length of the indexed vectors: the first indexed one's.
	dims     int
	postings [][]posting
	// rows is how many rows were numbered, dead is how many of them are
	// dead, plain is how many entries are not indexed.
	rows        int32
	dead, plain int
	// at is each row's entry in the slice, -1 for a dead row; roots is
	// the square root of each row's squared norm, for belowFloor. A lookup
	// reads them in row order rather than the slice's entries.
	at    []int32
	roots []float64
}

type posting struct {
	row int32
	v   float32
}

// compactMin is how many rows must be dead before compact renumbers; a
// variable for tests.
var compactMin = 1024

// add indexes v, the slice's entry at, of root math.Sqrt(SquaredNorm(v)),
// and returns its row, or -1 when it leaves v to the full comparison.
func (ix *sparseIndex) add(v []float32, at int, root float64) int32 {
	if !ix.fits(v) {
		ix.plain++
		return -1
	}
	if ix.dims == 0 {
		ix.dims = len(v)
		ix.postings = make([][]posting, len(v))
	}
	row := ix.rows
	ix.rows++
	ix.at = append(ix.at, int32(at))
	ix.roots = append(ix.roots, root)
	for d, x := range v {
		if x != 0 {
			ix.postings[d] = append(ix.postings[d], posting{row, x})
		}
	}
	return row
}

// fits reports whether the index takes v.
func (ix *sparseIndex) fits(v []float32) bool {
	if len(v) == 0 || (ix.dims != 0 && len(v) != ix.dims) {
		return false
	}
	nonZero := 0
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
		if x != 0 {
			nonZero++
		}
	}
	return nonZero <= len(v)/2
}

// remove forgets the vector add gave row.
func (ix *sparseIndex) remove(row int32) {
	if row < 0 {
		ix.plain--
		return
	}
	ix.at[row] = -1
	ix.dead++
}

// moved notes that row's entry is now the slice's entry at.
func (ix *sparseIndex) moved(row int32, at int) {
	if row >= 0 {
		ix.at[row] = int32(at)
	}
}

// compact renumbers the live rows and drops the dead rows' postings once
// they are at least compactMin and half the rows.
func (vs *vectorSlice) compact() {
	ix := &vs.sparse
	if ix.dead < compactMin || 2*ix.dead < int(ix.rows) {
		return
	}
	renumber := make([]int32, ix.rows)
	for i := range renumber {
		renumber[i] = -1
	}
	var next int32
	ix.at, ix.roots = ix.at[:0], ix.roots[:0]
	for i := range vs.entries {
		if e := &vs.entries[i]; e.row >= 0 {
			renumber[e.row] = next
			e.row = next
			next++
			ix.at = append(ix.at, int32(i))
			ix.roots = append(ix.roots, e.root)
		}
	}
	for d, ps := range ix.postings {
		kept := ps[:0]
		for _, p := range ps {
			if r := renumber[p.row]; r >= 0 {
				kept = append(kept, posting{r, p.v})
			}
		}
		if cap(kept) > 2*len(kept)+16 {
			kept = append([]posting(nil), kept...)
		}
		ix.postings[d] = kept
	}
	ix.rows, ix.dead = next, 0
}

// sums holds a lookup's accumulators between lookups.
var sums = sync.Pool{New: func() any { return new([]float64) }}

// sparseWorth reports whether a sparse lookup of q is possible and
// cheaper than comparing q with every vector: q has the index's length,
// finite values (qn, its squared norm, is finite) and few non-zero ones
// whose postings, with the vectors compared in full, are much fewer than
// the values a full scan reads.
func (vs *vectorSlice) sparseWorth(q []float32, qn float64) bool {
	ix := &vs.sparse
	if ix.dims == 0 || len(q) != ix.dims || math.IsNaN(qn) || math.IsInf(qn, 0) {
		return false
	}
	nonZero, postings := 0, 0
	for d, x := range q {
		if x != 0 {
			nonZero++
			postings += len(ix.postings[d])
		}
	}
	n := len(vs.entries)
	return nonZero <= len(q)/2 && 4*postings+16*n+ix.plain*len(q) < n*len(q)
}

// scanSparse is scanNearest for a query sparseWorth accepts: the dot
// products of the indexed vectors from the postings, the others' in full.
func (vs *vectorSlice) scanSparse(q []float32, qn float64, k int) *concept.TopK {
	ix := &vs.sparse
	buf := sums.Get().(*[]float64)
	if cap(*buf) < int(ix.rows) {
		*buf = make([]float64, ix.rows)
	}
	acc := (*buf)[:ix.rows]
	for d, x := range q {
		if x == 0 {
			continue
		}
		y := float64(x)
		for _, p := range ix.postings[d] {
			acc[p.row] += y * float64(p.v)
		}
	}
	top := concept.NewTopK(k)
	vs.offerTouched(top, acc, qn)
	if floor, full := top.Floor(); ix.plain > 0 || !full || !(floor > 0) {
		vs.offerRest(top, acc, q, qn)
	}
	clear(acc)
	sums.Put(buf)
	return top
}

// offerTouched offers the indexed vectors whose dot product with the
// query (of squared norm qn), acc, is not zero, in row order.
func (vs *vectorSlice) offerTouched(top *concept.TopK, acc []float64, qn float64) {
	ix := &vs.sparse
	floor, full := top.Floor()
	below := belowFloor(floor, full, qn)
	for row, dot := range acc {
		if dot == 0 || dot < below*ix.roots[row] || ix.at[row] < 0 {
			continue
		}
		e := &vs.entries[ix.at[row]]
		sim := concept.CosineDot(dot, qn, e.norm)
		if full && sim < floor {
			continue
		}
		offer(top, e, sim)
		floor, full = top.Floor()
		below = belowFloor(floor, full, qn)
	}
}

// offerRest offers the vectors offerTouched did not: the indexed ones
// whose dot product is zero, of similarity 0 (CosineDot of +0: 0 when a
// norm is, else +0 over a positive), and those the index left out, of q's
// length, compared in full.
func (vs *vectorSlice) offerRest(top *concept.TopK, acc []float64, q []float32, qn float64) {
	floor, full := top.Floor()
	for i := range vs.entries {
		e := &vs.entries[i]
		var sim float64
		switch {
		case e.row >= 0 && acc[e.row] != 0:
			continue
		case e.row >= 0:
			sim = 0
		case len(e.vec) == len(q):
			sim = concept.CosineNormed(q, e.vec, qn, e.norm)
		default:
			continue
		}
		if full && sim < floor {
			continue
		}
		offer(top, e, sim)
		floor, full = top.Floor()
	}
}

// belowFloor is a bound under which a dot product with a query of
// squared norm qn, divided by the vector's root (the square root of its
// squared norm), makes a cosine certainly below floor: a sparse lookup
// skips those without concept.CosineDot's two square roots and division.
// The bound is floor's a billionth short, far more than the rounding of
// CosineDot's three operations and of the bound's; it is -Inf (nothing
// is skipped) until the selection is full, while floor is not positive,
// and where the numbers are so small that the rounding of subnormal
// numbers could be larger.
func belowFloor(floor float64, full bool, qn float64) float64 {
	b := floor * math.Sqrt(qn) * (1 - 1e-9)
	if !full || !(floor > 0) || !(b > 1e-150) || math.IsInf(b, 0) {
		return math.Inf(-1)
	}
	return b
}

// offer pushes e's neighbour if top admits it.
func offer(top *concept.TopK, e *vectorEntry, sim float64) {
	if top.Admits(sim, e.c.RefCount, e.c.ID) {
		top.Push(concept.Neighbor{ConceptID: e.c.ID, Text: e.c.CanonicalText, CanonicalText: e.c.CanonicalText,
			IsCanonical: true, RefCount: e.c.RefCount, Similarity: sim})
	}
}
