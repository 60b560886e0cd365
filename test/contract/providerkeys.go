package contract

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// newProviderKey returns an enabled, unchecked key of org ("" for global)
// and provider, created at second n.
func newProviderKey(org, provider string, n int) *rotation.Key {
	return &rotation.Key{ID: newID("pk"), OrgID: org, Provider: provider, Name: "key", Suffix: "wxyz",
		Sealed: []byte("sealed-" + newID("s")), Enabled: true, Health: rotation.Unchecked, CreatedAt: at(n)}
}

func checkProviderKey(t *testing.T, got, want *rotation.Key) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Provider, want.Provider)
	is.Equal(got.Name, want.Name)
	is.Equal(got.Suffix, want.Suffix)
	is.Equal(string(got.Sealed), string(want.Sealed))
	is.Equal(got.Version, want.Version)
	is.Equal(got.Enabled, want.Enabled)
	is.Equal(got.Health, want.Health)
	is.Equal(got.Uses, want.Uses)
	sameTimePtr(t, "CheckedAt", got.CheckedAt, want.CheckedAt)
	sameTimePtr(t, "ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	sameTimePtr(t, "RestUntil", got.RestUntil, want.RestUntil)
	sameTimePtr(t, "LastUsedAt", got.LastUsedAt, want.LastUsedAt)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
}

func providerKeyIDs(ks []*rotation.Key) []string {
	var ids []string
	for _, k := range ks {
		ids = append(ids, k.ID)
	}
	return ids
}

// RunProviderKeyStore runs the ProviderKeyStore contract against the stores
// newStore returns. Global keys are shared by every case of a database, so
// each case uses providers of its own. The race of concurrent picks is
// RunProviderKeyStoreConcurrency.
func RunProviderKeyStore(t *testing.T, newStore func(t *testing.T) ports.ProviderKeyStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.ProviderKeyStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.ProviderKeyStore) {
			for _, k := range []*rotation.Key{
				{ID: newID("pk"), OrgID: newID("org"), Provider: newID("p"), Name: "full", Suffix: "1234", Sealed: []byte{0, 1, 2, 255},
					Version: 7, Enabled: true, Health: rotation.Valid, CheckedAt: atPtr(5), ExpiresAt: atPtr(3600), RestUntil: atPtr(60),
					LastUsedAt: atPtr(30), Uses: 42, CreatedAt: at(0)},
				{ID: newID("pk"), Provider: newID("p"), Name: "global, disabled, invalid", Sealed: []byte("x"),
					Health: rotation.Invalid, CreatedAt: at(1)},
			} {
				t.Run(k.Name, func(t *testing.T) {
					is := is.New(t)
					want := *k
					want.Sealed = append([]byte(nil), k.Sealed...)
					is.NoErr(s.CreateProviderKey(ctx, k))
					k.Sealed[0] = 'm' // the store keeps its own copy
					got, err := s.GetProviderKey(ctx, k.OrgID, k.ID)
					is.NoErr(err)
					checkProviderKey(t, got, &want)
				})
			}
		}},
		{"unknown id, another organization's key and a global key by organization are not found", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			k := newProviderKey(newID("org"), newID("p"), 0)
			g := newProviderKey("", newID("p"), 0)
			is.NoErr(s.CreateProviderKey(ctx, k))
			is.NoErr(s.CreateProviderKey(ctx, g))
			for _, c := range []struct{ org, id string }{{k.OrgID, newID("pk")}, {newID("org"), k.ID}, {"", k.ID}, {k.OrgID, g.ID}} {
				_, err := s.GetProviderKey(ctx, c.org, c.id)
				is.True(errors.Is(err, ports.ErrNotFound))
				_, err = s.UpdateProviderKey(ctx, c.org, c.id, func(*rotation.Key) error { return nil })
				is.True(errors.Is(err, ports.ErrNotFound))
			}
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			k := newProviderKey(newID("org"), newID("p"), 0)
			is.NoErr(s.CreateProviderKey(ctx, k))
			dup := newProviderKey(newID("org"), k.Provider, 1)
			dup.ID = k.ID
			is.True(errors.Is(s.CreateProviderKey(ctx, dup), ports.ErrConflict))
		}},
		{"list is the organization's keys by provider, oldest first", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			org := newID("org")
			pa, pb := "a"+newID("p"), "b"+newID("p")
			k1, k2, k3 := newProviderKey(org, pb, 1), newProviderKey(org, pa, 2), newProviderKey(org, pa, 1)
			for _, k := range []*rotation.Key{k1, k2, k3, newProviderKey(newID("org"), pa, 0), newProviderKey("", pa, 0)} {
				is.NoErr(s.CreateProviderKey(ctx, k))
			}
			got, err := s.ListProviderKeys(ctx, org)
			is.NoErr(err)
			is.Equal(providerKeyIDs(got), []string{k3.ID, k2.ID, k1.ID})
			got, err = s.ListProviderKeys(ctx, newID("org"))
			is.NoErr(err)
			is.Equal(len(got), 0)
		}},
		{"list of global keys holds no organization's key", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			g := newProviderKey("", newID("p"), 0)
			is.NoErr(s.CreateProviderKey(ctx, g))
			is.NoErr(s.CreateProviderKey(ctx, newProviderKey(newID("org"), g.Provider, 0)))
			got, err := s.ListProviderKeys(ctx, "")
			is.NoErr(err)
			found := false
			for _, k := range got {
				is.Equal(k.OrgID, "")
				found = found || k.ID == g.ID
			}
			is.True(found)
		}},
		{"all keys holds every organization's and the global keys, by id", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			p := newID("p")
			mine := []*rotation.Key{newProviderKey(newID("org"), p, 0), newProviderKey(newID("org"), p, 1), newProviderKey("", p, 2)}
			for _, k := range mine {
				is.NoErr(s.CreateProviderKey(ctx, k))
			}
			all, err := s.AllProviderKeys(ctx)
			is.NoErr(err)
			is.True(sort.SliceIsSorted(all, func(i, j int) bool { return all[i].ID < all[j].ID }))
			found := 0
			for _, k := range all {
				for _, m := range mine {
					if k.ID == m.ID {
						found++
						checkProviderKey(t, k, m)
					}
				}
			}
			is.Equal(found, len(mine))
		}},
		{"update stores what fn made; identity does not change", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			k := newProviderKey(newID("org"), newID("p"), 0)
			is.NoErr(s.CreateProviderKey(ctx, k))
			got, err := s.UpdateProviderKey(ctx, k.OrgID, k.ID, func(c *rotation.Key) error {
				c.Name = "renamed"
				c.Replace([]byte("new sealed"), "9876")
				c.Tested(false, at(9))
				c.ExpiresAt = atPtr(100)
				c.ID, c.OrgID, c.Provider, c.CreatedAt = "other", "other", "other", at(50)
				return nil
			})
			is.NoErr(err)
			want := *k
			want.Name, want.Sealed, want.Suffix, want.Health, want.CheckedAt, want.ExpiresAt = "renamed", []byte("new sealed"), "9876", rotation.Invalid, atPtr(9), atPtr(100)
			want.Version = k.Version + 2
			checkProviderKey(t, got, &want)
			again, err := s.GetProviderKey(ctx, k.OrgID, k.ID)
			is.NoErr(err)
			checkProviderKey(t, again, &want)
		}},
		{"update passes fn's error through and writes nothing", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			k := newProviderKey("", newID("p"), 0)
			is.NoErr(s.CreateProviderKey(ctx, k))
			_, err := s.UpdateProviderKey(ctx, "", k.ID, func(c *rotation.Key) error {
				c.Name = "changed"
				return errBoom
			})
			is.Equal(err, errBoom)
			got, err := s.GetProviderKey(ctx, "", k.ID)
			is.NoErr(err)
			checkProviderKey(t, got, k)
		}},
		{"delete finds only the organization's own key, and never reaches another organization", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			k := newProviderKey(newID("org"), newID("p"), 0)
			g := newProviderKey("", k.Provider, 0)
			is.NoErr(s.CreateProviderKey(ctx, k))
			is.NoErr(s.CreateProviderKey(ctx, g))
			notFound := func(err error) { t.Helper(); is.True(errors.Is(err, ports.ErrNotFound)) }
			notFound(s.DeleteProviderKey(ctx, newID("org"), k.ID))  // another organization's
			notFound(s.DeleteProviderKey(ctx, k.OrgID, g.ID))       // a global key through an organization
			notFound(s.DeleteProviderKey(ctx, "", k.ID))            // an organization's key as a global one
			notFound(s.DeleteProviderKey(ctx, k.OrgID, newID("k"))) // none
			_, err := s.GetProviderKey(ctx, k.OrgID, k.ID)
			is.NoErr(err)
			_, err = s.GetProviderKey(ctx, "", g.ID)
			is.NoErr(err)
			is.NoErr(s.DeleteProviderKey(ctx, k.OrgID, k.ID))
			notFound(s.DeleteProviderKey(ctx, k.OrgID, k.ID)) // deleted for good
			_, err = s.GetProviderKey(ctx, k.OrgID, k.ID)
			notFound(err)
			is.NoErr(s.DeleteProviderKey(ctx, "", g.ID))
			_, err = s.GetProviderKey(ctx, "", g.ID)
			notFound(err)
		}},
		{"pick takes the least recently used organization key and records its use", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			org, p := newID("org"), newID("p")
			a, b, c := newProviderKey(org, p, 0), newProviderKey(org, p, 1), newProviderKey(org, p, 2)
			a.LastUsedAt, b.LastUsedAt = atPtr(10), atPtr(5)
			bad := newProviderKey(org, p, 0)
			bad.Health = rotation.Invalid
			for _, k := range []*rotation.Key{a, b, c, bad, newProviderKey("", p, 0), newProviderKey(newID("org"), p, 0)} {
				is.NoErr(s.CreateProviderKey(ctx, k))
			}
			var got []string
			for i := range 4 {
				pk, err := s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(100 + i)})
				is.NoErr(err)
				is.Equal(pk.Source, rotation.Organization)
				sameTimePtr(t, "LastUsedAt", pk.Key.LastUsedAt, atPtr(100+i))
				got = append(got, pk.Key.ID)
			}
			is.Equal(got, []string{c.ID, b.ID, a.ID, c.ID})
			stored, err := s.GetProviderKey(ctx, org, c.ID)
			is.NoErr(err)
			is.Equal(stored.Uses, int64(2))
			sameTimePtr(t, "LastUsedAt", stored.LastUsedAt, atPtr(103))
			is.Equal(string(stored.Sealed), string(c.Sealed))
		}},
		{"pick falls back to global keys, then fails naming the provider", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			org, p := newID("org"), newID("p")
			own := newProviderKey(org, p, 0)
			own.Enabled = false
			g1, g2 := newProviderKey("", p, 0), newProviderKey("", p, 1)
			for _, k := range []*rotation.Key{own, g1, g2} {
				is.NoErr(s.CreateProviderKey(ctx, k))
			}
			pk, err := s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(10)})
			is.NoErr(err)
			is.Equal(pk.Key.ID, g1.ID)
			is.Equal(pk.Source, rotation.Global)
			pk, err = s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(11), Exclude: []string{g2.ID}})
			is.NoErr(err)
			is.Equal(pk.Key.ID, g1.ID)
			_, err = s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(12), Exclude: []string{g1.ID, g2.ID}})
			var nu *rotation.NoUsableKeyError
			is.True(errors.As(err, &nu))
			is.Equal(nu.Provider, p)
			_, err = s.PickProviderKey(ctx, org, rotation.Request{Provider: newID("p"), Now: at(12)})
			is.True(errors.Is(err, rotation.ErrNoUsableKey))
		}},
		{"pick keeps the sticky key", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			org, p := newID("org"), newID("p")
			a, b := newProviderKey(org, p, 0), newProviderKey(org, p, 1)
			is.NoErr(s.CreateProviderKey(ctx, a))
			is.NoErr(s.CreateProviderKey(ctx, b))
			for i := range 3 {
				pk, err := s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(10 + i), Sticky: b.ID})
				is.NoErr(err)
				is.Equal(pk.Key.ID, b.ID)
			}
			_, err := s.UpdateProviderKey(ctx, org, b.ID, func(k *rotation.Key) error { k.Refused(); return nil })
			is.NoErr(err)
			pk, err := s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(20), Sticky: b.ID})
			is.NoErr(err)
			is.Equal(pk.Key.ID, a.ID)
		}},
		{"pick skips expired and resting keys", func(t *testing.T, s ports.ProviderKeyStore) {
			is := is.New(t)
			org, p := newID("org"), newID("p")
			exp, rest, ok := newProviderKey(org, p, 0), newProviderKey(org, p, 1), newProviderKey(org, p, 2)
			exp.ExpiresAt, rest.RestUntil = atPtr(5), atPtr(50)
			ok.LastUsedAt = atPtr(9)
			for _, k := range []*rotation.Key{exp, rest, ok} {
				is.NoErr(s.CreateProviderKey(ctx, k))
			}
			pk, err := s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(10)})
			is.NoErr(err)
			is.Equal(pk.Key.ID, ok.ID)
			pk, err = s.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: at(60)})
			is.NoErr(err)
			is.Equal(pk.Key.ID, rest.ID) // its rest is over, and it was never used
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// RunProviderKeyStoreConcurrency races pickers on the stores newStores
// returns (views of one database, such as two connection pools): with as
// many keys as pickers and every key idle, no two pickers take the same key.
func RunProviderKeyStoreConcurrency(t *testing.T, newStores func(t *testing.T) []ports.ProviderKeyStore) {
	ctx := context.Background()
	for _, global := range []bool{false, true} {
		name := "organization keys"
		if global {
			name = "global keys"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			stores := newStores(t)
			org, p := newID("org"), newID("p")
			const n = 16
			var want []string
			for i := range n {
				owner := org
				if global {
					owner = ""
				}
				k := newProviderKey(owner, p, i)
				is.NoErr(stores[0].CreateProviderKey(ctx, k))
				want = append(want, k.ID)
			}
			now := time.Now().UTC()
			var mu sync.Mutex
			var got []string
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					pk, err := stores[i%len(stores)].PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: now})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					got = append(got, pk.Key.ID)
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			sort.Strings(got)
			sort.Strings(want)
			is.Equal(got, want) // every key exactly once
		})
	}
	t.Run("a key another instance takes out of rotation is not picked", func(t *testing.T) {
		// The first instance has just read the candidates (a store may
		// keep them briefly); the second disables one key, refuses another
		// and sets a third's expiry in the past (a change that leaves its
		// version alone); the first's next picks return none of them.
		is := is.New(t)
		stores := newStores(t)
		a, b := stores[0], stores[len(stores)-1]
		org, p := newID("org"), newID("p")
		var keys []*rotation.Key
		for i := range 4 {
			k := newProviderKey(org, p, i)
			is.NoErr(a.CreateProviderKey(ctx, k))
			keys = append(keys, k)
		}
		_, err := a.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: time.Now().UTC()})
		is.NoErr(err)
		_, err = b.UpdateProviderKey(ctx, org, keys[1].ID, func(k *rotation.Key) error { k.SetEnabled(false); return nil })
		is.NoErr(err)
		_, err = b.UpdateProviderKey(ctx, org, keys[2].ID, func(k *rotation.Key) error { k.Refused(); return nil })
		is.NoErr(err)
		past := time.Now().UTC().Add(-time.Minute)
		_, err = b.UpdateProviderKey(ctx, org, keys[3].ID, func(k *rotation.Key) error { k.ExpiresAt = &past; return nil })
		is.NoErr(err)
		for range 4 {
			pk, err := a.PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: time.Now().UTC()})
			is.NoErr(err)
			is.Equal(pk.Key.ID, keys[0].ID) // the only key left in rotation
		}
	})
	t.Run("more pickers than keys share them", func(t *testing.T) {
		is := is.New(t)
		stores := newStores(t)
		org, p := newID("org"), newID("p")
		var keys []*rotation.Key
		for i := range 3 {
			k := newProviderKey(org, p, i)
			is.NoErr(stores[0].CreateProviderKey(ctx, k))
			keys = append(keys, k)
		}
		const n = 24
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := stores[i%len(stores)].PickProviderKey(ctx, org, rotation.Request{Provider: p, Now: time.Now().UTC()}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		var uses int64
		for _, k := range keys {
			got, err := stores[0].GetProviderKey(ctx, org, k.ID)
			is.NoErr(err)
			is.True(got.Uses >= 1) // idle keys are taken before busy ones are shared
			uses += got.Uses
		}
		is.Equal(uses, int64(n))
	})
}
