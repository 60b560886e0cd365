package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.RefreshTokenStore = (*RefreshTokenStore)(nil)

// RefreshTokenStore keeps refresh tokens in memory. Hashes are unique.
type RefreshTokenStore struct {
	mu     sync.Mutex
	tokens map[string]access.RefreshToken
	byHash map[string]string // hash -> id
}

// NewRefreshTokenStore returns an empty RefreshTokenStore.
func NewRefreshTokenStore() *RefreshTokenStore {
	return &RefreshTokenStore{tokens: map[string]access.RefreshToken{}, byHash: map[string]string{}}
}

func cloneRefresh(t access.RefreshToken) access.RefreshToken {
	t.CreatedAt = ts(t.CreatedAt)
	t.ExpiresAt = ts(t.ExpiresAt)
	t.UsedAt = tsPtr(t.UsedAt)
	if !t.AccessExpiresAt.IsZero() {
		t.AccessExpiresAt = ts(t.AccessExpiresAt)
	}
	t.RevokedAt = tsPtr(t.RevokedAt)
	return t
}

// CreateRefreshToken stores t; an existing id or hash is ErrConflict.
func (s *RefreshTokenStore) CreateRefreshToken(_ context.Context, t *access.RefreshToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[t.ID]; ok {
		return fmt.Errorf("memory: create refresh token %s: %w", t.ID, ports.ErrConflict)
	}
	if _, ok := s.byHash[t.Hash]; ok {
		return fmt.Errorf("memory: create refresh token %s: hash taken: %w", t.ID, ports.ErrConflict)
	}
	s.tokens[t.ID] = cloneRefresh(*t)
	s.byHash[t.Hash] = t.ID
	return nil
}

// UseRefreshToken marks the token with this hash used at `at` (if it was not
// already) and returns it as it was before the call.
func (s *RefreshTokenStore) UseRefreshToken(_ context.Context, hash string, at time.Time) (*access.RefreshToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byHash[hash]
	if !ok {
		return nil, fmt.Errorf("memory: use refresh token: %w", ports.ErrNotFound)
	}
	old := s.tokens[id]
	out := cloneRefresh(old)
	if old.UsedAt == nil {
		c := cloneRefresh(old)
		c.UsedAt = tsPtr(&at)
		s.tokens[id] = c
	}
	return &out, nil
}

// RevokeFamily revokes every token of the family that is not revoked yet.
func (s *RefreshTokenStore) RevokeFamily(_ context.Context, familyID string, at time.Time) error {
	s.revoke(func(t *access.RefreshToken) bool { return t.FamilyID == familyID }, at)
	return nil
}

// RevokeUserTokens revokes every token of the user that is not revoked yet.
func (s *RefreshTokenStore) RevokeUserTokens(_ context.Context, userID string, at time.Time) error {
	s.revoke(func(t *access.RefreshToken) bool { return t.UserID == userID }, at)
	return nil
}

// revoke revokes the matching tokens that are not revoked yet and returns
// their ids (a unit of work undoes exactly those).
func (s *RefreshTokenStore) revoke(match func(*access.RefreshToken) bool, at time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, t := range s.tokens {
		if t.RevokedAt == nil && match(&t) {
			t.RevokedAt = tsPtr(&at)
			s.tokens[id] = t
			ids = append(ids, id)
		}
	}
	return ids
}

// FamilyAccessTokens returns the access tokens issued with the family's
// refresh tokens that expire after `after`.
func (s *RefreshTokenStore) FamilyAccessTokens(_ context.Context, familyID string, after time.Time) ([]access.DeniedToken, error) {
	return s.accessTokens(func(t *access.RefreshToken) bool { return t.FamilyID == familyID }, after), nil
}

// UserAccessTokens returns the user's access tokens that expire after
// `after`.
func (s *RefreshTokenStore) UserAccessTokens(_ context.Context, userID string, after time.Time) ([]access.DeniedToken, error) {
	return s.accessTokens(func(t *access.RefreshToken) bool { return t.UserID == userID }, after), nil
}

func (s *RefreshTokenStore) accessTokens(match func(*access.RefreshToken) bool, after time.Time) []access.DeniedToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []access.DeniedToken
	for _, t := range s.tokens {
		if t.AccessTokenID != "" && t.AccessExpiresAt.After(after) && match(&t) {
			out = append(out, access.DeniedToken{ID: t.AccessTokenID, ExpiresAt: t.AccessExpiresAt})
		}
	}
	return out
}
