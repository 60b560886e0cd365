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
	v, ok := s.vectors[[2]string{conceptID, sl.EmbeddingModel}]
	if c == nil || c.Type != sl.Type || !ok {
		return nil, fmt.Errorf("memory: vector of concept %s: %w", conceptID, ports.ErrNotFound)
	}
	return slices.Clone(v), nil
}
