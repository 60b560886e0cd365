package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ProviderKeyStore = (*ProviderKeyStore)(nil)

// ProviderKeyStore keeps provider keys in memory. One mutex makes every
// pick atomic.
type ProviderKeyStore struct {
	mu   sync.Mutex
	keys map[string]*rotation.Key
}

// NewProviderKeyStore returns an empty ProviderKeyStore.
func NewProviderKeyStore() *ProviderKeyStore {
	return &ProviderKeyStore{keys: map[string]*rotation.Key{}}
}

func cloneProviderKey(k *rotation.Key) *rotation.Key {
	c := *k
	c.Sealed = cloneBytes(k.Sealed)
	c.CheckedAt, c.ExpiresAt, c.RestUntil, c.LastUsedAt = tsPtr(k.CheckedAt), tsPtr(k.ExpiresAt), tsPtr(k.RestUntil), tsPtr(k.LastUsedAt)
	c.CreatedAt = ts(k.CreatedAt)
	return &c
}

// CreateProviderKey stores k; an existing id is ErrConflict.
func (s *ProviderKeyStore) CreateProviderKey(_ context.Context, k *rotation.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("memory: create provider key %s: %w", k.ID, ports.ErrConflict)
	}
	s.keys[k.ID] = cloneProviderKey(k)
	return nil
}

func (s *ProviderKeyStore) get(orgID, id string) (*rotation.Key, error) {
	k, ok := s.keys[id]
	if !ok || k.OrgID != orgID {
		return nil, fmt.Errorf("memory: provider key %s: %w", id, ports.ErrNotFound)
	}
	return k, nil
}

// GetProviderKey returns the key id of orgID ("" for global).
func (s *ProviderKeyStore) GetProviderKey(_ context.Context, orgID, id string) (*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	return cloneProviderKey(k), nil
}

func (s *ProviderKeyStore) list(orgID string) []*rotation.Key {
	var out []*rotation.Key
	for _, k := range s.keys {
		if k.OrgID == orgID {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return oldestFirst(out[i].CreatedAt, out[i].ID, out[j].CreatedAt, out[j].ID)
	})
	return out
}

// ListProviderKeys returns orgID's keys by provider, oldest first.
func (s *ProviderKeyStore) ListProviderKeys(_ context.Context, orgID string) ([]*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.list(orgID)
	out := make([]*rotation.Key, len(ks))
	for i, k := range ks {
		out[i] = cloneProviderKey(k)
	}
	return out, nil
}

// AllProviderKeys returns every key by id.
func (s *ProviderKeyStore) AllProviderKeys(_ context.Context) ([]*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*rotation.Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, cloneProviderKey(k))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UpdateProviderKey applies fn to a copy and stores it when fn succeeds.
func (s *ProviderKeyStore) UpdateProviderKey(_ context.Context, orgID, id string, fn func(*rotation.Key) error) (*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	c := cloneProviderKey(k)
	if err := fn(c); err != nil {
		return nil, err
	}
	// Identity does not change.
	c.ID, c.OrgID, c.Provider, c.CreatedAt = k.ID, k.OrgID, k.Provider, k.CreatedAt
	s.keys[id] = cloneProviderKey(c)
	return cloneProviderKey(c), nil
}

// DeleteProviderKey removes the key if it is orgID's.
func (s *ProviderKeyStore) DeleteProviderKey(_ context.Context, orgID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[id]; ok && k.OrgID == orgID {
		delete(s.keys, id)
	}
	return nil
}

// PickProviderKey chooses and records a key under the store's lock.
func (s *ProviderKeyStore) PickProviderKey(_ context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var org []*rotation.Key
	if orgID != "" {
		org = s.list(orgID)
	}
	p, err := rotation.Choose(org, s.list(""), req)
	if err != nil {
		return rotation.Pick{}, err
	}
	p.Use(ts(req.Now))
	p.Key = cloneProviderKey(p.Key)
	return p, nil
}
