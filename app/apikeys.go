package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// NewKeyInput asks for an access key. A nil Role asks for a legacy user key.
type NewKeyInput struct {
	Name          string
	Role          *access.Role
	Scopes        []string
	ExpiresAt     *time.Time
	ExpiresInDays *int
}

// FlushUsage writes the batched key usage; the server calls it every few
// seconds and at shutdown, so that authentication never writes per request.
func (s *AccessService) FlushUsage(ctx context.Context) error {
	batch := s.usage.take()
	if len(batch) == 0 {
		return nil
	}
	if err := s.Keys.RecordUsage(ctx, batch); err != nil {
		s.usage.putBack(batch)
		return err
	}
	return nil
}

// usageBatch aggregates key uses in memory between flushes.
type usageBatch struct {
	mu sync.Mutex
	m  map[string]ports.KeyUsage
}

func (b *usageBatch) add(id string, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]ports.KeyUsage{}
	}
	u := b.m[id]
	u.KeyID = id
	u.Count++
	if at.After(u.LastAt) {
		u.LastAt = at
	}
	b.m[id] = u
}

func (b *usageBatch) take() []ports.KeyUsage {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ports.KeyUsage, 0, len(b.m))
	for _, u := range b.m {
		out = append(out, u)
	}
	b.m = nil
	return out
}

func (b *usageBatch) putBack(us []ports.KeyUsage) {
	for _, u := range us {
		b.mu.Lock()
		if b.m == nil {
			b.m = map[string]ports.KeyUsage{}
		}
		cur := b.m[u.KeyID]
		cur.KeyID = u.KeyID
		cur.Count += u.Count
		if u.LastAt.After(cur.LastAt) {
			cur.LastAt = u.LastAt
		}
		b.m[u.KeyID] = cur
		b.mu.Unlock()
	}
}

// CreateKey creates an access key and returns it with its only clear copy.
func (s *AccessService) CreateKey(ctx context.Context, p *access.Principal, in NewKeyInput) (*access.APIKey, string, error) {
	if err := access.Authorize(p, access.ActCreateKey); err != nil {
		return nil, "", err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > MaxKeyNameLen {
		return nil, "", Invalid("name", "name must be 1 to %d characters", MaxKeyNameLen)
	}
	scopes, err := access.ParseScopes(in.Scopes)
	if err != nil {
		return nil, "", Invalid("scopes", "%v", err)
	}
	now := s.Clock.Now()
	exp := in.ExpiresAt
	if in.ExpiresInDays != nil {
		if exp != nil {
			return nil, "", Invalid("expires_in_days", "give expires_at or expires_in_days, not both")
		}
		if *in.ExpiresInDays < 1 || *in.ExpiresInDays > MaxKeyExpiryDays {
			return nil, "", Invalid("expires_in_days", "expires_in_days must be between 1 and %d", MaxKeyExpiryDays)
		}
		t := now.Add(time.Duration(*in.ExpiresInDays) * 24 * time.Hour)
		exp = &t
	}
	if exp != nil && !exp.After(now) {
		return nil, "", Invalid("expires_at", "expires_at must be in the future")
	}
	k := &access.APIKey{ID: s.IDs.NewID(), OrgID: p.OrgID, CreatedBy: p.UserID, Name: name, Scopes: scopes, ExpiresAt: exp, CreatedAt: now}
	if in.Role == nil {
		if p.UserID == "" {
			return nil, "", Invalid("role", "a legacy user key (role null) needs a user session or user key, not an organization key")
		}
		k.Legacy = true
	} else {
		if !in.Role.Valid() {
			return nil, "", Invalid("role", "role must be owner, editor or operator")
		}
		if !p.SysAdmin && !p.Role.AtLeast(access.Owner) {
			return nil, "", coded(access.ErrForbidden, "forbidden", "creating an organization access key requires the owner role")
		}
		if !p.SysAdmin {
			if err := access.CheckKeyRole(p.Role, *in.Role); err != nil {
				return nil, "", coded(access.ErrForbidden, "forbidden", "a key cannot outrank its creator (%s)", p.Role)
			}
		}
		k.Role = *in.Role
	}
	clear, err := access.NewKey()
	if err != nil {
		return nil, "", err
	}
	k.Prefix, k.Hash, err = access.ParseKey(clear)
	if err != nil {
		return nil, "", fmt.Errorf("new key does not parse: %w", err)
	}
	if err := s.Keys.CreateKey(ctx, k); err != nil {
		return nil, "", err
	}
	s.Log.Info("access key created", "org_id", k.OrgID, "key_id", k.ID, "prefix", k.Prefix, "legacy", k.Legacy)
	return k, clear, nil
}

// ListKeys lists the organization's keys.
func (s *AccessService) ListKeys(ctx context.Context, p *access.Principal) ([]*access.APIKey, error) {
	if err := access.Authorize(p, access.ActListKeys); err != nil {
		return nil, err
	}
	return s.Keys.ListKeys(ctx, p.OrgID)
}

// SetKeyRole changes an organization key's role in place.
func (s *AccessService) SetKeyRole(ctx context.Context, p *access.Principal, id string, role access.Role) (*access.APIKey, error) {
	if err := access.Authorize(p, access.ActSetKeyRole); err != nil {
		return nil, err
	}
	if !role.Valid() {
		return nil, Invalid("role", "role must be owner, editor or operator")
	}
	k, err := s.Keys.UpdateKey(ctx, p.OrgID, id, func(k *access.APIKey) error {
		if k.Legacy {
			return Invalid("role", "a legacy user key inherits its user's role and has none of its own")
		}
		if k.RevokedAt != nil {
			return coded(ports.ErrConflict, "key_revoked", "the key is revoked")
		}
		k.Role = role
		return nil
	})
	if err == nil {
		s.keyChanged(ctx, k)
	}
	return k, err
}

// RevokeKey revokes a key for good. Revoking twice is not an error.
func (s *AccessService) RevokeKey(ctx context.Context, p *access.Principal, id string) error {
	if err := access.Authorize(p, access.ActRevokeKey); err != nil {
		return err
	}
	now := s.Clock.Now()
	k, err := s.Keys.UpdateKey(ctx, p.OrgID, id, func(k *access.APIKey) error {
		if k.RevokedAt == nil {
			k.RevokedAt = &now
		}
		return nil
	})
	if err == nil {
		s.keyChanged(ctx, k)
		s.Log.Info("access key revoked", "org_id", p.OrgID, "key_id", id)
	}
	return err
}
