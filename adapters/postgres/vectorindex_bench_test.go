package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/test/pgtest"
)

// BenchmarkExactNearest (native PostgreSQL) is one lookup of the 10
// nearest among n concepts of 384 dimensions with the exact index (no
// pgvector), the slice seeded with COPY beside another organization's.
func BenchmarkExactNearest(b *testing.B) {
	for _, n := range []int{20_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			db, err := postgres.Open(ctx, pgtest.Native(b), postgres.PoolConfig{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if err := postgres.Migrate(ctx, db.DB); err != nil {
				b.Fatal(err)
			}
			sl := concept.Slice{Type: "company", EmbeddingModel: "builtin::ngram-384"}
			r := rand.New(rand.NewPCG(uint64(n), 384))
			start := time.Now()
			seedCopyVectors(ctx, b, db, r, sl, n)
			b.Logf("seeded %d concepts in %s", n, time.Since(start).Round(time.Millisecond))
			x := postgres.NewExactVectorIndex(db)
			queries := make([][]float32, 8)
			for i := range queries {
				queries[i] = randomVector(r, concept.NgramDims)
			}
			b.ResetTimer()
			for i := range b.N {
				ns, err := x.Nearest(ctx, "org-bench", sl, queries[i%len(queries)], 10)
				if err != nil || len(ns) != 10 {
					b.Fatal(err, len(ns))
				}
			}
		})
	}
}

func randomVector(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// seedCopyVectors writes n concepts with random vectors, one in fifty of
// another organization, with COPY.
func seedCopyVectors(ctx context.Context, b *testing.B, db *postgres.DB, r *rand.Rand, sl concept.Slice, n int) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 5000
	for from := 0; from < n; from += batch {
		var concepts, vectors [][]any
		for i := from; i < min(from+batch, n); i++ {
			org := "org-bench"
			if i%50 == 49 {
				org = "org-other"
			}
			id, text := fmt.Sprintf("c-%07d", i), fmt.Sprint("company ", i)
			concepts = append(concepts, []any{id, org, sl.Type, text, text, int64(i % 3), sl.EmbeddingModel, concept.NgramDims, at})
			vectors = append(vectors, []any{org, sl.Type, sl.EmbeddingModel, id, concept.NgramDims, randomVector(r, concept.NgramDims)})
		}
		_, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"semantic_concepts"},
			[]string{"id", "org_id", "concept_type", "canonical_text", "normalized_text", "ref_count", "embedding_model", "dims", "created_at"},
			pgx.CopyFromRows(concepts))
		if err != nil {
			b.Fatal(err)
		}
		_, err = db.Pool.CopyFrom(ctx, pgx.Identifier{"concept_embeddings"},
			[]string{"org_id", "concept_type", "embedding_model", "concept_id", "dims", "vector"}, pgx.CopyFromRows(vectors))
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, "ANALYZE semantic_concepts; ANALYZE concept_embeddings"); err != nil {
		b.Fatal(err)
	}
}
