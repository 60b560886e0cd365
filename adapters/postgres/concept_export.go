package postgres

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.VectorBulkReader = (*ExactVectorIndex)(nil)
	_ ports.VectorBulkReader = (*PgvectorIndex)(nil)
)

// vectorRow is one stored vector.
type vectorRow struct {
	ConceptID string    `bun:"concept_id"`
	Vector    []float32 `bun:"vector,array"`
}

// Vectors implements ports.VectorBulkReader: the real[] both indexes
// write, one query per page of the export.
func (x *ExactVectorIndex) Vectors(ctx context.Context, orgID string, s concept.Slice, ids []string) (map[string][]float32, error) {
	out := map[string][]float32{}
	ids = storableOnly(ids)
	if len(ids) == 0 || !storable(orgID, s.Type, s.EmbeddingModel) {
		return out, nil
	}
	var rows []vectorRow
	err := x.db.NewRaw(`SELECT concept_id, vector FROM concept_embeddings
		WHERE org_id = ? AND concept_type = ? AND embedding_model = ? AND concept_id IN (?)`,
		orgID, s.Type, s.EmbeddingModel, bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, fail(err, "read concept vectors")
	}
	for _, r := range rows {
		out[r.ConceptID] = r.Vector
	}
	return out, nil
}
