package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/pgvector/pgvector-go"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

// TestConceptStore runs the suites on native PostgreSQL (no pgvector: the
// exact index) and on PGlite (pgvector: both indexes).
func TestConceptStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			indexes := map[string]func() ports.VectorIndex{
				"exact": func() ports.VectorIndex { return postgres.NewExactVectorIndex(db) },
				// Pages of two vectors: the k best carry over from page to page.
				"exact paged": func() ports.VectorIndex { return postgres.NewExactVectorIndexPaged(db, 2) },
			}
			has, err := postgres.HasPgvector(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			// The native server here has no pgvector; PGlite loads it.
			if has != (b.name == "pglite") {
				t.Fatalf("HasPgvector = %v on %s", has, b.name)
			}
			if has {
				indexes["pgvector"] = func() ports.VectorIndex {
					x, err := postgres.NewPgvectorIndex(context.Background(), db)
					if err != nil {
						t.Fatal(err)
					}
					return x
				}
			}
			contract.RunConceptStore(t, func(*testing.T) contract.ConceptPorts {
				return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: postgres.NewExactVectorIndex(db)}
			})
			t.Run("migrations", func(t *testing.T) { contract.RunConceptMigrations(t, postgres.NewConceptMigrations(db)) })
			for name, index := range indexes {
				t.Run(name, func(t *testing.T) {
					contract.RunVectorIndex(t, func(*testing.T) contract.ConceptPorts {
						return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: index()}
					})
					if name != "pgvector" { // approximate: it may miss a tie past its candidates
						contract.RunExactVectorIndex(t, func(*testing.T) contract.ConceptPorts {
							return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: index()}
						})
					}
					t.Run("cut over", func(t *testing.T) {
						contract.RunConceptCutOver(t, func(*testing.T) contract.ConceptPorts {
							return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: index()}
						})
					})
				})
			}
			chosen, err := postgres.NewVectorIndex(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			if _, isPg := chosen.(*postgres.PgvectorIndex); isPg != has {
				t.Fatalf("NewVectorIndex chose %T with pgvector %v", chosen, has)
			}
			if has {
				t.Run("hnsw plan", func(t *testing.T) { hnswPlan(t, db) })
			}
		})
	}
}

// hnswPlan checks that a lookup of 384 dimensions, the built-in
// embedder's, can use the partial HNSW index: its expression and
// predicate match the statement's.
func hnswPlan(t *testing.T, db *postgres.DB) {
	ctx := context.Background()
	is := is.New(t)
	store := postgres.NewConceptStore(db)
	index, err := postgres.NewPgvectorIndex(ctx, db)
	is.NoErr(err)
	org := "org_hnsw_" + contract.TestUUID()
	sl := concept.Slice{Type: "company", EmbeddingModel: "builtin/ngram"}
	for i, text := range []string{"Acme Corporation", "Acme Corp", "Globex", "Initech", "Umbrella"} {
		_, err := store.CreateConcept(ctx, ports.NewConcept{ID: contract.TestUUID(), OrgID: org, Type: sl.Type, AliasID: contract.TestUUID(),
			Text: text, EmbeddingModel: sl.EmbeddingModel, Vector: concept.NgramEmbed(text, concept.NgramDims), CreatedAt: time.Date(2026, 3, 1, 0, 0, i, 0, time.UTC)})
		is.NoErr(err)
	}
	q := concept.NgramEmbed("ACME corporation", concept.NgramDims)
	ns, err := index.Nearest(ctx, org, sl, q, 2)
	is.NoErr(err)
	is.Equal(len(ns), 2)
	is.Equal(ns[0].CanonicalText, "Acme Corporation")
	is.True(ns[0].Similarity > 0.999)
	is.Equal(ns[1].CanonicalText, "Acme Corp")

	var plan []string
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// The slice is tiny: left alone, the planner rightly reads it by
		// the primary key and sorts it, which is exact. At size the sort
		// costs more than the HNSW scan; here the sort is taken away.
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off"); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, "EXPLAIN "+postgres.PgvectorNearestSQL(concept.NgramDims), org, sl.Type, sl.EmbeddingModel,
			pgvector.NewVector(q), 10)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan = append(plan, line)
		}
		return rows.Err()
	})
	is.NoErr(err)
	if !strings.Contains(strings.Join(plan, "\n"), "concept_embeddings_hnsw_384") {
		t.Fatalf("the lookup does not use the HNSW index:\n%s", strings.Join(plan, "\n"))
	}
}

// TestConceptReviews runs the review list's suite on native PostgreSQL
// and PGlite.
func TestConceptReviews(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunConceptReviews(t, func(*testing.T) ports.ConceptReviews { return postgres.NewConceptReviews(db) })
		})
	}
}

// TestConceptLinks runs the links suite on native PostgreSQL and PGlite.
func TestConceptLinks(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunConceptLinks(t, func(*testing.T) ports.ConceptLinks { return postgres.NewConceptLinks(db) })
		})
	}
}
