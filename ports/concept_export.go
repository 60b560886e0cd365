package ports

import (
	"context"

	"github.com/entityenrich/enrich/domain/concept"
)

// VectorBulkReader reads stored vectors back a page at a time, for the
// export's embeddings. A VectorIndex may implement it; without it the
// export offers no embeddings.
type VectorBulkReader interface {
	// Vectors returns the vectors the slice's model holds for the
	// organization's concepts among ids; a concept without one is left out.
	Vectors(ctx context.Context, orgID string, s concept.Slice, ids []string) (map[string][]float32, error)
}
