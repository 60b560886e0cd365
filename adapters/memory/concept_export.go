package memory

import (
	"context"
	"slices"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.VectorBulkReader = (*ConceptStore)(nil)

// Vectors implements ports.VectorBulkReader.
func (s *ConceptStore) Vectors(_ context.Context, orgID string, sl concept.Slice, ids []string) (map[string][]float32, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string][]float32{}
	for _, id := range ids {
		c := s.owned(orgID, id)
		if c == nil || c.Type != sl.Type {
			continue
		}
		if v, ok := s.vector(c, sl.EmbeddingModel); ok {
			out[id] = slices.Clone(v)
		}
	}
	return out, nil
}
