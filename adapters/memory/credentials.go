package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// CredentialStore is ports.CredentialStore beside a SyncStore, whose
// registrations it checks.
type CredentialStore struct {
	sync *SyncStore

	mu     sync.Mutex
	creds  []*dbsync.Credential // oldest first
	tokens map[string][]access.DeniedToken
}

var _ ports.CredentialStore = (*CredentialStore)(nil)

// NewCredentialStore returns an empty store over s's registrations.
func NewCredentialStore(s *SyncStore) *CredentialStore {
	return &CredentialStore{sync: s, tokens: map[string][]access.DeniedToken{}}
}

// database returns the registration's name, ErrNotFound when it is not
// the organization's ("" orgID: any organization's).
func (s *CredentialStore) database(orgID, id string) (string, error) {
	s.sync.mu.Lock()
	defer s.sync.mu.Unlock()
	d, ok := s.sync.databases[id]
	if !ok || (orgID != "" && d.OrgID != orgID) {
		return "", fmt.Errorf("memory: database %s: %w", id, ports.ErrNotFound)
	}
	return d.Name, nil
}

func cloneCredential(c *dbsync.Credential) *dbsync.Credential {
	out := *c
	if c.RevokedAt != nil {
		t := *c.RevokedAt
		out.RevokedAt = &t
	}
	if c.LastSeenAt != nil {
		t := *c.LastSeenAt
		out.LastSeenAt = &t
	}
	if c.LastApplyDeltaID != nil {
		n := *c.LastApplyDeltaID
		out.LastApplyDeltaID = &n
	}
	return &out
}

// active returns the registration's active credential (nil: none).
func (s *CredentialStore) active(databaseID string) *dbsync.Credential {
	for _, c := range s.creds {
		if c.DatabaseID == databaseID && c.RevokedAt == nil {
			return c
		}
	}
	return nil
}

func (s *CredentialStore) CreateCredential(_ context.Context, c *dbsync.Credential) (*dbsync.Credential, error) {
	name, err := s.database(c.OrgID, c.DatabaseID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.creds {
		if o.Hash == c.Hash || o.ID == c.ID {
			return nil, fmt.Errorf("memory: credential %s: %w", c.ID, ports.ErrConflict)
		}
	}
	var replaced *dbsync.Credential
	if old := s.active(c.DatabaseID); old != nil {
		at := ts(c.CreatedAt)
		old.RevokedAt, old.UpdatedAt = &at, at
		replaced = cloneCredential(old)
	}
	n := cloneCredential(c)
	n.CreatedAt, n.UpdatedAt, n.DatabaseName = ts(c.CreatedAt), ts(c.UpdatedAt), name
	s.creds = append(s.creds, n)
	c.DatabaseName = name
	return replaced, nil
}

func (s *CredentialStore) LatestCredential(_ context.Context, orgID, databaseID string) (*dbsync.Credential, error) {
	if _, err := s.database(orgID, databaseID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.creds) - 1; i >= 0; i-- {
		if s.creds[i].DatabaseID == databaseID {
			return cloneCredential(s.creds[i]), nil
		}
	}
	return nil, nil
}

func (s *CredentialStore) RevokeCredential(_ context.Context, orgID, databaseID string, at time.Time) (*dbsync.Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.active(databaseID)
	if c == nil || c.OrgID != orgID {
		return nil, fmt.Errorf("memory: active credential of database %s: %w", databaseID, ports.ErrNotFound)
	}
	at = ts(at)
	c.RevokedAt, c.UpdatedAt = &at, at
	return cloneCredential(c), nil
}

func (s *CredentialStore) ExchangeCredential(_ context.Context, hash string, seen dbsync.Seen, tok access.DeniedToken) (*dbsync.Credential, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.creds {
		if c.RevokedAt != nil || !access.HashesEqual(c.Hash, hash) {
			continue
		}
		name, err := s.database("", c.DatabaseID)
		if err != nil {
			return nil, err
		}
		noteSeen(c, seen)
		tok.ExpiresAt = ts(tok.ExpiresAt)
		s.tokens[c.ID] = append(s.tokens[c.ID], tok)
		out := cloneCredential(c)
		out.DatabaseName = name
		return out, nil
	}
	return nil, fmt.Errorf("memory: credential: %w", ports.ErrNotFound)
}

func noteSeen(c *dbsync.Credential, seen dbsync.Seen) {
	at := ts(seen.At)
	c.LastSeenAt, c.LastSeenIP, c.LastSeenUserAgent, c.UpdatedAt = &at, seen.IP, seen.UserAgent, at
}

func (s *CredentialStore) CredentialTokens(_ context.Context, id string, after time.Time) ([]access.DeniedToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []access.DeniedToken
	for _, t := range s.tokens[id] {
		if t.ExpiresAt.After(after) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *CredentialStore) NoteCredentialSeen(_ context.Context, id string, seen dbsync.Seen) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.creds {
		if c.ID == id && c.RevokedAt == nil {
			noteSeen(c, seen)
		}
	}
	return nil
}

func (s *CredentialStore) NoteCredentialApplied(_ context.Context, databaseID string, upTo int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.active(databaseID); c != nil && (c.LastApplyDeltaID == nil || *c.LastApplyDeltaID < upTo) {
		c.LastApplyDeltaID = &upTo
	}
	return nil
}
