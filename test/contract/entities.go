package contract

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// EntitiesFixture is a store's entity layer with its unit of work.
type EntitiesFixture struct {
	UnitOfWorkFixture
	Entities ports.EntityStore
	// Seed stores a registration with its links and an empty feed.
	Seed func(t *testing.T, d *dbsync.Database)
	// Deltas returns a registration's feed in id order.
	Deltas func(t *testing.T, databaseID string) []ports.FeedRow
}

// EntityContract is the contract the suite's entities follow.
const EntityContract = `{"root": {"name": "Company", "type": "object", "properties": {
	"name": {"type": "string", "identifying": true},
	"city": {"type": ["string", "null"]},
	"tags": {"type": "array", "nullable": true, "items": {"type": "string"}}}}}`

// RunEntities checks the entity layer: writes with a job's end or in a
// unit of work, revisions that rise across a purge, the deltas of the
// feeding links only, and nothing at all of a refused end.
func RunEntities(t *testing.T, newFixture func(t *testing.T) EntitiesFixture) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, f EntitiesFixture, s *entitySetup)
	}{
		{"an end writes the entity, its revision and one delta per feeding link, in one batch", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			s.retarget(t, f, e.job.OrgID)
			end := e.end(job.Running, 2, 3)
			end.Sync = []ports.EntityWrite{s.write(t, e.rec.ID, `{"name": "Acme", "city": "Lyon", "tags": ["a"]}`, "batch-1")}
			is.NoErr(f.UoW.EndJob(ctx, end))
			page, err := f.Entities.ListEntities(ctx, e.job.OrgID, s.schemaID, ports.EntityQuery{Limit: 10})
			is.NoErr(err)
			is.Equal(page.Total, int64(1))
			is.Equal(page.EntityTypes, []string{"Company"})
			got := page.Entities[0]
			is.Equal(got.Revision, int64(1))
			is.Equal(got.LastRecordID, e.rec.ID)
			is.Equal(got.Keys, map[string]string{"name": "Acme"})
			byID, err := f.Entities.GetEntity(ctx, e.job.OrgID, got.ID)
			is.NoErr(err)
			is.Equal(byID.KeyIdentity, got.KeyIdentity)
			_, err = f.Entities.GetEntity(ctx, newID("org"), got.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			rows := f.Deltas(t, s.feeding)
			is.Equal(len(rows), 1)
			is.Equal(rows[0].Kind, delta.Data)
			is.Equal(rows[0].Op, delta.Upsert)
			is.Equal(rows[0].BatchID, "batch-1")
			is.Equal(rows[0].Revision, int64(1))
			is.Equal(rows[0].EntityType, "Company")
			is.Equal(rows[0].RecordID, e.rec.ID)
			is.Equal(rows[0].EntityID, got.ID)
			is.Equal(len(f.Deltas(t, s.unshipped)), 0) // never shipped: the snapshot carries it

			// The same identity again: revision 2; after a purge of the
			// rows, revision 3.
			s.endAgain(t, ctx, f, `{"name": "Acme", "city": "Paris"}`, 2)
			n, err := f.Entities.DeleteSchemaEntities(ctx, e.job.OrgID, s.schemaID)
			is.NoErr(err)
			is.Equal(n, int64(1))
			s.endAgain(t, ctx, f, `{"name": "Acme"}`, 3)
			is.Equal(len(f.Deltas(t, s.feeding)), 3)
		}},
		{"an end's deltas are what the write renders at its revision, one revision per write of an identity", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			s.retarget(t, f, e.job.OrgID)
			end := e.end(job.Running, 2, 3)
			a := s.write(t, e.rec.ID, `{"name": "Acme", "city": "Lyon", "tags": ["a", "b"]}`, "batch-1")
			b := s.write(t, e.rec.ID, `{"name": "Acme", "city": "Oslo"}`, "batch-1")
			end.Sync = []ports.EntityWrite{a, b}
			is.NoErr(f.UoW.EndJob(ctx, end))
			rows := f.Deltas(t, s.feeding)
			is.Equal(len(rows), 2)
			for i, w := range end.Sync {
				_, want, err := w.Apply(int64(i), s.dbs)
				is.NoErr(err)
				is.Equal(rows[i].Revision, int64(i+1))
				is.Equal(rows[i].SQL, want[0].Delta.SQL)
				is.Equal(jsonValue(t, rows[i].Payload), jsonValue(t, want[0].Delta.Payload))
			}
			page, err := f.Entities.ListEntities(ctx, e.job.OrgID, s.schemaID, ports.EntityQuery{Limit: 10})
			is.NoErr(err)
			is.Equal(page.Total, int64(1))
			is.Equal(page.Entities[0].Revision, int64(2))
			is.Equal(jsonValue(t, page.Entities[0].Payload), jsonValue(t, b.State))
		}},
		{"an end decided on registrations that changed since is rendered at the links as they are", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			s.retarget(t, f, e.job.OrgID)
			end := e.end(job.Running, 2, 3)
			w := s.write(t, e.rec.ID, `{"name": "Acme", "tags": ["a"]}`, "batch-1")
			other := s.m
			other.Tables = other.Tables[:1] // a shape the link never shipped
			stale := *s.dbs[0]
			stale.Links = []dbsync.Link{{SchemaID: s.schemaID, EnrichmentEnabled: true, Shipped: &other}}
			w.Feeds = []*dbsync.Database{&stale}
			if stale.ID != s.feeding {
				w.Feeds = append(w.Feeds, s.dbs[1]) // and the feeding one unknown
			}
			end.Sync = []ports.EntityWrite{w}
			is.NoErr(f.UoW.EndJob(ctx, end))
			rows := f.Deltas(t, s.feeding)
			is.Equal(len(rows), 1)
			_, want, err := w.Apply(0, s.dbs)
			is.NoErr(err)
			is.Equal(rows[0].SQL, want[0].Delta.SQL)
			is.Equal(rows[0].Revision, int64(1))
			is.Equal(len(f.Deltas(t, s.unshipped)), 0)
		}},
		{"a refused end (fenced) writes neither the record nor the entity nor a delta", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			s.retarget(t, f, e.job.OrgID)
			end := e.end(job.Running, 2, 3)
			end.Job.Attempt = 1 // not the holder
			end.Sync = []ports.EntityWrite{s.write(t, e.rec.ID, `{"name": "Acme"}`, "batch-x")}
			is.True(errors.Is(f.UoW.EndJob(ctx, end), ports.ErrFenced))
			e.checkUnended(t, ctx, f.Repos)
			s.nothing(t, ctx, f, e.job.OrgID)
		}},
		{"an end whose delta cannot be rendered writes nothing", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			e := newEnding(t, ctx, f.Repos)
			s.retarget(t, f, e.job.OrgID)
			end := e.end(job.Running, 2, 3)
			w := s.write(t, e.rec.ID, `{"name": "Acme"}`, "batch-y")
			w.State = json.RawMessage(`{"name": "Acme", "tags": [{"x": 1}]}`) // an object where text goes
			end.Sync = []ports.EntityWrite{w}
			is.True(errors.Is(f.UoW.EndJob(ctx, end), ports.ErrInvalid))
			e.checkUnended(t, ctx, f.Repos)
			s.nothing(t, ctx, f, e.job.OrgID)
		}},
		{"a unit of work that fails after its entity write leaves nothing", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			org := newID("org")
			s.retarget(t, f, org)
			boom := errors.New("boom")
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				out, err := r.Entities.WriteEntities(ctx, []ports.EntityWrite{s.write(t, "rec-1", `{"name": "Acme"}`, "b")})
				if err != nil {
					return err
				}
				is.Equal(out[0].Revision, int64(1))
				is.Equal(len(out[0].Deltas[s.feeding]), 1)
				return boom
			})
			is.Equal(err, boom)
			s.nothing(t, ctx, f, org)
		}},
		{"a unit of work deletes a schema's entities, or nothing when it fails", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			org := newID("org")
			s.retarget(t, f, org)
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				_, err := r.Entities.WriteEntities(ctx, []ports.EntityWrite{s.write(t, "rec-1", `{"name": "Acme"}`, "b"),
					s.write(t, "rec-2", `{"name": "Beta"}`, "c")})
				return err
			}))
			boom := errors.New("boom")
			is.Equal(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				n, err := r.Entities.DeleteSchemaEntities(ctx, org, s.schemaID)
				is.NoErr(err)
				is.Equal(n, int64(2))
				return boom
			}), boom)
			page, err := f.Entities.ListEntities(ctx, org, s.schemaID, ports.EntityQuery{Limit: 10})
			is.NoErr(err)
			is.Equal(page.Total, int64(2))
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				n, err := r.Entities.DeleteSchemaEntities(ctx, newID("org"), s.schemaID) // another organization's: none
				is.Equal(n, int64(0))
				if err != nil {
					return err
				}
				n, err = r.Entities.DeleteSchemaEntities(ctx, org, s.schemaID)
				is.Equal(n, int64(2))
				return err
			}))
			page, err = f.Entities.ListEntities(ctx, org, s.schemaID, ports.EntityQuery{Limit: 10})
			is.NoErr(err)
			is.Equal(page.Total, int64(0))
		}},
		{"a merge's redirect: entities naming a concept id, deleted with delete deltas at the next revision", func(t *testing.T, f EntitiesFixture, s *entitySetup) {
			is := is.New(t)
			org := newID("org")
			s.retarget(t, f, org)
			keyed := s.write(t, "rec-1", `{"name": "concept-L", "city": "Lyon"}`, "batch-1")
			referrer := s.write(t, "rec-2", `{"name": "Globex", "city": "concept-L", "tags": ["concept-Lx"]}`, "batch-1")
			other := s.write(t, "rec-3", `{"name": "Initech", "city": "concept-Lx"}`, "batch-1")
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				_, err := r.Entities.WriteEntities(ctx, []ports.EntityWrite{keyed, referrer, other})
				return err
			}))
			var found []*dbsync.Entity
			var gone []ports.EntityWritten
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				var err error
				if found, err = r.Entities.EntitiesMentioning(ctx, org, "concept-L"); err != nil {
					return err
				}
				if none, err := r.Entities.EntitiesMentioning(ctx, newID("org"), "concept-L"); err != nil || len(none) > 0 {
					t.Errorf("another organization's: %v %v", none, err)
				}
				// Several texts: an entity naming any of them, once.
				if hits, err := r.Entities.EntitiesMentioning(ctx, org, "concept-Lx", "concept-L", "no-such-text"); err != nil || len(hits) != 3 {
					t.Errorf("any of three texts: %d entities, %v", len(hits), err)
				}
				if none, err := r.Entities.EntitiesMentioning(ctx, org); err != nil || len(none) > 0 {
					t.Errorf("no text: %v %v", none, err)
				}
				if err := r.Entities.LockFeeds(ctx, []string{s.schemaID, "no-such-schema"}); err != nil {
					return err
				}
				ids := []string{dbsync.EntityID(s.schemaID, keyed.Identity), "no-such-entity"}
				byID, err := r.Entities.EntitiesByID(ctx, org, ids)
				if err != nil || len(byID) != 1 {
					t.Errorf("by id: %v %v", byID, err)
				}
				gone, err = r.Entities.DeleteEntities(ctx, org, ids, "batch-2", at(50))
				return err
			}))
			names := map[string]bool{}
			for _, e := range found {
				names[e.Keys["name"]] = true
			}
			is.Equal(names, map[string]bool{"concept-L": true, "Globex": true}) // strict equality: not concept-Lx
			is.Equal(len(gone), 1)
			is.Equal(gone[0].Revision, int64(2))
			is.Equal(len(gone[0].Deltas[s.feeding]), 1)
			page, err := f.Entities.ListEntities(ctx, org, s.schemaID, ports.EntityQuery{Limit: 10})
			is.NoErr(err)
			is.Equal(page.Total, int64(2))
			rows := f.Deltas(t, s.feeding)
			last := rows[len(rows)-1]
			is.Equal(last.Op, delta.Delete)
			is.Equal(last.Revision, int64(2))
			is.Equal(last.BatchID, "batch-2")
			is.Equal(last.EntityID, gone[0].EntityID)
			is.Equal(len(f.Deltas(t, s.unshipped)), 0)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.run(t, f, &entitySetup{})
		})
	}
}

// entitySetup is one case's schema, linked to a registration that feeds on
// it (shipped) and to one that never shipped.
type entitySetup struct {
	orgID, schemaID    string
	feeding, unshipped string
	m                  relmap.Map
	dbs                []*dbsync.Database
}

func (s *entitySetup) retarget(t *testing.T, f EntitiesFixture, orgID string) {
	t.Helper()
	m, err := relmap.Project(json.RawMessage(EntityContract), relmap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.orgID, s.schemaID, s.m = orgID, newID("sch"), m
	s.feeding, s.unshipped = newID("db"), newID("db")
	for _, id := range []string{s.feeding, s.unshipped} {
		d := &dbsync.Database{ID: id, OrgID: orgID, Name: id, Dialect: dbsync.Dialect, PageLimit: 100,
			OnGaps: dbsync.SkipChildren, PKStrategy: dbsync.Surrogate, IndexScalars: dbsync.IndexFilterable,
			NotifyDebounceS: 30, MaxThresholdTimeoutS: 300, CreatedAt: at(1), UpdatedAt: at(1),
			Links: []dbsync.Link{{SchemaID: s.schemaID, LinkedAt: at(1), EnrichmentEnabled: true}}}
		if id == s.feeding {
			d.Links[0].Shipped = &m
		}
		f.Seed(t, d)
	}
	dbs, err := f.Entities.SchemaDatabases(context.Background(), orgID, s.schemaID)
	if err != nil || len(dbs) != 2 {
		t.Fatalf("schema databases: %v %v", dbs, err)
	}
	s.dbs = dbs
}

func (s *entitySetup) write(t *testing.T, recordID, state, batch string) ports.EntityWrite {
	t.Helper()
	out, w, feeds, err := dbsync.Decide(s.dbs, dbsync.Target{OrgID: s.orgID, SchemaID: s.schemaID,
		Contract: json.RawMessage(EntityContract)}, recordID, json.RawMessage(state), batch)
	if err != nil || !feeds || w == nil {
		t.Fatalf("decide: %v %v %v", w, feeds, err)
	}
	if out.DeltaCount != 1 || out.BatchID != batch || out.Status != dbsync.StatusSaved {
		t.Fatalf("outcome %+v", out)
	}
	w.At = at(40)
	return ports.EntityWrite{Write: *w, Outcome: out, Feeds: s.dbs}
}

// endAgain ends another job of the organization with the same identity
// and checks the revision it reached.
func (s *entitySetup) endAgain(t *testing.T, ctx context.Context, f EntitiesFixture, state string, revision int64) {
	t.Helper()
	is := is.New(t)
	e := newEnding(t, ctx, f.Repos)
	e.rec.OrgID = s.orgID
	end := e.end(job.Running, 2, 2)
	end.Sync = []ports.EntityWrite{s.write(t, e.rec.ID, state, newID("batch"))}
	is.NoErr(f.UoW.EndJob(ctx, end))
	page, err := f.Entities.ListEntities(ctx, s.orgID, s.schemaID, ports.EntityQuery{Limit: 10})
	is.NoErr(err)
	is.Equal(len(page.Entities), 1)
	is.Equal(page.Entities[0].Revision, revision)
	is.Equal(page.Entities[0].LastRecordID, e.rec.ID)
}

func (s *entitySetup) nothing(t *testing.T, ctx context.Context, f EntitiesFixture, orgID string) {
	t.Helper()
	is := is.New(t)
	page, err := f.Entities.ListEntities(ctx, orgID, s.schemaID, ports.EntityQuery{Limit: 10})
	is.NoErr(err)
	is.Equal(page.Total, int64(0))
	is.Equal(len(f.Deltas(t, s.feeding)), 0)
	// No revision was kept either: the next write is revision 1.
	err = f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		out, err := r.Entities.WriteEntities(ctx, []ports.EntityWrite{s.write(t, "rec-2", `{"name": "Acme"}`, "b2")})
		if err == nil {
			is.Equal(out[0].Revision, int64(1))
		}
		return errors.New("roll back")
	})
	is.Equal(err.Error(), "roll back")
}

// jsonValue decodes a JSON document for a comparison that ignores its
// spacing and key order.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return v
}
