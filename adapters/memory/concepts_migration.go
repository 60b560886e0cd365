package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// SliceConcepts implements ports.ConceptStore.
func (s *ConceptStore) SliceConcepts(_ context.Context, orgID string, sl concept.Slice, after string, limit int) ([]ports.SliceConcept, error) {
	if limit < 1 {
		return nil, nil
	}
	s.mu.RLock()
	var out []ports.SliceConcept
	for _, c := range s.concepts {
		if c.OrgID == orgID && c.Slice() == sl && c.ID > after {
			out = append(out, ports.SliceConcept{ID: c.ID, CanonicalText: c.CanonicalText})
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ports.SliceConcept) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(limit, len(out))], nil
}

// CutOver implements ports.ConceptStore.
func (s *ConceptStore) CutOver(_ context.Context, orgID string, sl concept.Slice, to string) (int, error) {
	if to == sl.EmbeddingModel {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.concepts {
		if c.OrgID != orgID || c.Slice() != sl {
			continue
		}
		v, ok := s.vector(c, to)
		if !ok {
			continue
		}
		s.dropVector(c, sl.EmbeddingModel)
		c.EmbeddingModel, c.Dims = to, len(v)
		n++
	}
	return n, nil
}

// ConceptMigrations is ports.ConceptMigrations in a map.
type ConceptMigrations struct {
	mu sync.Mutex
	// byOrg holds each organization's migrations, oldest first.
	byOrg map[string][]ports.ConceptMigration
}

var _ ports.ConceptMigrations = (*ConceptMigrations)(nil)

// NewConceptMigrations returns a store with no migration.
func NewConceptMigrations() *ConceptMigrations {
	return &ConceptMigrations{byOrg: map[string][]ports.ConceptMigration{}}
}

func cloneMigration(m ports.ConceptMigration) *ports.ConceptMigration {
	m.ConceptTypes, m.CutTypes = slices.Clone(m.ConceptTypes), slices.Clone(m.CutTypes)
	if m.CompletedAt != nil {
		at := *m.CompletedAt
		m.CompletedAt = &at
	}
	return &m
}

// StartMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) StartMigration(_ context.Context, m ports.ConceptMigration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.byOrg[m.OrgID] {
		if o.Status == ports.MigrationRunning {
			return fmt.Errorf("memory: migration %s runs: %w", o.ID, ports.ErrConflict)
		}
		if o.ID == m.ID {
			return fmt.Errorf("memory: migration %s exists: %w", m.ID, ports.ErrConflict)
		}
	}
	m.Status = ports.MigrationRunning
	m.StartedAt = ts(m.StartedAt)
	s.byOrg[m.OrgID] = append(s.byOrg[m.OrgID], *cloneMigration(m))
	return nil
}

// LatestMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) LatestMigration(_ context.Context, orgID string) (*ports.ConceptMigration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.byOrg[orgID]
	if len(ms) == 0 {
		return nil, fmt.Errorf("memory: no migration: %w", ports.ErrNotFound)
	}
	return cloneMigration(ms[len(ms)-1]), nil
}

// GetMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) GetMigration(_ context.Context, orgID, id string) (*ports.ConceptMigration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.byOrg[orgID] {
		if m.ID == id {
			return cloneMigration(m), nil
		}
	}
	return nil, fmt.Errorf("memory: migration %s: %w", id, ports.ErrNotFound)
}

// SaveMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) SaveMigration(_ context.Context, m ports.ConceptMigration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.byOrg[m.OrgID]
	for i, o := range ms {
		if o.ID != m.ID {
			continue
		}
		if o.Status != ports.MigrationRunning || o.EmbeddedCount > m.EmbeddedCount {
			return fmt.Errorf("memory: migration %s is %s at %d: %w", m.ID, o.Status, o.EmbeddedCount, ports.ErrConflict)
		}
		m.StartedAt = o.StartedAt
		if m.CompletedAt != nil {
			at := ts(*m.CompletedAt)
			m.CompletedAt = &at
		}
		ms[i] = *cloneMigration(m)
		return nil
	}
	return fmt.Errorf("memory: migration %s: %w", m.ID, ports.ErrNotFound)
}
