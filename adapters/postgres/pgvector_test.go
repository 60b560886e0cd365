package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

// seedVectors writes n concepts of org with vectors of 384 dimensions
// near sign·e1 (the first coordinate sign, the others small and random),
// in two statements.
func seedVectors(t testing.TB, db *postgres.DB, org string, n int, sign float64) {
	ctx := context.Background()
	for _, st := range []struct {
		q    string
		args []any
	}{
		{`INSERT INTO semantic_concepts (id, org_id, concept_type, canonical_text, normalized_text, ref_count, embedding_model, dims,
			created_at)
			SELECT ?::text || i, ?, 'company', 'c' || i, 'c' || i, 0, 'builtin/ngram', 384, now() FROM generate_series(1, ?) i`,
			[]any{org + "_", org, n}},
		{`INSERT INTO concept_embeddings (org_id, concept_type, embedding_model, concept_id, dims, vector)
			SELECT ?, 'company', 'builtin/ngram', ?::text || i, 384,
				array_prepend(?::real, (SELECT array_agg((random() * 0.1)::real) FROM generate_series(1, 383) WHERE i > 0))
			FROM generate_series(1, ?) i`, []any{org, org + "_", sign, n}},
	} {
		if _, err := db.ExecContext(ctx, st.q, st.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPgvectorSession: the pool's connections carry the settings of the
// common lookup, which then is one statement, and they take effect in
// the HNSW scan: a small slice among a large one comes back whole only
// with the iterative scan (PGlite, whose pgvector is 0.8).
func TestPgvectorSession(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db := migrated(t, pgtest.PGlite(t))
	x, err := postgres.NewPgvectorIndex(ctx, db)
	is.NoErr(err)
	is.Equal(postgres.PgvectorSessionEf(x), 40) // read from the session
	big, small := "org_big_"+contract.TestUUID(), "org_small_"+contract.TestUUID()
	seedVectors(t, db, big, 100, 1)
	seedVectors(t, db, small, 5, -1)
	// PGlite's one session: these reach every connection of the pool.
	// The slices are small: without them the planner reads them exactly.
	_, err = db.ExecContext(ctx, "SET enable_seqscan = off; SET enable_sort = off")
	is.NoErr(err)
	t.Cleanup(func() {
		_, _ = db.ExecContext(ctx, "RESET enable_seqscan; RESET enable_sort; SET hnsw.iterative_scan = relaxed_order")
	})
	q := make([]float32, concept.NgramDims)
	q[0] = 1
	sl := concept.Slice{Type: "company", EmbeddingModel: "builtin/ngram"}
	for _, k := range []int{10, 25} { // one statement; a transaction (50 candidates)
		ns, err := x.Nearest(ctx, small, sl, q, k)
		is.NoErr(err)
		is.Equal(len(ns), 5) // the iterative scan went past the large slice
		ns, err = x.Nearest(ctx, big, sl, q, k)
		is.NoErr(err)
		is.Equal(len(ns), k)
	}
	// Concurrent lookups share PGlite's one session: each is one message.
	var wg sync.WaitGroup
	errs := make(chan error, 16*10)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := x.Nearest(ctx, big, sl, q, 10); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var ef, iterative string
	is.NoErr(db.QueryRowContext(ctx, "SHOW hnsw.ef_search").Scan(&ef))
	is.NoErr(db.QueryRowContext(ctx, "SHOW hnsw.iterative_scan").Scan(&iterative))
	is.Equal(ef+" "+iterative, "40 relaxed_order") // pgvector loaded, the session's values kept
	// Without the iterative scan, the first 40 candidates are all the
	// large slice's: the settings are what made the answer whole.
	_, err = db.ExecContext(ctx, "SET hnsw.iterative_scan = off")
	is.NoErr(err)
	ns, err := x.Nearest(ctx, small, sl, q, 10)
	is.NoErr(err)
	is.True(len(ns) < 5)
}

// BenchmarkPgvectorNearest compares a lookup of 10 in one statement (the
// session's settings) with the same in a transaction that sets them, on
// PGlite, with ENRICH_BENCH_VECTORS (default 2,000) random vectors, the
// two taking turns:
//
//	go test -run '^$' -bench PgvectorNearest -benchtime 200x ./adapters/postgres/
func BenchmarkPgvectorNearest(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.PGlite(b)
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := postgres.Migrate(ctx, db.DB); err != nil {
		b.Fatal(err)
	}
	n := 2000
	if v := envInt("ENRICH_BENCH_VECTORS"); v > 0 {
		n = v
	}
	org := "org_bench_" + contract.TestUUID()
	seedVectors(b, db, org, n, 1)
	x, err := postgres.NewPgvectorIndex(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	q := make([]float32, concept.NgramDims)
	q[0] = 1
	sl := concept.Slice{Type: "company", EmbeddingModel: "builtin/ngram"}
	// The two take turns, so that the machine's drift is both's.
	paths := []*postgres.PgvectorIndex{x, postgres.PgvectorInTx(x)}
	lat := make([][]time.Duration, len(paths))
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := paths[i%2].Nearest(ctx, org, sl, q, 10); err != nil {
			b.Fatal(err)
		}
		lat[i%2] = append(lat[i%2], time.Since(t0))
	}
	for i, name := range []string{"session", "transaction"} {
		p50, p99 := quantiles(lat[i])
		b.ReportMetric(float64(p50)/1e6, name+"-p50-ms")
		b.ReportMetric(float64(p99)/1e6, name+"-p99-ms")
	}
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// quantiles are the median and the 99th percentile of d.
func quantiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}
