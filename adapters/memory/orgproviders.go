package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ProviderStore = (*ProviderStore)(nil)

// ProviderStore keeps organizations' own providers in memory.
type ProviderStore struct {
	mu    sync.Mutex
	provs map[string]*orgprovider.Provider
}

// NewProviderStore returns an empty ProviderStore.
func NewProviderStore() *ProviderStore {
	return &ProviderStore{provs: map[string]*orgprovider.Provider{}}
}

func int64Ptr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneProvider(p *orgprovider.Provider) *orgprovider.Provider {
	c := *p
	c.Sealed = cloneBytes(p.Sealed)
	c.CreatedAt, c.UpdatedAt = ts(p.CreatedAt), ts(p.UpdatedAt)
	c.Models = make([]orgprovider.Model, len(p.Models))
	for i, m := range p.Models {
		m.InputPerMTok, m.OutputPerMTok = int64Ptr(m.InputPerMTok), int64Ptr(m.OutputPerMTok)
		m.CreatedAt = ts(m.CreatedAt)
		c.Models[i] = m
	}
	return &c
}

// nameTaken reports whether orgID has a provider named name other than id.
func (s *ProviderStore) nameTaken(orgID, name, id string) bool {
	for _, p := range s.provs {
		if p.OrgID == orgID && p.Name == name && p.ID != id {
			return true
		}
	}
	return false
}

// CreateProvider stores p; an existing id or name is ErrConflict.
func (s *ProviderStore) CreateProvider(_ context.Context, p *orgprovider.Provider) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.provs[p.ID]; ok || s.nameTaken(p.OrgID, p.Name, p.ID) {
		return fmt.Errorf("memory: create provider %s: %w", p.ID, ports.ErrConflict)
	}
	s.provs[p.ID] = cloneProvider(p)
	return nil
}

func (s *ProviderStore) get(orgID, id string) (*orgprovider.Provider, error) {
	p, ok := s.provs[id]
	if !ok || p.OrgID != orgID {
		return nil, fmt.Errorf("memory: provider %s: %w", id, ports.ErrNotFound)
	}
	return p, nil
}

// GetProvider returns orgID's provider id.
func (s *ProviderStore) GetProvider(_ context.Context, orgID, id string) (*orgprovider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	return cloneProvider(p), nil
}

// ProviderByName returns orgID's provider named name.
func (s *ProviderStore) ProviderByName(_ context.Context, orgID, name string) (*orgprovider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.provs {
		if p.OrgID == orgID && p.Name == name {
			return cloneProvider(p), nil
		}
	}
	return nil, fmt.Errorf("memory: provider named %q: %w", name, ports.ErrNotFound)
}

// ListProviders returns orgID's providers by name.
func (s *ProviderStore) ListProviders(_ context.Context, orgID string) ([]*orgprovider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*orgprovider.Provider
	for _, p := range s.provs {
		if p.OrgID == orgID {
			out = append(out, cloneProvider(p))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// AllProviders returns every provider by id.
func (s *ProviderStore) AllProviders(_ context.Context) ([]*orgprovider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*orgprovider.Provider, 0, len(s.provs))
	for _, p := range s.provs {
		out = append(out, cloneProvider(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UpdateProvider applies fn to a copy and stores it.
func (s *ProviderStore) UpdateProvider(_ context.Context, orgID, id string, fn func(*orgprovider.Provider) error) (*orgprovider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	p := cloneProvider(cur)
	if err := fn(p); err != nil {
		return nil, err
	}
	p.ID, p.OrgID, p.CreatedAt = cur.ID, cur.OrgID, cur.CreatedAt
	if s.nameTaken(orgID, p.Name, id) {
		return nil, fmt.Errorf("memory: rename provider %s: %w", id, ports.ErrConflict)
	}
	s.provs[id] = cloneProvider(p)
	return cloneProvider(p), nil
}

// DeleteProvider removes orgID's provider id.
func (s *ProviderStore) DeleteProvider(_ context.Context, orgID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.get(orgID, id); err != nil {
		return err
	}
	delete(s.provs, id)
	return nil
}
