package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// DatabaseFixture is a registry with the feed writer and unit of work of
// the same storage.
type DatabaseFixture struct {
	Store ports.DatabaseStore
	// Feed appends to the registrations' feeds (the counters' deltas).
	Feed ports.FeedWriter
	// UoW runs units whose Repos.Databases write with the unit.
	UoW ports.UnitOfWork
}

// newDatabase returns a registration of org linked to schemaIDs, created
// at second n.
func newDatabase(org string, n int, schemaIDs ...string) *dbsync.Database {
	name := "db"
	d, err := dbsync.New(newID("db"), org, dbsync.Fields{Name: &name}, at(n))
	if err != nil {
		panic(err)
	}
	for i, s := range schemaIDs {
		d.Links = append(d.Links, dbsync.Link{SchemaID: s, LinkedAt: at(n + i), EnrichmentEnabled: true})
	}
	return d
}

func checkDatabase(t *testing.T, got, want *dbsync.Database) {
	t.Helper()
	is := is.NewRelaxed(t)
	g, w := *got, *want
	sameTime(t, "CreatedAt", g.CreatedAt, w.CreatedAt)
	sameTime(t, "UpdatedAt", g.UpdatedAt, w.UpdatedAt)
	is.Equal(len(g.Links), len(w.Links))
	for i := range min(len(g.Links), len(w.Links)) {
		gl, wl := g.Links[i], w.Links[i]
		sameTime(t, "LinkedAt", gl.LinkedAt, wl.LinkedAt)
		is.Equal(gl.SchemaID, wl.SchemaID)
		is.Equal(gl.EnrichmentEnabled, wl.EnrichmentEnabled)
		is.Equal(gl.WebhookURL, wl.WebhookURL)
		is.Equal(gl.WebhookSecret, wl.WebhookSecret)
		is.Equal(gl.ShippedHash, wl.ShippedHash)
		is.Equal(gl.Shipped == nil, wl.Shipped == nil)
		if gl.Shipped != nil && wl.Shipped != nil {
			is.Equal(len(gl.Shipped.Tables), len(wl.Shipped.Tables))
			is.Equal(gl.Shipped.Relations(), wl.Shipped.Relations())
			is.Equal(gl.Shipped.EntityType, wl.Shipped.EntityType)
		}
	}
	g.Links, w.Links = nil, nil
	g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	is.Equal(g, w)
}

func databaseIDs(ds []*dbsync.Database) []string {
	ids := []string{}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// shippedMap is a small projected map.
func shippedMap(t *testing.T) *relmap.Map {
	t.Helper()
	m, err := relmap.Project([]byte(`{"title":"company","type":"object","properties":{
		"domain":{"type":"string","database_key":true},"name":{"type":"string"},
		"offices":{"type":"array","items":{"type":"object","properties":{"city":{"type":"string"}}}}}}`), relmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

// RunDatabaseStore runs the DatabaseStore contract.
func RunDatabaseStore(t *testing.T, newFixture func(t *testing.T) DatabaseFixture) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, f DatabaseFixture)
	}{
		{"create and get round trip, links included", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			d := newDatabase(newID("org"), 0, newID("s"), newID("s"))
			d.PageLimit, d.PurgeOnAck, d.PurgeEntityState, d.OnGaps = 7, true, true, dbsync.AcceptPartial
			d.PKStrategy, d.IndexScalars, d.NotifyDebounceS, d.MaxThresholdTimeoutS = dbsync.Natural, dbsync.IndexAll, 3, 9
			d.KeyLanguage, d.PropagateNotNull, d.SnapshotRequiredFrom = "pt-BR", true, 12
			d.Links[0].ShippedHash = "4f2a"
			d.Links[0].WebhookURL, d.Links[0].WebhookSecret, d.Links[0].Shipped = "http://127.0.0.1:9/hook", "whsec", shippedMap(t)
			d.Links[1].EnrichmentEnabled = false
			want := d.Clone()
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			d.Links[0].SchemaID = "edited" // the store keeps its own copy
			got, err := f.Store.GetDatabase(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			checkDatabase(t, got, want)
			is.True(errors.Is(f.Store.CreateDatabase(ctx, want), ports.ErrConflict))
		}},
		{"another organization's registration and an unknown id are not found", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			d := newDatabase(newID("org"), 0, newID("s"))
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			for _, c := range []struct{ org, id string }{{newID("org"), d.ID}, {d.OrgID, newID("db")}} {
				_, err := f.Store.GetDatabase(ctx, c.org, c.id)
				is.True(errors.Is(err, ports.ErrNotFound))
				_, err = f.Store.UpdateDatabase(ctx, c.org, c.id, func(*dbsync.Database) error { return nil })
				is.True(errors.Is(err, ports.ErrNotFound))
				is.True(errors.Is(f.Store.DeleteDatabase(ctx, c.org, c.id), ports.ErrNotFound))
				_, err = f.Store.Counters(ctx, c.org, c.id)
				is.True(errors.Is(err, ports.ErrNotFound))
			}
			_, err := f.Store.GetDatabase(ctx, d.OrgID, d.ID)
			is.NoErr(err)
		}},
		{"list by organization and by schema, oldest first", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			org, s1, s2 := newID("org"), newID("s"), newID("s")
			b := newDatabase(org, 2, s1, s2)
			a := newDatabase(org, 1, s2)
			c := newDatabase(org, 3, s1)
			other := newDatabase(newID("org"), 0, s1)
			for _, d := range []*dbsync.Database{b, a, c, other} {
				is.NoErr(f.Store.CreateDatabase(ctx, d))
			}
			all, err := f.Store.ListDatabases(ctx, org, "")
			is.NoErr(err)
			is.Equal(databaseIDs(all), []string{a.ID, b.ID, c.ID})
			checkDatabase(t, all[1], b)
			by1, err := f.Store.ListDatabases(ctx, org, s1)
			is.NoErr(err)
			is.Equal(databaseIDs(by1), []string{b.ID, c.ID})
			is.Equal(len(by1[0].Links), 2) // every link of a listed registration
			none, err := f.Store.ListDatabases(ctx, newID("org"), "")
			is.NoErr(err)
			is.Equal(len(none), 0)
		}},
		{"update stores what fn left; fn's error writes nothing", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			s1, s2, s3 := newID("s"), newID("s"), newID("s")
			d := newDatabase(newID("org"), 0, s1, s2)
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			boom := errors.New("boom")
			_, err := f.Store.UpdateDatabase(ctx, d.OrgID, d.ID, func(x *dbsync.Database) error {
				x.Name, x.Links = "changed", nil
				return boom
			})
			is.True(errors.Is(err, boom))
			got, err := f.Store.GetDatabase(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			checkDatabase(t, got, d)

			m := shippedMap(t)
			out, err := f.Store.UpdateDatabase(ctx, d.OrgID, d.ID, func(x *dbsync.Database) error {
				x.Name, x.PageLimit, x.UpdatedAt = "renamed", 500, at(10)
				x.ID, x.OrgID, x.CreatedAt = "other", "other", at(99) // never change
				x.Links = []dbsync.Link{x.Links[1], {SchemaID: s3, LinkedAt: at(11), EnrichmentEnabled: true}}
				x.Links[0].Shipped, x.Links[0].EnrichmentEnabled, x.Links[0].WebhookURL = m, false, "http://127.0.0.1:9/x"
				x.Links[0].ShippedHash, x.SnapshotRequiredFrom = "beef", 3
				return nil
			})
			is.NoErr(err)
			want := d.Clone()
			want.Name, want.PageLimit, want.UpdatedAt, want.SnapshotRequiredFrom = "renamed", 500, at(10), 3
			want.Links = []dbsync.Link{d.Links[1], {SchemaID: s3, LinkedAt: at(11), EnrichmentEnabled: true}}
			want.Links[0].Shipped, want.Links[0].EnrichmentEnabled, want.Links[0].WebhookURL = m, false, "http://127.0.0.1:9/x"
			want.Links[0].ShippedHash = "beef"
			checkDatabase(t, out, want)
			got, err = f.Store.GetDatabase(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			checkDatabase(t, got, want)
			by1, err := f.Store.ListDatabases(ctx, d.OrgID, s1)
			is.NoErr(err)
			is.Equal(len(by1), 0) // unlinked
		}},
		{"delete removes the registration, its links and its feed", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			s1 := newID("s")
			d := newDatabase(newID("org"), 0, s1)
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			_, err := f.Feed.Append(ctx, d.ID, []ports.FeedRow{schemaRow(s1)})
			is.NoErr(err)
			is.NoErr(f.Store.DeleteDatabase(ctx, d.OrgID, d.ID))
			_, err = f.Store.GetDatabase(ctx, d.OrgID, d.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			list, err := f.Store.ListDatabases(ctx, d.OrgID, s1)
			is.NoErr(err)
			is.Equal(len(list), 0)
			_, err = f.Feed.Append(ctx, d.ID, []ports.FeedRow{schemaRow(s1)})
			is.True(errors.Is(err, ports.ErrNotFound)) // the feed went with it
			is.True(errors.Is(f.Store.DeleteDatabase(ctx, d.OrgID, d.ID), ports.ErrNotFound))
			// The id can be used again: nothing of the old one is left.
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			c, err := f.Store.Counters(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			is.Equal(c, dbsync.Counters{})
		}},
		{"counters count the feed's unacknowledged deltas", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			d := newDatabase(newID("org"), 0, newID("s"))
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			c, err := f.Store.Counters(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			is.Equal(c, dbsync.Counters{})
			ids, err := f.Feed.Append(ctx, d.ID, []ports.FeedRow{schemaRow(d.Links[0].SchemaID), schemaRow(d.Links[0].SchemaID)})
			is.NoErr(err)
			is.Equal(ids, []int64{1, 2}) // the feed starts at 1
			c, err = f.Store.Counters(ctx, d.OrgID, d.ID)
			is.NoErr(err)
			is.Equal(c, dbsync.Counters{PendingDeltas: 2})
		}},
		{"pending deltas of one schema: above the watermark, per schema, scoped to the organization", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			s1, s2 := newID("s"), newID("s")
			d := newDatabase(newID("org"), 0, s1, s2)
			is.NoErr(f.Store.CreateDatabase(ctx, d))
			n, err := f.Store.PendingSchemaDeltas(ctx, d.OrgID, d.ID, s1)
			is.NoErr(err)
			is.Equal(n, int64(0))
			_, err = f.Feed.Append(ctx, d.ID, []ports.FeedRow{schemaRow(s1), schemaRow(s2), schemaRow(s1)})
			is.NoErr(err)
			for schemaID, want := range map[string]int64{s1: 2, s2: 1, newID("s"): 0} {
				n, err := f.Store.PendingSchemaDeltas(ctx, d.OrgID, d.ID, schemaID)
				is.NoErr(err)
				is.Equal(n, want)
			}
			_, err = f.Store.PendingSchemaDeltas(ctx, newID("org"), d.ID, s1)
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = f.Store.PendingSchemaDeltas(ctx, d.OrgID, newID("db"), s1)
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"in a unit of work, a rolled-back create, update and delete leave nothing", func(t *testing.T, f DatabaseFixture) {
			is := is.New(t)
			kept := newDatabase(newID("org"), 0, newID("s"))
			is.NoErr(f.Store.CreateDatabase(ctx, kept))
			gone := newDatabase(kept.OrgID, 1, newID("s"))
			boom := errors.New("boom")
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Databases.CreateDatabase(ctx, gone); err != nil {
					return err
				}
				if _, err := r.Feed.Append(ctx, gone.ID, []ports.FeedRow{schemaRow("s")}); err != nil {
					return err
				}
				if _, err := r.Databases.UpdateDatabase(ctx, kept.OrgID, kept.ID, func(x *dbsync.Database) error {
					x.Name, x.Links[0].Shipped = "changed", shippedMap(t)
					return nil
				}); err != nil {
					return err
				}
				if err := r.Databases.DeleteDatabase(ctx, kept.OrgID, kept.ID); err != nil {
					return err
				}
				return boom
			})
			is.True(errors.Is(err, boom))
			_, err = f.Store.GetDatabase(ctx, gone.OrgID, gone.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			got, err := f.Store.GetDatabase(ctx, kept.OrgID, kept.ID)
			is.NoErr(err)
			checkDatabase(t, got, kept)
			ids, err := f.Feed.Append(ctx, kept.ID, []ports.FeedRow{schemaRow("s")})
			is.NoErr(err)
			is.Equal(ids, []int64{1})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newFixture(t)) })
	}
}

func schemaRow(schemaID string) ports.FeedRow {
	return ports.FeedRow{Delta: delta.Delta{Kind: delta.Schema, Op: delta.Migrate, SQL: "SELECT 1", CreatedAt: at(0)}, SchemaID: schemaID}
}
