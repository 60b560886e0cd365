package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

// TestProviderKeyStore runs the provider-key contract on both backends (the
// SQL rotation order held to rotation.Ranked among it), and the race of
// picks across two connection pools (two replicas) on native PostgreSQL.
func TestProviderKeyStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			db := migrated(t, dsn)
			contract.RunProviderKeyStore(t, func(*testing.T) ports.ProviderKeyStore { return cachedKeys(db) })
			t.Run("rotation", func(t *testing.T) {
				contract.RunProviderKeyRotation(t, func(*testing.T) ports.ProviderKeyStore { return cachedKeys(db) })
			})
			if b.parallel {
				other := open(t, dsn)
				contract.RunProviderKeyStoreConcurrency(t, func(*testing.T) []ports.ProviderKeyStore {
					return []ports.ProviderKeyStore{cachedKeys(db), cachedKeys(other)}
				})
			}
		})
	}
}

// cachedKeys is the store as the service builds it: batches of picks
// reuse the candidates they read (the service's default TTL).
func cachedKeys(db *postgres.DB) *postgres.ProviderKeyStore {
	return postgres.NewProviderKeyStore(db, postgres.WithCandidateCache(500*time.Millisecond, 100, system.Clock{}))
}

func TestUsageLedger(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunUsageLedger(t, func(*testing.T) ports.UsageLedger { return postgres.NewUsageLedger(db) })
		})
	}
}

// TestPickCommitIsLazyAlone shows why a pick may commit without waiting for
// the WAL flush (synchronous_commit off, for the pick's own transaction):
// the pick writes nothing but the key's last use and use count, so a crash
// of the database that loses it leaves the key as it was before the pick,
// from which rotation goes on (the key is used again a little sooner, and
// its total_requests counts one pick fewer). The setting stays with the
// pick: the connection goes back to the pool with the server's own, so the
// writes a crash must not lose (jobs, events, usage rows) still wait for
// the flush.
func TestPickCommitIsLazyAlone(t *testing.T) {
	ctx := context.Background()
	is := is.New(t)
	dsn := pgtest.Native(t)
	migrated(t, dsn)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db := open(t, dsn+sep+"pool_max_conns=1") // every statement, SHOW too, on one connection
	db.DB.DB.SetMaxIdleConns(0)               // database/sql hands it back to the pool after each use
	setting := func() string {
		var v string
		is.NoErr(db.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v))
		return v
	}
	is.Equal(setting(), "on")

	s := postgres.NewProviderKeyStore(db)
	now := time.Now().UTC().Truncate(time.Second)
	org, p := "org-lazy", "p-lazy"
	var keys []*rotation.Key
	for i := range 2 {
		k := &rotation.Key{ID: fmt.Sprintf("pk-lazy-%d", i), OrgID: org, Provider: p, Name: "k", Suffix: "abcd",
			Sealed: []byte("sealed"), Version: 3, Enabled: true, Health: rotation.Valid, CreatedAt: now.Add(time.Duration(i) * time.Second)}
		is.NoErr(s.CreateProviderKey(ctx, k))
		keys = append(keys, k)
	}
	a, b := keys[0], keys[1]
	pick := func(req rotation.Request) *rotation.Key {
		t.Helper()
		pk, err := s.PickProviderKey(ctx, org, req)
		is.NoErr(err)
		is.Equal(setting(), "on") // the pick's setting ended with its transaction
		return pk.Key
	}

	// A combined pick (no sticky key) and a single one (sticky) write only
	// the last use and the count.
	got := pick(rotation.Request{Provider: p, Now: now.Add(time.Minute)})
	is.Equal(got.ID, a.ID)
	got = pick(rotation.Request{Provider: p, Now: now.Add(2 * time.Minute), Sticky: b.ID})
	is.Equal(got.ID, b.ID)
	for _, k := range keys {
		stored, err := s.GetProviderKey(ctx, org, k.ID)
		is.NoErr(err)
		is.Equal(stored.Uses, int64(1))
		is.Equal(stored.Version, k.Version)
		is.Equal(stored.Enabled, k.Enabled)
		is.Equal(stored.Health, k.Health)
		is.Equal(stored.RestUntil, k.RestUntil)
		is.Equal(stored.ExpiresAt, k.ExpiresAt)
		is.Equal(string(stored.Sealed), string(k.Sealed))
	}

	// A crash loses b's pick: b is as it was before it.
	_, err := db.NewRaw("UPDATE provider_keys SET last_used_at = NULL, uses = 0 WHERE id = ?", b.ID).Exec(ctx)
	is.NoErr(err)
	// Rotation goes on from there: b, never used as far as the database
	// knows, comes first, then a.
	is.Equal(pick(rotation.Request{Provider: p, Now: now.Add(3 * time.Minute)}).ID, b.ID)
	is.Equal(pick(rotation.Request{Provider: p, Now: now.Add(4 * time.Minute)}).ID, a.ID)
	stored, err := s.GetProviderKey(ctx, org, b.ID)
	is.NoErr(err)
	is.Equal(stored.Uses, int64(1)) // one pick short of what was made: the lost one
}
