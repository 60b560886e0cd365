package memory

import (
	"context"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.EmbeddingSettings = (*EmbeddingSettings)(nil)

// EmbeddingSettings keeps the organizations' embedding-model settings in a
// map; an organization with no entry never set one.
type EmbeddingSettings struct {
	mu     sync.RWMutex
	models map[string]string
}

// NewEmbeddingSettings returns settings no organization has set.
func NewEmbeddingSettings() *EmbeddingSettings {
	return &EmbeddingSettings{models: map[string]string{}}
}

// EmbeddingModel returns orgID's setting and whether it was ever set.
func (s *EmbeddingSettings) EmbeddingModel(_ context.Context, orgID string) (string, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, set := s.models[orgID]
	return m, set, nil
}

// SetEmbeddingModel stores orgID's setting; "" records it as cleared.
func (s *EmbeddingSettings) SetEmbeddingModel(_ context.Context, orgID, model string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models[orgID] = model
	return nil
}
