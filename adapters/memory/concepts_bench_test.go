package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// benchVector is a random direction of dims dimensions.
func benchVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// BenchmarkNearest is one lookup of the 10 nearest among n concepts of
// 384 dimensions, in a slice beside another organization's: random dense
// directions (another model's embeddings, which the full scan compares)
// and, under ngram/, the built-in embedding of made-up company names
// (sparse vectors, which the inverted index looks up).
func BenchmarkNearest(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(uint64(n), 384))
			benchNearest(b, n, func(int) []float32 { return benchVector(r, concept.NgramDims) })
		})
	}
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprint("ngram/", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(uint64(n), 384))
			benchNearest(b, n, func(int) []float32 { return concept.NgramEmbed(memory.CompanyName(r), concept.NgramDims) })
		})
	}
}

// benchNearest times lookups among n concepts with vector's vectors,
// with queries from vector too.
func benchNearest(b *testing.B, n int, vector func(i int) []float32) {
	ctx := context.Background()
	s := memory.NewConceptStore()
	sl := concept.Slice{Type: "company", EmbeddingModel: "builtin::ngram-384"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		org := "org-bench"
		if i%50 == 49 {
			org = "org-other"
		}
		_, err := s.CreateConcept(ctx, ports.NewConcept{ID: fmt.Sprintf("c-%07d", i), OrgID: org, Type: sl.Type, AliasID: fmt.Sprintf("a-%07d", i),
			Text: fmt.Sprint("company ", i), EmbeddingModel: sl.EmbeddingModel, Vector: vector(i), CreatedAt: at})
		if err != nil {
			b.Fatal(err)
		}
	}
	queries := make([][]float32, 16)
	for i := range queries {
		queries[i] = vector(i)
	}
	b.ResetTimer()
	cpu := cpuTime()
	for i := range b.N {
		ns, err := s.Nearest(ctx, "org-bench", sl, queries[i%len(queries)], 10)
		if err != nil || len(ns) != 10 {
			b.Fatal(err, len(ns))
		}
	}
	// The process's CPU time per lookup: on a loaded machine it
	// varies less than the wall time.
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}
