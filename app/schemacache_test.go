package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// countedSchemas counts the reads of a schema store; while gate is set, a
// read waits for it to close after saying so on reading (buffered: a
// second read does not wait for the test to hear it).
type countedSchemas struct {
	ports.SchemaStore
	gets    atomic.Int32
	gate    chan struct{}
	reading chan struct{}
}

func (c *countedSchemas) GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error) {
	c.gets.Add(1)
	sc, err := c.SchemaStore.GetSchema(ctx, orgID, id)
	if c.gate != nil {
		select {
		case c.reading <- struct{}{}:
		default:
		}
		<-c.gate
	}
	return sc, err
}

// cacheWorld is one instance: the schema service that writes and the
// enrichment service whose job starts read, sharing one SchemaCache.
type cacheWorld struct {
	store   *countedSchemas
	cache   *cache.Schemas
	notes   *fakeports.Notes
	schemas *app.SchemaService
	enrich  *app.Enricher
	clock   *fakeports.Clock
	id      string
}

const (
	cacheDocV1 = `{"type":"object","properties":{"name":{"type":"string"}}}`
	cacheDocV2 = `{"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"}}}`
)

func newCacheWorld(t *testing.T, ttl time.Duration) *cacheWorld {
	t.Helper()
	schemas, records := memory.NewSchemaStore(), memory.NewRecordStore()
	w := &cacheWorld{store: &countedSchemas{SchemaStore: schemas}, notes: &fakeports.Notes{},
		clock: fakeports.NewClock()}
	clock := w.clock
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	w.cache = cache.NewSchemas(w.store, w.notes, clock, lg, cache.SchemaConfig{TTL: ttl, MaxBytes: 1 << 20})
	// The permanent delete and the purge write in a unit of work: the drop
	// follows its commit.
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), schemas, records,
		memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), inproc.New())
	w.schemas = &app.SchemaService{Schemas: w.store, Records: records, UoW: uow, Compiler: jsonschema.New(schema.Limits{}), Clock: clock,
		IDs: &uuidish{}, SchemaCache: w.cache}
	w.enrich = testEnricher(w.store, w.cache, nil, oneModel{model.Info{Key: model.Key{Provider: "p", Model: "m"}}}, clock, lg)
	sc, err := w.schemas.Create(context.Background(), schemaOwner, app.NewSchemaInput{Name: "Company", Schema: json.RawMessage(cacheDocV1)})
	if err != nil {
		t.Fatal(err)
	}
	w.id = sc.ID
	return w
}

// start plans a job on the world's schema, as a job start does.
func (w *cacheWorld) start() (*schema.Schema, error) {
	return w.enrich.PlannedSchema(context.Background(), schemaOwner.OrgID,
		app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: w.id, Models: []string{"p::m"}})
}

func (w *cacheWorld) reads() int { return int(w.store.gets.Load()) }

// TestSchemaCacheSecondStartReadsNothing: the second job start on a schema
// is planned from the cache; another schema is read on its own.
func TestSchemaCacheSecondStartReadsNothing(t *testing.T) {
	is := is.New(t)
	w := newCacheWorld(t, time.Minute)
	first, err := w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 1)
	again, err := w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 1) // no store read
	is.Equal(string(again.Content), string(first.Content))
	// Each start gets its own struct: a change to one reaches no other.
	again.Name = "changed"
	third, err := w.start()
	is.NoErr(err)
	is.Equal(third.Name, "Company")

	other, err := w.schemas.Create(context.Background(), schemaOwner, app.NewSchemaInput{Name: "Other", Schema: json.RawMessage(cacheDocV2)})
	is.NoErr(err)
	w.id = other.ID
	_, err = w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 2)
}

// TestSchemaCacheWritesDrop: every write of a schema through the app drops
// its entry before it returns, so the next job start plans on the new
// version, or is 404 for a schema gone to the trash; and it announces the
// change to the other instances.
func TestSchemaCacheWritesDrop(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// setup runs before the first (cached) start; wantBefore is that
		// start's error (nil: it plans).
		setup      func(t *testing.T, w *cacheWorld)
		wantBefore error
		write      func(t *testing.T, w *cacheWorld)
		// check judges the start after the write.
		check func(is *is.I, sc *schema.Schema, err error)
	}{
		{
			name: "update",
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.Update(ctx, schemaOwner, w.id, app.SchemaUpdate{Schema: json.RawMessage(cacheDocV2)})
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.Equal(string(sc.Contract()), cacheDocV2)
			},
		},
		{
			name: "rename",
			write: func(t *testing.T, w *cacheWorld) {
				name := "Firm"
				_, err := w.schemas.Update(ctx, schemaOwner, w.id, app.SchemaUpdate{Name: &name})
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.Equal(sc.Name, "Firm")
			},
		},
		{
			name: "trash",
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.Delete(ctx, schemaOwner, w.id, false)
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, _ *schema.Schema, err error) { is.True(errors.Is(err, ports.ErrNotFound)) },
		},
		{
			name: "delete permanently",
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.DeletePermanently(ctx, schemaOwner, w.id, false)
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, _ *schema.Schema, err error) { is.True(errors.Is(err, ports.ErrNotFound)) },
		},
		{
			name: "restore",
			setup: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.Delete(ctx, schemaOwner, w.id, false)
				is.New(t).NoErr(err)
			},
			wantBefore: ports.ErrNotFound, // the trashed schema is cached as trashed
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.Restore(ctx, schemaOwner, w.id)
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.True(!sc.Deleted())
			},
		},
		{
			name:  "publish",
			setup: publishedThenEdited,
			write: func(t *testing.T, w *cacheWorld) {
				_, _, err := w.schemas.Publish(ctx, schemaOwner, w.id, app.PublishInput{})
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.Equal(string(sc.Contract()), cacheDocV2)
			},
		},
		{
			name:  "unlink",
			setup: publishedThenEdited,
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.Unlink(ctx, schemaOwner, w.id)
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.Equal(string(sc.Contract()), cacheDocV2) // a draft runs on its working copy
			},
		},
		{
			name: "purge",
			write: func(t *testing.T, w *cacheWorld) {
				_, err := w.schemas.PurgeEnrichmentData(ctx, schemaOwner, w.id)
				is.New(t).NoErr(err)
			},
			check: func(is *is.I, sc *schema.Schema, err error) {
				is.NoErr(err)
				is.Equal(string(sc.Contract()), cacheDocV1)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newCacheWorld(t, time.Minute)
			if tt.setup != nil {
				tt.setup(t, w)
			}
			for range 2 {
				_, err := w.start()
				if tt.wantBefore == nil {
					is.NoErr(err)
				} else {
					is.True(errors.Is(err, tt.wantBefore))
				}
			}
			sent := len(w.notes.All())
			tt.write(t, w)
			readsWrite := w.reads() // the write's own reads (it reads the store)
			sc, err := w.start()
			tt.check(is, sc, err)
			is.Equal(w.reads(), readsWrite+1) // the start read the store again
			notes := w.notes.All()
			is.Equal(len(notes), sent+1)
			is.Equal(notes[len(notes)-1], "schema:"+schemaOwner.OrgID+"/"+w.id)
		})
	}
}

// TestSchemaCacheForget: another instance's notification of the schema,
// or of everything ("*", sent when the listener (re)connects), drops the
// entry; one of another schema or of another kind does not.
func TestSchemaCacheForget(t *testing.T) {
	tests := []struct {
		kind, id string
		drops    bool
	}{
		{"schema", "org1/{id}", true},
		{"*", "", true},
		{"schema", "unreadable", true}, // an id it cannot read drops everything
		{"schema", "org2/{id}", false},
		{"schema", "org1/other", false},
		{"key", "org1/{id}", false},
		{"user", "{id}", false},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+tt.id, func(t *testing.T) {
			is := is.New(t)
			w := newCacheWorld(t, time.Minute)
			_, err := w.start()
			is.NoErr(err)
			id := tt.id
			if id == "org1/{id}" || id == "org2/{id}" || id == "{id}" {
				id = id[:len(id)-4] + w.id
			}
			w.cache.Forget(tt.kind, id)
			_, err = w.start()
			is.NoErr(err)
			want := 1
			if tt.drops {
				want = 2
			}
			is.Equal(w.reads(), want)
		})
	}
}

// TestSchemaCacheTTL: an entry is used for TTL, then read again (the clock
// is the Clock port's: no test waits for it).
func TestSchemaCacheTTL(t *testing.T) {
	is := is.New(t)
	w := newCacheWorld(t, time.Minute)
	_, err := w.start()
	is.NoErr(err)
	w.clock.Add(time.Minute - time.Nanosecond)
	_, err = w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 1) // still fresh just before the TTL
	w.clock.Add(time.Nanosecond)
	_, err = w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 2)
	_, err = w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 2) // kept again from the new read
}

// TestSchemaCacheOff: a TTL of 0, or no cache at all, reads the store on
// every start; writes still work (and a nil cache announces nothing).
func TestSchemaCacheOff(t *testing.T) {
	for _, tt := range []struct {
		name string
		off  func(w *cacheWorld)
	}{
		{"ttl 0", func(w *cacheWorld) {
			w.cache = cache.NewSchemas(w.store, w.notes, w.clock, w.enrich.Log, cache.SchemaConfig{})
			w.enrich.SchemaCache, w.schemas.SchemaCache = w.cache, w.cache
		}},
		{"nil cache", func(w *cacheWorld) { w.enrich.SchemaCache, w.schemas.SchemaCache = nil, nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newCacheWorld(t, time.Minute)
			tt.off(w)
			for range 3 {
				_, err := w.start()
				is.NoErr(err)
			}
			is.Equal(w.reads(), 3)
			_, err := w.schemas.Update(context.Background(), schemaOwner, w.id, app.SchemaUpdate{Schema: json.RawMessage(cacheDocV2)})
			is.NoErr(err)
			sc, err := w.start()
			is.NoErr(err)
			is.Equal(string(sc.Contract()), cacheDocV2)
		})
	}
}

// TestSchemaCacheKeepsNoReadOverlappingADrop: a start whose read began
// before a write's drop does not keep what it read: it reads again, and
// the starts after it plan on that second read.
func TestSchemaCacheKeepsNoReadOverlappingADrop(t *testing.T) {
	is := is.New(t)
	w := newCacheWorld(t, time.Minute)
	w.store.gate, w.store.reading = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan error)
	go func() {
		_, err := w.start()
		done <- err
	}()
	<-w.store.reading
	w.cache.Forget("schema", schemaOwner.OrgID+"/"+w.id) // a write elsewhere, committed meanwhile
	close(w.store.gate)
	is.NoErr(<-done)
	is.Equal(w.reads(), 2) // the overlapped read was dropped and done again
	w.store.gate = nil
	_, err := w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 2) // the read after the drop was kept
	_, err = w.start()
	is.NoErr(err)
	is.Equal(w.reads(), 2)
}

// TestSchemaCacheConcurrentStartsAndWrites: job starts racing updates (run
// with -race) always plan on a version that was stored, and the start after
// the last write plans on it.
func TestSchemaCacheConcurrentStartsAndWrites(t *testing.T) {
	is := is.New(t)
	w := newCacheWorld(t, time.Minute)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				sc, err := w.start()
				if err != nil {
					t.Error(err)
					return
				}
				if c := string(sc.Contract()); c != cacheDocV1 && c != cacheDocV2 {
					t.Errorf("planned on %s", c)
				}
			}
		}()
	}
	for i := range 20 {
		doc := cacheDocV1
		if i%2 == 0 {
			doc = cacheDocV2
		}
		_, err := w.schemas.Update(ctx, schemaOwner, w.id, app.SchemaUpdate{Schema: json.RawMessage(doc)})
		is.NoErr(err)
	}
	wg.Wait()
	sc, err := w.start()
	is.NoErr(err)
	is.Equal(string(sc.Contract()), cacheDocV1) // the last update's
}

// TestSchemaCacheAIEditDrops: an AI edit job's write drops the entry, so
// the next job start plans on the edited working copy.
func TestSchemaCacheAIEditDrops(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	svc, store := newSchemaGen(t, &seqLLM{answers: []string{goodAnswer}})
	now := time.Now()
	notes := &fakeports.Notes{}
	c := cache.NewSchemas(store, notes, steppingClock{&now}, svc.Log, cache.SchemaConfig{TTL: time.Minute, MaxBytes: 1 << 20})
	enr := testEnricher(store, c, nil, oneModel{model.Info{Key: model.Key{Provider: "p", Model: "m"}}}, nil, svc.Log)
	svc.SchemaCache, svc.Saved.SchemaCache = c, c
	is.NoErr(store.CreateSchema(ctx, &schema.Schema{ID: "s1", OrgID: "org", Name: "Company", Content: json.RawMessage(cacheDocV1)}))
	start := func() *schema.Schema {
		sc, err := enr.PlannedSchema(ctx, "org", app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "s1",
			Models: []string{"p::m"}})
		is.NoErr(err)
		return sc
	}
	is.Equal(string(start().Content), cacheDocV1)
	out, _ := runSchemaJob(t, svc, job.TypeSchemaEdit, app.EditRequest{SchemaID: "s1", Prompt: "add founded"})
	is.True(out.Failure == nil)
	is.True(strings.Contains(string(start().Content), `"founded"`))
	is.Equal(notes.All(), []string{"schema:org/s1"})
}

// publishedThenEdited links and publishes the world's schema, then edits
// its working copy, so that jobs run on the published contract.
func publishedThenEdited(t *testing.T, w *cacheWorld) {
	is := is.New(t)
	ctx := context.Background()
	_, err := w.schemas.Link(ctx, schemaOwner, w.id)
	is.NoErr(err)
	_, _, err = w.schemas.Publish(ctx, schemaOwner, w.id, app.PublishInput{})
	is.NoErr(err)
	_, err = w.schemas.Update(ctx, schemaOwner, w.id, app.SchemaUpdate{Schema: json.RawMessage(cacheDocV2)})
	is.NoErr(err)
}
