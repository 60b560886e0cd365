package contract

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// ConsumerFixture is what the consumer suites run on: the credential
// store, the snapshot reader and a way to put registrations, feeds and
// entities under them (the registry and the entity layer have ports of
// their own; the suites need only rows).
type ConsumerFixture struct {
	Credentials ports.CredentialStore
	Snapshots   ports.SnapshotReader
	// Seed stores the registration d with its links (Shipped included), a
	// feed whose last delta id is head, and the entities es.
	Seed func(t *testing.T, d *dbsync.Database, head int64, es []*dbsync.Entity)
}

// TestContract is a contract whose projection the suites use: an entity
// keyed by name, with an array of scalars.
const TestContract = `{"type": "object", "title": "Company", "properties": {
	"name": {"type": "string", "identifying": true},
	"employees": {"type": "integer"},
	"tags": {"type": "array", "items": {"type": "string"}}}}`

// TestMap is TestContract's projection with pkStrategy.
func TestMap(t *testing.T, pkStrategy string) *relmap.Map {
	m, err := relmap.Project(json.RawMessage(TestContract), relmap.Options{PKStrategy: pkStrategy})
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestDatabase returns a registration of org linked to the given schemas
// (the first one shipped with TestMap).
func TestDatabase(t *testing.T, org string, schemas ...string) *dbsync.Database {
	d := &dbsync.Database{ID: newID("db"), OrgID: org, Name: "replica " + newID("n"), Dialect: dbsync.Dialect, PageLimit: 100,
		OnGaps: dbsync.SkipChildren, PKStrategy: dbsync.Surrogate, IndexScalars: dbsync.IndexFilterable, NotifyDebounceS: 30,
		MaxThresholdTimeoutS: 300, CreatedAt: at(0), UpdatedAt: at(0)}
	for i, s := range schemas {
		l := dbsync.Link{SchemaID: s, LinkedAt: at(i), EnrichmentEnabled: true}
		if i == 0 {
			l.Shipped = TestMap(t, relmap.Surrogate)
		}
		d.Links = append(d.Links, l)
	}
	return d
}

// TestEntity returns an entity of schema with a UUID id.
func TestEntity(org, schema, name string, revision int64, tags ...string) *dbsync.Entity {
	b, _ := json.Marshal(map[string]any{"name": name, "employees": len(name), "tags": tags})
	return &dbsync.Entity{ID: TestUUID(), OrgID: org, SchemaID: schema, EntityType: "company", KeyIdentity: name,
		Keys: map[string]string{"name": name}, Payload: b, Revision: revision, UpdatedAt: at(int(revision))}
}

// TestUUID returns a random UUID (version 4).
func TestUUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// RunCredentialStore checks one active credential per registration, the
// exchange and its token records, revocation and the use records.
func RunCredentialStore(t *testing.T, newFixture func(t *testing.T) ConsumerFixture) {
	ctx := context.Background()
	is := is.New(t)
	f := newFixture(t)
	s := f.Credentials
	org := newID("org")
	d := TestDatabase(t, org, newID("s"))
	f.Seed(t, d, 0, nil)
	cred := func(hash string, n int) *dbsync.Credential {
		return &dbsync.Credential{ID: newID("cred"), OrgID: org, DatabaseID: d.ID, Hash: hash, CreatedAt: at(n), UpdatedAt: at(n)}
	}

	// No credential yet; another organization's registration is not found.
	c, err := s.LatestCredential(ctx, org, d.ID)
	is.NoErr(err)
	is.True(c == nil)
	_, err = s.LatestCredential(ctx, newID("org"), d.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	other := cred(newID("h"), 1)
	other.OrgID = newID("org")
	_, err = s.CreateCredential(ctx, other)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.RevokeCredential(ctx, org, d.ID, at(1))
	is.True(errors.Is(err, ports.ErrNotFound)) // none active

	first := cred(newID("h1"), 2)
	old, err := s.CreateCredential(ctx, first)
	is.NoErr(err)
	is.True(old == nil)
	is.Equal(first.DatabaseName, d.Name)
	c, err = s.LatestCredential(ctx, org, d.ID)
	is.NoErr(err)
	is.Equal(c.ID, first.ID)
	is.Equal(c.Status(), dbsync.CredentialActive)
	is.True(c.LastSeenAt == nil && c.LastApplyDeltaID == nil)

	// The exchange notes the use and records the token.
	tok := access.DeniedToken{ID: newID("jti"), ExpiresAt: at(900)}
	got, err := s.ExchangeCredential(ctx, first.Hash, dbsync.Seen{At: at(3), IP: "127.0.0.1", UserAgent: "enrich-sync"}, tok)
	is.NoErr(err)
	is.Equal(got.ID, first.ID)
	is.Equal(got.DatabaseID, d.ID)
	is.Equal(got.DatabaseName, d.Name)
	is.Equal(got.LastSeenAt.Equal(at(3)), true)
	is.Equal(got.LastSeenIP, "127.0.0.1")
	is.Equal(got.LastSeenUserAgent, "enrich-sync")
	_, err = s.ExchangeCredential(ctx, "wrong", dbsync.Seen{At: at(3)}, access.DeniedToken{ID: newID("jti"), ExpiresAt: at(900)})
	is.True(errors.Is(err, ports.ErrNotFound))
	ts, err := s.CredentialTokens(ctx, first.ID, at(4))
	is.NoErr(err)
	is.Equal(len(ts), 1)
	is.Equal(ts[0].ID, tok.ID)
	is.True(ts[0].ExpiresAt.Equal(at(900)))
	ts, err = s.CredentialTokens(ctx, first.ID, at(901))
	is.NoErr(err)
	is.Equal(len(ts), 0) // expired tokens need no denying

	// A new credential replaces the active one.
	second := cred(newID("h2"), 5)
	old, err = s.CreateCredential(ctx, second)
	is.NoErr(err)
	is.Equal(old.ID, first.ID)
	is.True(old.RevokedAt != nil)
	_, err = s.ExchangeCredential(ctx, first.Hash, dbsync.Seen{At: at(6)}, access.DeniedToken{ID: newID("jti"), ExpiresAt: at(900)})
	is.True(errors.Is(err, ports.ErrNotFound)) // revoked
	dup := cred(second.Hash, 6)
	_, err = s.CreateCredential(ctx, dup)
	is.True(errors.Is(err, ports.ErrConflict)) // a hash is unique

	// Uses and acks are recorded on the active one; acks only move up.
	is.NoErr(s.NoteCredentialSeen(ctx, second.ID, dbsync.Seen{At: at(7), IP: "::1", UserAgent: "x"}))
	is.NoErr(s.NoteCredentialApplied(ctx, d.ID, 5))
	is.NoErr(s.NoteCredentialApplied(ctx, d.ID, 3))
	c, err = s.LatestCredential(ctx, org, d.ID)
	is.NoErr(err)
	is.Equal(c.ID, second.ID)
	is.True(c.LastSeenAt.Equal(at(7)))
	is.Equal(c.LastSeenIP, "::1")
	is.Equal(*c.LastApplyDeltaID, int64(5))

	// Revocation: once.
	_, err = s.RevokeCredential(ctx, newID("org"), d.ID, at(8))
	is.True(errors.Is(err, ports.ErrNotFound))
	r, err := s.RevokeCredential(ctx, org, d.ID, at(8))
	is.NoErr(err)
	is.Equal(r.ID, second.ID)
	is.True(r.RevokedAt.Equal(at(8)))
	_, err = s.RevokeCredential(ctx, org, d.ID, at(9))
	is.True(errors.Is(err, ports.ErrNotFound))
	c, err = s.LatestCredential(ctx, org, d.ID)
	is.NoErr(err)
	is.Equal(c.Status(), dbsync.CredentialRevoked)
	_, err = s.ExchangeCredential(ctx, second.Hash, dbsync.Seen{At: at(9)}, access.DeniedToken{ID: newID("jti"), ExpiresAt: at(900)})
	is.True(errors.Is(err, ports.ErrNotFound))
	is.NoErr(s.NoteCredentialApplied(ctx, d.ID, 9)) // no active credential: nothing
}

// RunSnapshotReader checks the view: the registration's links with their
// shipped projections, the head, and its entities paged in order, scoped
// to the organization and the schema.
func RunSnapshotReader(t *testing.T, newFixture func(t *testing.T) ConsumerFixture) {
	ctx := context.Background()
	is := is.New(t)
	f := newFixture(t)
	org, sa, sb := newID("org"), newID("sa"), newID("sb")
	d := TestDatabase(t, org, sa, sb)
	var es []*dbsync.Entity
	for i := range 5 {
		es = append(es, TestEntity(org, sa, fmt.Sprintf("acme %d", i), int64(i+1), "x"))
	}
	es = append(es, TestEntity(org, sb, "other schema", 1), TestEntity(newID("org"), sa, "other org", 1))
	f.Seed(t, d, 7, es)

	err := f.Snapshots.ReadSnapshot(ctx, newID("org"), d.ID, func(context.Context, ports.SnapshotView) error { return nil })
	is.True(errors.Is(err, ports.ErrNotFound))
	err = f.Snapshots.ReadSnapshot(ctx, org, d.ID, func(ctx context.Context, v ports.SnapshotView) error {
		is.Equal(v.Head, int64(7))
		is.Equal(len(v.Database.Links), 2)
		is.Equal(v.Database.Links[0].SchemaID, sa)
		is.True(v.Database.Links[0].Shipped != nil)
		is.Equal(v.Database.Links[0].Shipped.Root().Name, TestMap(t, relmap.Surrogate).Root().Name)
		is.True(v.Database.Links[1].Shipped == nil)
		var names []string
		var after ports.EntityCursor
		for {
			page, err := v.Entities(ctx, sa, after, 2)
			is.NoErr(err)
			for _, e := range page {
				names = append(names, e.KeyIdentity)
				is.Equal(e.OrgID, org)
				is.True(len(e.Payload) > 0)
			}
			if len(page) < 2 {
				break
			}
			after = ports.EntityCursor{EntityType: page[1].EntityType, KeyIdentity: page[1].KeyIdentity}
		}
		is.Equal(names, []string{"acme 0", "acme 1", "acme 2", "acme 3", "acme 4"})
		page, err := v.Entities(ctx, sb, ports.EntityCursor{}, 10)
		is.NoErr(err)
		is.Equal(len(page), 1)
		return nil
	})
	is.NoErr(err)
	// A snapshot served clears snapshot_required only when its head covers
	// the link that set it; another organization's is not touched.
	d3 := TestDatabase(t, org, newID("s"))
	d3.SnapshotRequiredFrom = 6
	f.Seed(t, d3, 7, nil)
	required := func() int64 {
		var from int64
		is.NoErr(f.Snapshots.ReadSnapshot(ctx, org, d3.ID, func(_ context.Context, v ports.SnapshotView) error {
			from = v.Database.SnapshotRequiredFrom
			return nil
		}))
		return from
	}
	is.Equal(required(), int64(6))
	is.NoErr(f.Snapshots.SnapshotServed(ctx, org, d3.ID, 5)) // an older snapshot
	is.Equal(required(), int64(6))
	_ = f.Snapshots.SnapshotServed(ctx, newID("org"), d3.ID, 7) // not this organization's
	is.Equal(required(), int64(6))
	is.NoErr(f.Snapshots.SnapshotServed(ctx, org, d3.ID, 7))
	is.Equal(required(), int64(0))
	// An empty feed's head is 0.
	d2 := TestDatabase(t, org, newID("s"))
	f.Seed(t, d2, 0, nil)
	is.NoErr(f.Snapshots.ReadSnapshot(ctx, org, d2.ID, func(_ context.Context, v ports.SnapshotView) error {
		is.Equal(v.Head, int64(0))
		return nil
	}))
}
