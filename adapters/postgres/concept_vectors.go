package postgres

import (
	"context"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.VectorReader = (*ExactVectorIndex)(nil)
	_ ports.VectorReader = (*PgvectorIndex)(nil)
)

// Vector implements ports.VectorReader: the real[] both indexes write.
func (x *ExactVectorIndex) Vector(ctx context.Context, orgID string, s concept.Slice, conceptID string) ([]float32, error) {
	if !storable(orgID, s.Type, s.EmbeddingModel, conceptID) {
		return nil, errNoConcept(conceptID)
	}
	var row embeddingRow
	err := x.db.NewSelect().Model(&row).Column("vector").
		Where("org_id = ? AND concept_type = ? AND embedding_model = ? AND concept_id = ?", orgID, s.Type, s.EmbeddingModel, conceptID).
		Scan(ctx)
	if err != nil {
		return nil, notFound(err, "read the vector of concept "+conceptID)
	}
	return row.Vector, nil
}
