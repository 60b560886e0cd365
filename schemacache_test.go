package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// bus is an in-process ports.Invalidations shared by instances: like
// PostgreSQL's NOTIFY, it delivers every announcement to every listener
// (the announcer's own included), asynchronously, and says "*" when a
// listener connects.
type bus struct {
	mu   sync.Mutex
	subs []chan [2]string
}

func (b *bus) Publish(_ context.Context, kind, id string) error {
	b.send(kind, id)
	return nil
}

func (b *bus) PublishAll(ctx context.Context, kind string, ids []string) error {
	for _, id := range ids {
		b.send(kind, id)
	}
	return nil
}

func (b *bus) send(kind, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.subs {
		c <- [2]string{kind, id}
	}
}

func (b *bus) Listen(ctx context.Context, fn func(kind, id string)) error {
	c := make(chan [2]string, 1024)
	b.mu.Lock()
	b.subs = append(b.subs, c)
	b.mu.Unlock()
	fn("*", "")
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-c:
			fn(n[0], n[1])
		}
	}
}

// sharedMemory returns the stores of one more instance on one set of
// memory repositories: each instance has its own job queue (a process's
// own, as the in-process queue is) and unit of work on it.
func sharedMemory(schemas *memory.SchemaStore) func() *Stores {
	orgs, users, keys := memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore()
	records, jobs, events, refresh := memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore()
	ledger, pkeys, providers := memory.NewUsageLedger(), memory.NewProviderKeyStore(), memory.NewProviderStore()
	return func() *Stores {
		queue := inproc.New()
		return &Stores{Orgs: orgs, Users: users, Keys: keys, Schemas: schemas, Records: records, Jobs: jobs, Events: events,
			RefreshTokens: refresh, Queue: queue, ProviderKeys: pkeys, Usage: ledger, OrgProviders: providers,
			UoW:  memory.NewUnitOfWork(orgs, users, keys, schemas, records, jobs, events, refresh, queue).WithUsage(ledger),
			Kind: "memory"}
	}
}

// countedStore counts schema reads.
type countedStore struct {
	ports.SchemaStore
	gets atomic.Int32
}

func (c *countedStore) GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error) {
	c.gets.Add(1)
	return c.SchemaStore.GetSchema(ctx, orgID, id)
}

// TestSchemaCacheAcrossInstances: two instances on one store, sharing an
// invalidation channel. Job starts on B are planned from its cache, and an
// edit, a trash and a restore made through A reach B's next job starts
// as soon as the announcement arrives; a reconnection ("*") drops B's
// cache too, so a change whose announcement was lost is seen then.
func TestSchemaCacheAcrossInstances(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	schemas, notes := &countedStore{SchemaStore: memory.NewSchemaStore()}, &bus{}
	instance := sharedMemory(schemas.SchemaStore.(*memory.SchemaStore))
	cfg := Config{Sandbox: true, PasswordHashing: "fast", SchemaCacheTTL: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var ab [2]*Embedded
	for i := range ab {
		st := instance()
		st.Schemas, st.Invalidations = schemas, notes
		e, err := NewEmbeddedWithStores(ctx, cfg, st)
		is.NoErr(err)
		defer e.Close()
		ab[i] = e
	}
	a, b := ab[0], ab[1]

	sess, err := a.Access.Register(ctx, "two@example.com", "a long password", "Acme")
	is.NoErr(err)
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	sc, err := a.Schemas.Create(ctx, p, app.NewSchemaInput{Name: "Company",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
	is.NoErr(err)
	v2 := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"}}}`)
	v3 := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"country":{"type":"string"}}}`)

	start := func() (map[string]any, error) {
		res, err := b.Enrichment.Sync(ctx, p, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: sc.ID,
			Models: []string{"sandbox::echo"}})
		if err != nil {
			return nil, err
		}
		return res.Result, nil
	}
	// until repeats a job start on B until ok, for at most a second.
	until := func(what string, ok func(map[string]any, error) bool) {
		t.Helper()
		t0 := time.Now()
		for {
			res, err := start()
			if ok(res, err) {
				t.Logf("%s seen on B after %v", what, time.Since(t0))
				return
			}
			if time.Since(t0) > time.Second {
				t.Fatalf("%s: B still starts jobs with %v, %v", what, res, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	has := func(field string) func(map[string]any, error) bool {
		return func(res map[string]any, err error) bool { _, ok := res[field]; return err == nil && ok }
	}

	// Once the announcements of the creation have arrived, B plans from
	// its cache.
	var res map[string]any
	for t0 := time.Now(); ; {
		before := schemas.gets.Load()
		res, err = start()
		is.NoErr(err)
		if schemas.gets.Load() == before {
			break
		}
		if time.Since(t0) > time.Second {
			t.Fatal("every job start on B reads the schema")
		}
	}
	_, ok := res["city"]
	is.True(!ok)

	_, err = a.Schemas.Update(ctx, p, sc.ID, app.SchemaUpdate{Schema: v2})
	is.NoErr(err)
	until("the edit", has("city"))

	_, err = a.Schemas.Delete(ctx, p, sc.ID, false)
	is.NoErr(err)
	until("the trash", func(_ map[string]any, err error) bool { return errors.Is(err, ports.ErrNotFound) })

	_, err = a.Schemas.Restore(ctx, p, sc.ID)
	is.NoErr(err)
	until("the restore", has("city"))

	// A change nobody announced (a lost notification) stays unseen until
	// the listener reconnects, which says "*".
	_, err = schemas.UpdateSchema(ctx, p.OrgID, sc.ID, func(s *schema.Schema) error { s.SetContent(v3); return nil })
	is.NoErr(err)
	res, err = start()
	is.NoErr(err)
	_, ok = res["country"]
	is.True(!ok)
	notes.send("*", "")
	until("the reconnection", has("country"))
}
