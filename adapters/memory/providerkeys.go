package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ProviderKeyStore = (*ProviderKeyStore)(nil)

// ProviderKeyStore keeps provider keys in memory. Changes to keys take a
// mutex; picks take none. A pick reads an immutable index of the keys by
// organization and provider, lets rotation.Choose rank them, and records
// the use of the chosen key with a compare-and-swap on that key's last use:
// a pick that lost the race to a concurrent one (which changed the same
// key's use since it was read) ranks again, so two picks never both take
// the least recently used key when another is free. Under a mutex, many
// goroutines picking at once queued behind each other and behind the
// scheduler, which made the slowest picks slow; without one, a pick costs
// its own work.
type ProviderKeyStore struct {
	mu   sync.Mutex // serializes changes to keys and idx
	keys map[string]*pkSlot
	// idx maps pickGroup(org, provider) to that group's keys, oldest
	// first. It is replaced whole under mu and read without a lock.
	idx atomic.Pointer[map[string][]*pkSlot]
}

// pkSlot is one key: an immutable value, replaced whole. Picks replace it
// by compare-and-swap with a copy that records the use (each value a new
// pointer, so a swap fails whenever anything got in between); changes
// under the mutex do the same, keeping the use a pick recorded meanwhile.
type pkSlot struct {
	key atomic.Pointer[rotation.Key]
}

// load returns a copy of the slot's key.
func (sl *pkSlot) load() *rotation.Key { return cloneProviderKey(sl.key.Load()) }

// pickInline is how many keys a pick ranks without allocating.
const pickInline = 16

func pickGroup(orgID, provider string) string { return orgID + "\x00" + provider }

// NewProviderKeyStore returns an empty ProviderKeyStore.
func NewProviderKeyStore() *ProviderKeyStore {
	s := &ProviderKeyStore{keys: map[string]*pkSlot{}}
	s.idx.Store(&map[string][]*pkSlot{})
	return s
}

func cloneProviderKey(k *rotation.Key) *rotation.Key {
	c := *k
	c.Sealed = cloneBytes(k.Sealed)
	c.CheckedAt, c.ExpiresAt, c.RestUntil, c.LastUsedAt = tsPtr(k.CheckedAt), tsPtr(k.ExpiresAt), tsPtr(k.RestUntil), tsPtr(k.LastUsedAt)
	c.CreatedAt = ts(k.CreatedAt)
	return &c
}

// reindex publishes the index of the current keys; the caller holds mu.
// A key's organization and provider never change, so only creating and
// deleting keys calls it.
func (s *ProviderKeyStore) reindex() {
	idx := map[string][]*pkSlot{}
	for _, sl := range s.keys {
		k := sl.key.Load()
		g := pickGroup(k.OrgID, k.Provider)
		idx[g] = append(idx[g], sl)
	}
	for _, group := range idx {
		sort.Slice(group, func(i, j int) bool {
			a, b := group[i].key.Load(), group[j].key.Load()
			return oldestFirst(a.CreatedAt, a.ID, b.CreatedAt, b.ID)
		})
	}
	s.idx.Store(&idx)
}

// CreateProviderKey stores k; an existing id is ErrConflict.
func (s *ProviderKeyStore) CreateProviderKey(_ context.Context, k *rotation.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("memory: create provider key %s: %w", k.ID, ports.ErrConflict)
	}
	sl := &pkSlot{}
	sl.key.Store(cloneProviderKey(k))
	s.keys[k.ID] = sl
	s.reindex()
	return nil
}

func (s *ProviderKeyStore) get(orgID, id string) (*pkSlot, error) {
	sl, ok := s.keys[id]
	if !ok || sl.key.Load().OrgID != orgID {
		return nil, fmt.Errorf("memory: provider key %s: %w", id, ports.ErrNotFound)
	}
	return sl, nil
}

// GetProviderKey returns the key id of orgID ("" for global).
func (s *ProviderKeyStore) GetProviderKey(_ context.Context, orgID, id string) (*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	return sl.load(), nil
}

// ListProviderKeys returns orgID's keys by provider, oldest first.
func (s *ProviderKeyStore) ListProviderKeys(_ context.Context, orgID string) ([]*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*rotation.Key
	for _, sl := range s.keys {
		if k := sl.load(); k.OrgID == orgID {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return oldestFirst(out[i].CreatedAt, out[i].ID, out[j].CreatedAt, out[j].ID)
	})
	return out, nil
}

// AllProviderKeys returns every key by id.
func (s *ProviderKeyStore) AllProviderKeys(_ context.Context) ([]*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*rotation.Key, 0, len(s.keys))
	for _, sl := range s.keys {
		out = append(out, sl.load())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// UpdateProviderKey applies fn to a copy and stores it when fn succeeds.
// A pick that lands while fn runs keeps its use unless fn changed the use
// itself.
func (s *ProviderKeyStore) UpdateProviderKey(_ context.Context, orgID, id string, fn func(*rotation.Key) error) (*rotation.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, err := s.get(orgID, id)
	if err != nil {
		return nil, err
	}
	old := sl.key.Load()
	c := cloneProviderKey(old)
	if err := fn(c); err != nil {
		return nil, err
	}
	// Identity does not change.
	c.ID, c.OrgID, c.Provider, c.CreatedAt = old.ID, old.OrgID, old.Provider, old.CreatedAt
	keepUse := c.Uses == old.Uses && sameTimePtr(c.LastUsedAt, old.LastUsedAt)
	for !sl.key.CompareAndSwap(old, c) {
		// A pick got in: keep its use unless fn set the use itself.
		old = sl.key.Load()
		if keepUse {
			c.LastUsedAt, c.Uses = tsPtr(old.LastUsedAt), old.Uses
		}
	}
	return cloneProviderKey(c), nil
}

// DeleteProviderKey removes the key if it is orgID's; ErrNotFound when
// orgID has no such key.
func (s *ProviderKeyStore) DeleteProviderKey(_ context.Context, orgID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.keys[id]
	if !ok || sl.key.Load().OrgID != orgID {
		return fmt.Errorf("provider key %s: %w", id, ports.ErrNotFound)
	}
	delete(s.keys, id)
	s.reindex()
	return nil
}

// PickProviderKey chooses a key with rotation.Choose and records its use
// without a lock (see ProviderKeyStore).
func (s *ProviderKeyStore) PickProviderKey(_ context.Context, orgID string, req rotation.Request) (rotation.Pick, error) {
	now := ts(req.Now)
	for {
		idx := *s.idx.Load()
		var orgSlots []*pkSlot
		if orgID != "" {
			orgSlots = idx[pickGroup(orgID, req.Provider)]
		}
		globalSlots := idx[pickGroup("", req.Provider)]
		n := len(orgSlots) + len(globalSlots)
		// The keys' pointers on the stack for the usual handful of keys:
		// a pick allocates only the use it records and what it returns, so
		// that many picks at once do not drive the collector (whose pauses
		// were the tail).
		var ptrsA [pickInline]*rotation.Key
		ptrs := ptrsA[:0]
		if n > pickInline {
			ptrs = make([]*rotation.Key, 0, n)
		}
		for _, sl := range orgSlots {
			ptrs = append(ptrs, sl.key.Load())
		}
		for _, sl := range globalSlots {
			ptrs = append(ptrs, sl.key.Load())
		}
		p, err := rotation.Choose(ptrs[:len(orgSlots)], ptrs[len(orgSlots):], req)
		if err != nil {
			return rotation.Pick{}, err
		}
		sl := slotOf(p.Key, ptrs, orgSlots, globalSlots)
		used := *p.Key
		used.LastUsedAt, used.Uses = &now, p.Key.Uses+1
		if sl.key.CompareAndSwap(p.Key, &used) {
			return rotation.Pick{Key: cloneProviderKey(&used), Source: p.Source}, nil
		}
		// Another pick used it since it was read: rank again.
	}
}

// slotOf returns the slot whose key ptrs holds at k's index.
func slotOf(k *rotation.Key, ptrs []*rotation.Key, orgSlots, globalSlots []*pkSlot) *pkSlot {
	for i, p := range ptrs {
		if p == k {
			if i < len(orgSlots) {
				return orgSlots[i]
			}
			return globalSlots[i-len(orgSlots)]
		}
	}
	panic("memory: chosen key is not a candidate")
}
