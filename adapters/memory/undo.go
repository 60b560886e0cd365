package memory

import (
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// The unexported methods below are the inverse operations that a unit of
// work (uow.go) records for every write it makes, so that it can roll the
// write back. Each is as narrow as the write it undoes: it puts back what
// that write changed and leaves the rest of the object alone.

func (s *OrgStore) restoreOrg(prev access.Organization) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orgs[prev.ID] = cloneOrg(prev)
}

func (s *OrgStore) deleteOrg(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.orgs, id)
}

func (s *UserStore) deleteUser(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[id]; ok {
		if s.byEmail[emailKey(u.Email)] == id {
			delete(s.byEmail, emailKey(u.Email))
		}
		delete(s.users, id)
	}
}

// restoreUser puts prev back as the stored user, email index included.
func (s *UserStore) restoreUser(prev access.User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.users[prev.ID]; ok && s.byEmail[emailKey(cur.Email)] == prev.ID {
		delete(s.byEmail, emailKey(cur.Email))
	}
	s.users[prev.ID] = prev
	s.byEmail[emailKey(prev.Email)] = prev.ID
}

func (s *APIKeyStore) deleteKey(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, id)
}

func (s *APIKeyStore) restoreKey(prev access.APIKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[prev.ID] = cloneKey(prev)
}

// recordUsageUndoable is RecordUsage returning its inverse: the counts are
// taken off again, and a last-used time is put back only if no later use
// moved it since.
func (s *APIKeyStore) recordUsageUndoable(usage []ports.KeyUsage) (undo func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type before struct {
		count int64
		last  *time.Time
	}
	prev := map[string]before{}
	for _, u := range usage {
		if k, ok := s.keys[u.KeyID]; ok {
			b := prev[u.KeyID]
			if _, seen := prev[u.KeyID]; !seen {
				b.last = tsPtr(k.LastUsedAt)
			}
			b.count += u.Count
			prev[u.KeyID] = b
		}
	}
	s.recordUsageLocked(usage)
	after := map[string]*time.Time{}
	for id := range prev {
		after[id] = tsPtr(s.keys[id].LastUsedAt)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for id, b := range prev {
			k, ok := s.keys[id]
			if !ok {
				continue
			}
			k.UseCount -= b.count
			if sameTimePtr(k.LastUsedAt, after[id]) {
				k.LastUsedAt = b.last
			}
			s.keys[id] = k
		}
	}
}

func sameTimePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func (s *SchemaStore) restoreSchema(prev schema.Schema) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.schemas[prev.ID] = *cloneSchema(prev)
}

func (s *SchemaStore) deleteSchema(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.schemas, id)
}

func (s *RecordStore) deleteRecord(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, id)
}

func (s *RefreshTokenStore) deleteRefreshToken(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; ok {
		if s.byHash[t.Hash] == id {
			delete(s.byHash, t.Hash)
		}
		delete(s.tokens, id)
	}
}

// unuseRefreshToken clears the used mark that UseRefreshToken set.
func (s *RefreshTokenStore) unuseRefreshToken(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[id]; ok {
		t.UsedAt = nil
		s.tokens[id] = t
	}
}

// unrevoke clears the revocation of the tokens a revoke call revoked.
func (s *RefreshTokenStore) unrevoke(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if t, ok := s.tokens[id]; ok {
			t.RevokedAt = nil
			s.tokens[id] = t
		}
	}
}
