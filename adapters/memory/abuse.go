package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.LoginThrottleStore = (*LoginThrottleStore)(nil)
	_ ports.DeniedTokenStore   = (*DeniedTokenStore)(nil)
	_ ports.InvitationStore    = (*InvitationStore)(nil)
)

// LoginThrottleStore keeps login failures in memory (one process).
type LoginThrottleStore struct {
	mu sync.Mutex
	m  map[string]access.LoginFailures
}

// NewLoginThrottleStore returns an empty LoginThrottleStore.
func NewLoginThrottleStore() *LoginThrottleStore {
	return &LoginThrottleStore{m: map[string]access.LoginFailures{}}
}

// LoginFailures returns key's failures.
func (s *LoginThrottleStore) LoginFailures(_ context.Context, key string) (access.LoginFailures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

// AddLoginFailure counts a failure of key at `at`.
func (s *LoginThrottleStore) AddLoginFailure(_ context.Context, key string, at, forgetBefore time.Time) (access.LoginFailures, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[key]
	if !f.Last.After(forgetBefore) {
		f.Count = 0
	}
	f.Count++
	f.Last = ts(at)
	s.m[key] = f
	return f, nil
}

// TakeLoginAttempt counts an attempt of key if its failures are still seen.
func (s *LoginThrottleStore) TakeLoginAttempt(_ context.Context, key string, seen access.LoginFailures, at, forgetBefore time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[key]
	if f.Count != seen.Count || !f.Last.Equal(seen.Last) {
		return false, nil
	}
	if !f.Last.After(forgetBefore) {
		f.Count = 0
	}
	f.Count++
	f.Last = ts(at)
	s.m[key] = f
	return true, nil
}

// ClearLoginFailures forgets key.
func (s *LoginThrottleStore) ClearLoginFailures(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// PurgeLoginFailures forgets the keys whose last failure is not after before.
func (s *LoginThrottleStore) PurgeLoginFailures(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, f := range s.m {
		if !f.Last.After(before) {
			delete(s.m, k)
		}
	}
	return nil
}

// DeniedTokenStore keeps denied access-token ids in memory.
type DeniedTokenStore struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// NewDeniedTokenStore returns an empty DeniedTokenStore.
func NewDeniedTokenStore() *DeniedTokenStore { return &DeniedTokenStore{m: map[string]time.Time{}} }

// DenyTokens adds ts, keeping the later expiry of an id already there.
func (s *DeniedTokenStore) DenyTokens(_ context.Context, dts []access.DeniedToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range dts {
		if old, ok := s.m[d.ID]; !ok || d.ExpiresAt.After(old) {
			s.m[d.ID] = ts(d.ExpiresAt)
		}
	}
	return nil
}

// DeniedTokens lists the entries that expire after `after`.
func (s *DeniedTokenStore) DeniedTokens(_ context.Context, after time.Time) ([]access.DeniedToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []access.DeniedToken
	for id, exp := range s.m {
		if exp.After(after) {
			out = append(out, access.DeniedToken{ID: id, ExpiresAt: exp})
		}
	}
	return out, nil
}

// PurgeDeniedTokens deletes the entries that expire before `before`.
func (s *DeniedTokenStore) PurgeDeniedTokens(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, exp := range s.m {
		if exp.Before(before) {
			delete(s.m, id)
		}
	}
	return nil
}

// InvitationStore keeps registration invitations in memory.
type InvitationStore struct {
	mu     sync.Mutex
	m      map[string]access.Invitation
	byHash map[string]string
}

// NewInvitationStore returns an empty InvitationStore.
func NewInvitationStore() *InvitationStore {
	return &InvitationStore{m: map[string]access.Invitation{}, byHash: map[string]string{}}
}

func cloneInvitation(i access.Invitation) *access.Invitation {
	i.CreatedAt, i.ExpiresAt = ts(i.CreatedAt), ts(i.ExpiresAt)
	i.UsedAt, i.RevokedAt = tsPtr(i.UsedAt), tsPtr(i.RevokedAt)
	return &i
}

// CreateInvitation stores inv; an existing id or hash is ErrConflict.
func (s *InvitationStore) CreateInvitation(_ context.Context, inv *access.Invitation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[inv.ID]; ok {
		return fmt.Errorf("memory: create invitation %s: %w", inv.ID, ports.ErrConflict)
	}
	if _, ok := s.byHash[inv.Hash]; ok {
		return fmt.Errorf("memory: create invitation %s: hash taken: %w", inv.ID, ports.ErrConflict)
	}
	s.m[inv.ID] = *cloneInvitation(*inv)
	s.byHash[inv.Hash] = inv.ID
	return nil
}

// GetInvitationByHash returns the invitation with this token hash.
func (s *InvitationStore) GetInvitationByHash(_ context.Context, hash string) (*access.Invitation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byHash[hash]
	if !ok {
		return nil, fmt.Errorf("memory: get invitation: %w", ports.ErrNotFound)
	}
	return cloneInvitation(s.m[id]), nil
}

// UseInvitation marks the invitation used, if it is usable at `at`.
func (s *InvitationStore) UseInvitation(_ context.Context, id, userID string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.m[id]
	if !ok {
		return fmt.Errorf("memory: use invitation %s: %w", id, ports.ErrNotFound)
	}
	if inv.UsedAt != nil || inv.RevokedAt != nil || !at.Before(inv.ExpiresAt) {
		return fmt.Errorf("memory: use invitation %s: not usable: %w", id, ports.ErrConflict)
	}
	inv.UsedAt, inv.UsedBy = tsPtr(&at), userID
	s.m[id] = inv
	return nil
}

// unuse puts an invitation back as it was before UseInvitation (a unit of
// work's rollback).
func (s *InvitationStore) unuse(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inv, ok := s.m[id]; ok {
		inv.UsedAt, inv.UsedBy = nil, ""
		s.m[id] = inv
	}
}

// ListInvitations lists the organization's invitations, newest first.
func (s *InvitationStore) ListInvitations(_ context.Context, orgID string, p page.Request) (page.Result[*access.Invitation], error) {
	s.mu.Lock()
	var all []*access.Invitation
	for _, inv := range s.m {
		if inv.OrgID == orgID {
			all = append(all, cloneInvitation(inv))
		}
	}
	s.mu.Unlock()
	return listPage(all, p, func(i *access.Invitation) (time.Time, string) { return i.CreatedAt, i.ID }), nil
}

// RevokeInvitation revokes the organization's invitation.
func (s *InvitationStore) RevokeInvitation(_ context.Context, orgID, id string, at time.Time) (*access.Invitation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.m[id]
	if !ok || inv.OrgID != orgID {
		return nil, fmt.Errorf("memory: revoke invitation %s: %w", id, ports.ErrNotFound)
	}
	if inv.RevokedAt == nil {
		inv.RevokedAt = tsPtr(&at)
		s.m[id] = inv
	}
	return cloneInvitation(inv), nil
}

type txInvitations struct {
	*InvitationStore
	u *undoLog
}

func (t txInvitations) UseInvitation(ctx context.Context, id, userID string, at time.Time) error {
	if err := t.InvitationStore.UseInvitation(ctx, id, userID, at); err != nil {
		return err
	}
	t.u.add(func() { t.unuse(id) })
	return nil
}

func (t txInvitations) CreateInvitation(ctx context.Context, inv *access.Invitation) error {
	if err := t.InvitationStore.CreateInvitation(ctx, inv); err != nil {
		return err
	}
	id, hash := inv.ID, inv.Hash
	t.u.add(func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.m, id)
		delete(t.byHash, hash)
	})
	return nil
}

// WithInvitations makes the unit of work write the invitations s
// (Repos.Invitations).
func (w *UnitOfWork) WithInvitations(s *InvitationStore) *UnitOfWork {
	w.invitations = s
	return w
}
