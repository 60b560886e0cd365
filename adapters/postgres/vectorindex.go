package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.VectorIndex = (*ExactVectorIndex)(nil)

// exactPageRows is how many vectors Nearest reads per round trip when it
// reads pages through Bun (on a transaction): a call holds one page and
// the k best so far, whatever the slice's size.
const exactPageRows = 1000

// ExactVectorIndex is ports.VectorIndex for PostgreSQL without pgvector:
// vectors are real[] in concept_embeddings, and Nearest reads all of the
// slice's vectors and ranks them in Go with concept.Cosine's arithmetic
// and concept.TopK (Nearest's order). Ranking in Go rather than in SQL
// keeps one definition of the similarity and of the order for every
// index, so that the exact indexes agree to the last bit; the cost is the
// transfer of the slice's vectors on every lookup (about 1.5 kB a concept
// at 384 dimensions), which is what pgvector (an approximate index)
// avoids where it is installed. The vectors are streamed through pgx and
// decoded in place, so that cost is the server's and the wire's rather
// than allocations.
type ExactVectorIndex struct {
	db       bun.IDB
	pageRows int
	// paged makes Nearest read pages through Bun even on a pool (tests).
	paged bool
}

// NewExactVectorIndex returns the index on db.
func NewExactVectorIndex(db bun.IDB) *ExactVectorIndex {
	return &ExactVectorIndex{db: db, pageRows: exactPageRows}
}

// Upsert writes the vector from the concept's row, so that a concept of
// another organization or type writes nothing.
func (x *ExactVectorIndex) Upsert(ctx context.Context, orgID string, s concept.Slice, conceptID string, vector []float32) error {
	if err := ports.CheckVector(vector); err != nil {
		return err
	}
	if !storable(orgID, s.Type, conceptID) {
		return errNoConcept(conceptID)
	}
	return inTx(ctx, x.db, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewRaw(`INSERT INTO concept_embeddings (org_id, concept_type, embedding_model, concept_id, dims, vector)
			SELECT org_id, concept_type, ?, id, ?, ?::real[] FROM semantic_concepts WHERE id = ? AND org_id = ? AND concept_type = ?
			ON CONFLICT (org_id, concept_type, embedding_model, concept_id) DO UPDATE SET dims = EXCLUDED.dims, vector = EXCLUDED.vector`,
			s.EmbeddingModel, len(vector), pgdialect.Array(vector), conceptID, orgID, s.Type).Exec(ctx)
		if err != nil {
			return fail(err, "upsert concept vector "+conceptID)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNoConcept(conceptID)
		}
		_, err = tx.NewUpdate().Model((*conceptRow)(nil)).Set("dims = ?", len(vector)).
			Where("id = ? AND embedding_model = ?", conceptID, s.EmbeddingModel).Exec(ctx)
		return maybeFail(err, "set concept dims "+conceptID)
	})
}

// nearRow is one vector of a page with what a neighbour shows.
type nearRow struct {
	ConceptID     string    `bun:"concept_id"`
	Vector        []float32 `bun:"vector,array"`
	CanonicalText string    `bun:"canonical_text"`
	RefCount      int       `bun:"ref_count"`
}

// Nearest ranks the slice's vectors with concept.TopK as they are read:
// streamed through pgx in one statement where the index has the pool
// (nearestStreamed), else page by page through Bun.
func (x *ExactVectorIndex) Nearest(ctx context.Context, orgID string, s concept.Slice, vector []float32, k int) ([]concept.Neighbor, error) {
	if k < 1 || len(vector) == 0 || !storable(orgID, s.Type, s.EmbeddingModel) {
		return nil, nil
	}
	top := concept.NewTopK(k)
	var err error
	if db, ok := pool(x.db); ok && !x.paged {
		err = onPgx(ctx, db, func(c *pgx.Conn) error { return nearestStreamed(ctx, c, orgID, s, vector, top) })
	} else {
		err = x.nearestPaged(ctx, orgID, s, vector, top)
	}
	if err != nil {
		return nil, fail(err, "read concept vectors")
	}
	return top.Sorted(), nil
}

// nearestPaged reads the slice's vectors through Bun, a page at a time.
func (x *ExactVectorIndex) nearestPaged(ctx context.Context, orgID string, s concept.Slice, vector []float32, top *concept.TopK) error {
	after := ""
	for {
		var rows []nearRow
		err := x.db.NewRaw(`SELECT e.concept_id, e.vector, c.canonical_text, c.ref_count
			FROM concept_embeddings e JOIN semantic_concepts c ON c.id = e.concept_id
			WHERE e.org_id = ? AND e.concept_type = ? AND e.embedding_model = ? AND e.concept_id > ? AND e.dims = ?
			ORDER BY e.concept_id LIMIT ?`, orgID, s.Type, s.EmbeddingModel, after, len(vector), x.pageRows).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		for _, r := range rows {
			top.Push(concept.Neighbor{ConceptID: r.ConceptID, Text: r.CanonicalText, CanonicalText: r.CanonicalText,
				IsCanonical: true, RefCount: r.RefCount, Similarity: concept.Cosine(vector, r.Vector)})
		}
		if len(rows) < x.pageRows {
			return nil
		}
		after = rows[len(rows)-1].ConceptID
	}
}

// Delete implements ports.VectorIndex.
func (x *ExactVectorIndex) Delete(ctx context.Context, orgID string, s concept.Slice, conceptID string) error {
	if !storable(orgID, s.Type, s.EmbeddingModel, conceptID) {
		return nil
	}
	return inTx(ctx, x.db, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*embeddingRow)(nil)).
			Where("org_id = ? AND concept_type = ? AND embedding_model = ? AND concept_id = ?", orgID, s.Type, s.EmbeddingModel, conceptID).Exec(ctx)
		if err != nil {
			return fail(err, "delete concept vector "+conceptID)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		_, err = tx.NewUpdate().Model((*conceptRow)(nil)).Set("dims = 0").
			Where("id = ? AND embedding_model = ?", conceptID, s.EmbeddingModel).Exec(ctx)
		return maybeFail(err, "clear concept dims "+conceptID)
	})
}
