package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.OrgStore    = (*OrgStore)(nil)
	_ ports.UserStore   = (*UserStore)(nil)
	_ ports.APIKeyStore = (*APIKeyStore)(nil)
)

// OrgStore keeps organizations in memory.
type OrgStore struct {
	mu   sync.RWMutex
	orgs map[string]access.Organization
}

// NewOrgStore returns an empty OrgStore.
func NewOrgStore() *OrgStore { return &OrgStore{orgs: map[string]access.Organization{}} }

// CreateOrg stores o; an existing id is ErrConflict.
func (s *OrgStore) CreateOrg(_ context.Context, o *access.Organization) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orgs[o.ID]; ok {
		return fmt.Errorf("memory: create organization %s: %w", o.ID, ports.ErrConflict)
	}
	s.orgs[o.ID] = cloneOrg(*o)
	return nil
}

// GetOrg returns the organization id.
func (s *OrgStore) GetOrg(_ context.Context, id string) (*access.Organization, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[id]
	if !ok {
		return nil, fmt.Errorf("memory: get organization %s: %w", id, ports.ErrNotFound)
	}
	o = cloneOrg(o)
	return &o, nil
}

func cloneOrg(o access.Organization) access.Organization {
	o.CreatedAt = ts(o.CreatedAt)
	if o.ModelDefaults != nil {
		m := make(map[string]string, len(o.ModelDefaults))
		for k, v := range o.ModelDefaults {
			m[k] = v
		}
		o.ModelDefaults = m
	}
	return o
}

// UpdateOrg calls fn on a copy of the organization and stores the copy when
// fn returns nil.
func (s *OrgStore) UpdateOrg(_ context.Context, id string, fn func(*access.Organization) error) (*access.Organization, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.orgs[id]
	if !ok {
		return nil, fmt.Errorf("memory: update organization %s: %w", id, ports.ErrNotFound)
	}
	c := cloneOrg(old)
	if err := fn(&c); err != nil {
		return nil, err
	}
	c.ID, c.CreatedAt = old.ID, old.CreatedAt
	s.orgs[id] = cloneOrg(c)
	out := cloneOrg(c)
	return &out, nil
}

// LockOrg only checks that the organization exists: memory units of work
// run one at a time (see UnitOfWork), which is a stronger lock.
func (s *OrgStore) LockOrg(_ context.Context, id string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.orgs[id]; !ok {
		return fmt.Errorf("memory: lock organization %s: %w", id, ports.ErrNotFound)
	}
	return nil
}

// UserStore keeps users in memory. Emails are unique whatever their case.
type UserStore struct {
	mu      sync.RWMutex
	users   map[string]access.User
	byEmail map[string]string // lower-case email -> id
}

// NewUserStore returns an empty UserStore.
func NewUserStore() *UserStore {
	return &UserStore{users: map[string]access.User{}, byEmail: map[string]string{}}
}

func emailKey(e string) string { return strings.ToLower(e) }

// CreateUser stores u; an existing id or email is ErrConflict.
func (s *UserStore) CreateUser(_ context.Context, u *access.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.ID]; ok {
		return fmt.Errorf("memory: create user %s: %w", u.ID, ports.ErrConflict)
	}
	if _, ok := s.byEmail[emailKey(u.Email)]; ok {
		return fmt.Errorf("memory: create user %s: email taken: %w", u.ID, ports.ErrConflict)
	}
	c := *u
	c.CreatedAt = ts(c.CreatedAt)
	s.users[u.ID] = c
	s.byEmail[emailKey(u.Email)] = u.ID
	return nil
}

// GetUser returns the user id of any organization.
func (s *UserStore) GetUser(_ context.Context, id string) (*access.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.users[id]
	if !ok {
		return nil, fmt.Errorf("memory: get user %s: %w", id, ports.ErrNotFound)
	}
	return &u, nil
}

// GetUserByEmail returns the user with this email, compared without case.
func (s *UserStore) GetUserByEmail(_ context.Context, email string) (*access.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.byEmail[emailKey(email)]
	if !ok {
		return nil, fmt.Errorf("memory: get user by email: %w", ports.ErrNotFound)
	}
	u := s.users[id]
	return &u, nil
}

// ListUsers returns an organization's users, oldest first.
func (s *UserStore) ListUsers(_ context.Context, orgID string) ([]*access.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*access.User
	for _, u := range s.users {
		if u.OrgID == orgID {
			c := u
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return oldestFirst(out[i].CreatedAt, out[i].ID, out[j].CreatedAt, out[j].ID) })
	return out, nil
}

// UpdateUser calls fn on a copy of the user and stores the copy when fn
// returns nil. The id and organization cannot change.
func (s *UserStore) UpdateUser(_ context.Context, orgID, id string, fn func(*access.User) error) (*access.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.users[id]
	if !ok || old.OrgID != orgID {
		return nil, fmt.Errorf("memory: update user %s: %w", id, ports.ErrNotFound)
	}
	c := old
	if err := fn(&c); err != nil {
		return nil, err
	}
	c.ID, c.OrgID = old.ID, old.OrgID
	c.CreatedAt = ts(c.CreatedAt)
	if emailKey(c.Email) != emailKey(old.Email) {
		if _, taken := s.byEmail[emailKey(c.Email)]; taken {
			return nil, fmt.Errorf("memory: update user %s: email taken: %w", id, ports.ErrConflict)
		}
		delete(s.byEmail, emailKey(old.Email))
		s.byEmail[emailKey(c.Email)] = id
	}
	s.users[id] = c
	out := c
	return &out, nil
}

// APIKeyStore keeps access keys in memory.
type APIKeyStore struct {
	mu   sync.RWMutex
	keys map[string]access.APIKey
}

// NewAPIKeyStore returns an empty APIKeyStore.
func NewAPIKeyStore() *APIKeyStore { return &APIKeyStore{keys: map[string]access.APIKey{}} }

func cloneKey(k access.APIKey) access.APIKey {
	if len(k.Scopes) == 0 {
		k.Scopes = nil
	} else {
		k.Scopes = append([]access.Scope(nil), k.Scopes...)
	}
	k.ExpiresAt = tsPtr(k.ExpiresAt)
	k.RevokedAt = tsPtr(k.RevokedAt)
	k.LastUsedAt = tsPtr(k.LastUsedAt)
	k.CreatedAt = ts(k.CreatedAt)
	return k
}

// CreateKey stores k; an existing id is ErrConflict.
func (s *APIKeyStore) CreateKey(_ context.Context, k *access.APIKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("memory: create key %s: %w", k.ID, ports.ErrConflict)
	}
	s.keys[k.ID] = cloneKey(*k)
	return nil
}

// FindKeysByPrefix returns every key with this prefix, oldest first.
func (s *APIKeyStore) FindKeysByPrefix(_ context.Context, prefix string) ([]*access.APIKey, error) {
	return s.list(func(k *access.APIKey) bool { return k.Prefix == prefix }), nil
}

// GetKey returns the key id of organization orgID.
func (s *APIKeyStore) GetKey(_ context.Context, orgID, id string) (*access.APIKey, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k, ok := s.keys[id]
	if !ok || k.OrgID != orgID {
		return nil, fmt.Errorf("memory: get key %s: %w", id, ports.ErrNotFound)
	}
	c := cloneKey(k)
	return &c, nil
}

// ListKeys returns an organization's keys, oldest first.
func (s *APIKeyStore) ListKeys(_ context.Context, orgID string) ([]*access.APIKey, error) {
	return s.list(func(k *access.APIKey) bool { return k.OrgID == orgID }), nil
}

func (s *APIKeyStore) list(match func(*access.APIKey) bool) []*access.APIKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*access.APIKey
	for _, k := range s.keys {
		if match(&k) {
			c := cloneKey(k)
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return oldestFirst(out[i].CreatedAt, out[i].ID, out[j].CreatedAt, out[j].ID) })
	return out
}

// UpdateKey calls fn on a copy of the key and stores the copy when fn
// returns nil. The id and organization cannot change.
func (s *APIKeyStore) UpdateKey(_ context.Context, orgID, id string, fn func(*access.APIKey) error) (*access.APIKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.keys[id]
	if !ok || old.OrgID != orgID {
		return nil, fmt.Errorf("memory: update key %s: %w", id, ports.ErrNotFound)
	}
	c := cloneKey(old)
	if err := fn(&c); err != nil {
		return nil, err
	}
	c.ID, c.OrgID = old.ID, old.OrgID
	c = cloneKey(c)
	s.keys[id] = c
	out := cloneKey(c)
	return &out, nil
}

// RecordUsage adds each usage's count and moves the last-used time forward
// (never back). Unknown keys are ignored: a key may be deleted between its use
// and the flush.
func (s *APIKeyStore) RecordUsage(_ context.Context, usage []ports.KeyUsage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordUsageLocked(usage)
	return nil
}

func (s *APIKeyStore) recordUsageLocked(usage []ports.KeyUsage) {
	for _, u := range usage {
		k, ok := s.keys[u.KeyID]
		if !ok {
			continue
		}
		k.UseCount += u.Count
		at := ts(u.LastAt)
		if k.LastUsedAt == nil || at.After(*k.LastUsedAt) {
			k.LastUsedAt = &at
		}
		s.keys[u.KeyID] = k
	}
}
