package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

func newKey(orgID, prefix string, n int) *access.APIKey {
	id := newID("key")
	return &access.APIKey{ID: id, OrgID: orgID, CreatedBy: newID("usr"), Name: "key " + id, Role: access.Editor,
		Scopes: []access.Scope{access.ScopeRead}, Prefix: prefix, Hash: "sha256-" + id, CreatedAt: at(n)}
}

func checkKey(t *testing.T, got, want *access.APIKey) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.CreatedBy, want.CreatedBy)
	is.Equal(got.Legacy, want.Legacy)
	is.Equal(got.Name, want.Name)
	is.Equal(got.Role, want.Role)
	is.Equal(len(got.Scopes), len(want.Scopes))
	if len(got.Scopes) == len(want.Scopes) && len(want.Scopes) > 0 {
		is.Equal(got.Scopes, want.Scopes)
	}
	is.Equal(got.Prefix, want.Prefix)
	is.Equal(got.Hash, want.Hash)
	sameTimePtr(t, "ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	sameTimePtr(t, "RevokedAt", got.RevokedAt, want.RevokedAt)
	sameTimePtr(t, "LastUsedAt", got.LastUsedAt, want.LastUsedAt)
	is.Equal(got.UseCount, want.UseCount)
}

func keyIDs(ks []*access.APIKey) []string {
	var ids []string
	for _, k := range ks {
		ids = append(ids, k.ID)
	}
	return ids
}

// RunAPIKeyStore runs the APIKeyStore contract against the stores newStore
// returns.
func RunAPIKeyStore(t *testing.T, newStore func(t *testing.T) ports.APIKeyStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.APIKeyStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.APIKeyStore) {
			for _, k := range []*access.APIKey{
				{ID: newID("key"), OrgID: newID("org"), CreatedBy: newID("usr"), Name: "full", Role: access.Owner,
					Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}, Prefix: newID("ent")[:12], Hash: "h1",
					ExpiresAt: atPtr(3600), CreatedAt: at(0), RevokedAt: atPtr(60), LastUsedAt: atPtr(30), UseCount: 42},
				{ID: newID("key"), OrgID: newID("org"), CreatedBy: newID("usr"), Legacy: true, Name: "legacy, no role",
					Scopes: []access.Scope{access.ScopeRead}, Prefix: newID("ent")[:12], Hash: "h2", CreatedAt: at(1)},
				{ID: newID("key"), OrgID: newID("org"), Name: "no scopes, no creator", Role: access.Operator,
					Prefix: newID("ent")[:12], Hash: "h3", CreatedAt: at(2)},
			} {
				t.Run(k.Name, func(t *testing.T) {
					is := is.New(t)
					want := *k
					want.Scopes = append([]access.Scope(nil), k.Scopes...)
					is.NoErr(s.CreateKey(ctx, k))
					if len(k.Scopes) > 0 {
						k.Scopes[0] = "mutated" // the store keeps its own copy
					}
					got, err := s.GetKey(ctx, k.OrgID, k.ID)
					is.NoErr(err)
					checkKey(t, got, &want)
				})
			}
		}},
		{"unknown id and another organization's key are not found", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			k := newKey(newID("org"), newID("ent")[:12], 0)
			is.NoErr(s.CreateKey(ctx, k))
			_, err := s.GetKey(ctx, k.OrgID, newID("key"))
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.GetKey(ctx, newID("org"), k.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			k := newKey(newID("org"), newID("ent")[:12], 0)
			is.NoErr(s.CreateKey(ctx, k))
			dup := newKey(k.OrgID, k.Prefix, 1)
			dup.ID = k.ID
			is.True(errors.Is(s.CreateKey(ctx, dup), ports.ErrConflict))
		}},
		{"find by prefix returns every match, revoked or not, in any organization", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			prefix := newID("ent")[:12]
			k1, k2, k3 := newKey(newID("org"), prefix, 2), newKey(newID("org"), prefix, 1), newKey(newID("org"), prefix, 3)
			k3.RevokedAt = atPtr(4)
			for _, k := range []*access.APIKey{k1, k2, k3, newKey(k1.OrgID, newID("ent")[:12], 0)} {
				is.NoErr(s.CreateKey(ctx, k))
			}
			got, err := s.FindKeysByPrefix(ctx, prefix)
			is.NoErr(err)
			is.Equal(keyIDs(got), []string{k2.ID, k1.ID, k3.ID}) // oldest first
			checkKey(t, got[2], k3)
			none, err := s.FindKeysByPrefix(ctx, newID("ent")[:12])
			is.NoErr(err)
			is.Equal(len(none), 0)
		}},
		{"list holds one organization's keys, oldest first", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			org := newID("org")
			k1, k2 := newKey(org, newID("ent")[:12], 5), newKey(org, newID("ent")[:12], 4)
			for _, k := range []*access.APIKey{k1, k2, newKey(newID("org"), newID("ent")[:12], 0)} {
				is.NoErr(s.CreateKey(ctx, k))
			}
			got, err := s.ListKeys(ctx, org)
			is.NoErr(err)
			is.Equal(keyIDs(got), []string{k2.ID, k1.ID})
			checkKey(t, got[0], k2)
		}},
		{"update writes when fn returns nil", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			k := newKey(newID("org"), newID("ent")[:12], 0)
			is.NoErr(s.CreateKey(ctx, k))
			got, err := s.UpdateKey(ctx, k.OrgID, k.ID, func(k *access.APIKey) error {
				k.Role, k.RevokedAt, k.ExpiresAt = access.Operator, atPtr(10), atPtr(20)
				return nil
			})
			is.NoErr(err)
			want := *k
			want.Role, want.RevokedAt, want.ExpiresAt = access.Operator, atPtr(10), atPtr(20)
			checkKey(t, got, &want)
			stored, err := s.GetKey(ctx, k.OrgID, k.ID)
			is.NoErr(err)
			checkKey(t, stored, &want)
		}},
		{"update returns fn's error and writes nothing", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			k := newKey(newID("org"), newID("ent")[:12], 0)
			is.NoErr(s.CreateKey(ctx, k))
			got, err := s.UpdateKey(ctx, k.OrgID, k.ID, func(k *access.APIKey) error {
				k.RevokedAt = atPtr(10)
				return errBoom
			})
			is.True(errors.Is(err, errBoom))
			is.Equal(got, nil)
			stored, err := s.GetKey(ctx, k.OrgID, k.ID)
			is.NoErr(err)
			is.Equal(stored.RevokedAt, nil)
		}},
		{"update of another organization's key is not found", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			k := newKey(newID("org"), newID("ent")[:12], 0)
			is.NoErr(s.CreateKey(ctx, k))
			called := false
			_, err := s.UpdateKey(ctx, newID("org"), k.ID, func(*access.APIKey) error { called = true; return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
			is.True(!called)
		}},
		{"record usage accumulates counts and moves last use forward only", func(t *testing.T, s ports.APIKeyStore) {
			is := is.New(t)
			org := newID("org")
			k1, k2, idle := newKey(org, newID("ent")[:12], 0), newKey(org, newID("ent")[:12], 0), newKey(org, newID("ent")[:12], 0)
			k2.UseCount, k2.LastUsedAt = 10, atPtr(100)
			for _, k := range []*access.APIKey{k1, k2, idle} {
				is.NoErr(s.CreateKey(ctx, k))
			}
			type want struct {
				count int64
				last  time.Time
			}
			steps := []struct {
				name  string
				usage []ports.KeyUsage
				want  map[string]want
			}{
				{"first batch",
					[]ports.KeyUsage{{KeyID: k1.ID, Count: 2, LastAt: at(50)}, {KeyID: k2.ID, Count: 5, LastAt: at(90)}},
					map[string]want{k1.ID: {2, at(50)}, k2.ID: {15, at(100)}}},
				{"an older use does not move the last use back",
					[]ports.KeyUsage{{KeyID: k1.ID, Count: 3, LastAt: at(40)}},
					map[string]want{k1.ID: {5, at(50)}, k2.ID: {15, at(100)}}},
				{"one key twice in a batch, and an unknown key",
					[]ports.KeyUsage{{KeyID: k1.ID, Count: 1, LastAt: at(70)}, {KeyID: newID("key"), Count: 9, LastAt: at(80)},
						{KeyID: k1.ID, Count: 1, LastAt: at(60)}, {KeyID: k2.ID, Count: 1, LastAt: at(110)}},
					map[string]want{k1.ID: {7, at(70)}, k2.ID: {16, at(110)}}},
				{"empty batch", nil,
					map[string]want{k1.ID: {7, at(70)}, k2.ID: {16, at(110)}}},
			}
			for _, st := range steps {
				if err := s.RecordUsage(ctx, st.usage); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				for id, w := range st.want {
					k, err := s.GetKey(ctx, org, id)
					is.NoErr(err)
					if k.UseCount != w.count {
						t.Errorf("%s: key %s: UseCount = %d, want %d", st.name, id, k.UseCount, w.count)
					}
					if k.LastUsedAt == nil || !k.LastUsedAt.Equal(w.last) {
						t.Errorf("%s: key %s: LastUsedAt = %v, want %v", st.name, id, k.LastUsedAt, w.last)
					}
				}
			}
			got, err := s.GetKey(ctx, org, idle.ID)
			is.NoErr(err)
			is.Equal(got.UseCount, int64(0))
			is.Equal(got.LastUsedAt, nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}
