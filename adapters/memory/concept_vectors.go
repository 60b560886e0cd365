package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.VectorReader = (*ConceptStore)(nil)

// Vector implements ports.VectorReader.
func (s *ConceptStore) Vector(_ context.Context, orgID string, sl concept.Slice, conceptID string) ([]float32, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.owned(orgID, conceptID)
	if c == nil || c.Type != sl.Type {
		return nil, fmt.Errorf("memory: vector of concept %s: %w", conceptID, ports.ErrNotFound)
	}
	v, ok := s.vector(c, sl.EmbeddingModel)
	if !ok {
		return nil, fmt.Errorf("memory: vector of concept %s: %w", conceptID, ports.ErrNotFound)
	}
	return slices.Clone(v), nil
}
