package ports

import (
	"context"

	"github.com/entityenrich/enrich/domain/concept"
)

// VectorReader reads a concept's stored vector back, so that neighbours
// and duplicates of a concept need no new embedding. A VectorIndex may
// implement it; without it the service embeds the canonical text again.
type VectorReader interface {
	// Vector is the concept's vector in the slice's model; ErrNotFound
	// when the organization's concept has none there.
	Vector(ctx context.Context, orgID string, s concept.Slice, conceptID string) ([]float32, error)
}
