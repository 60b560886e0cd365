package jobrace_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
	"github.com/entityenrich/enrich/test/pgtest"
)

const (
	migSource = "builtin::ngram-384"
	migTarget = "test::ngram-256"
)

// migrationReplica is one replica's job runtime with the migration's
// Runner, on its own connection pool.
type migrationReplica struct {
	engine *jobrun.Engine
	svc    *app.ConceptMigrationService
	emb    *fakeports.Embedder
}

func startMigrationReplica(t *testing.T, dsn, owner string, hook func(context.Context, string, []string) error) *migrationReplica {
	t.Helper()
	ctx := context.Background()
	lg := slog.New(slog.DiscardHandler)
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	codec := jobcodec.Events{}
	q, err := postgres.NewQueue(db, postgres.QueueConfig{}, lg)
	if err != nil {
		t.Fatal(err)
	}
	uow := postgres.NewUnitOfWork(db.DB, codec, func(tx bun.Tx) ports.JobEnqueuer { return q.TxEnqueuer(tx) })
	jobs, events := postgres.NewJobStore(db.DB), postgres.NewEventLog(db.DB, codec)
	hub := eventhub.New(uow, events, systemClock{}, lg, eventhub.Config{})
	emb := &fakeports.Embedder{Dims: map[string]int{migTarget: 256}, Hook: hook}
	def, _ := model.ParseKey(migSource)
	cs := &app.ConceptService{Store: postgres.NewConceptStore(db.DB), Vectors: postgres.NewExactVectorIndex(db.DB), Embedder: emb,
		DefaultModel: def, Clock: systemClock{}, IDs: system.IDs{}, Log: lg, Migrations: postgres.NewConceptMigrations(db.DB)}
	mig := &app.ConceptMigrator{Concepts: cs, Store: cs.Migrations, Clock: systemClock{}, Log: lg, Page: 10}
	eng := jobrun.New(jobrun.Deps{UoW: uow, Jobs: jobs, Events: events, Queue: q, Stream: hub, Clock: systemClock{}, Log: lg},
		jobrun.Config{Owner: owner, LeaseTTL: time.Second, SweepEvery: 200 * time.Millisecond, Workers: 2, PerOrg: 2, ReleaseAtShutdown: true},
		jobrun.Runners{job.TypeConceptMigration: mig})
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &migrationReplica{engine: eng, emb: emb,
		svc: &app.ConceptMigrationService{ConceptMigrator: mig, JobRunner: eng, Jobs: jobs, IDs: system.IDs{}}}
}

// TestConceptMigrationSurvivesAKilledReplica: replica A runs a migration
// and loses its database (a cut connection: its lease lapses, as a dead
// replica's does) with a page in flight. Replica B takes the job over and
// resumes from the durable cursor: the progress never goes back, no
// concept is embedded twice but the page in flight, and every concept ends
// cut over to the target model.
// seedMigrationSource migrates a new native PostgreSQL database and
// creates n concepts of one type in the source model, in an organization
// named from prefix.
func seedMigrationSource(t *testing.T, prefix string, n int) (string, *postgres.DB, *postgres.ConceptStore, string) {
	t.Helper()
	is := is.New(t)
	ctx := context.Background()
	dsn := pgtest.Native(t)
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	is.NoErr(err)
	t.Cleanup(func() { db.Close() })
	is.NoErr(postgres.Migrate(ctx, db.DB))
	org := prefix + system.IDs{}.NewID()
	store := postgres.NewConceptStore(db.DB)
	for i := range n {
		text := fmt.Sprintf("company number %03d", i)
		_, err := store.CreateConcept(ctx, ports.NewConcept{ID: fmt.Sprintf("%s-c%03d", org, i), OrgID: org, Type: "company",
			AliasID: fmt.Sprintf("%s-a%03d", org, i), Text: text, EmbeddingModel: migSource,
			Vector: concept.NgramEmbed(concept.Normalize(text), concept.NgramDims), CreatedAt: time.Now()})
		is.NoErr(err)
	}
	return dsn, db, store, org
}

func TestConceptMigrationSurvivesAKilledReplica(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	const n = 60
	dsn, db, store, org := seedMigrationSource(t, "org_mig_", n)

	proxy, proxied := pgtest.ProxyDSN(t, dsn)
	held := make(chan struct{})
	var once sync.Once
	a := startMigrationReplica(t, proxied, "replica-a", func(ctx context.Context, m string, texts []string) error {
		if m == migTarget && texts[0] == "company number 030" {
			once.Do(func() { close(held) })
			<-ctx.Done() // in flight until the replica is gone
			return ctx.Err()
		}
		return nil
	})
	owner := &access.Principal{OrgID: org, Role: access.Owner, Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}}
	m, err := a.svc.Start(ctx, owner, app.MigrationRequest{TargetModel: migTarget})
	is.NoErr(err)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("replica A never reached the fourth page")
	}
	migs := postgres.NewConceptMigrations(db.DB)
	mid, err := migs.GetMigration(ctx, org, m.ID)
	is.NoErr(err)
	is.Equal(mid.EmbeddedCount, 30)
	proxy.Cut() // replica A is gone: it renews no lease and writes nothing

	b := startMigrationReplica(t, dsn, "replica-b", nil)
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.engine.Stop(stop)
	})
	last := mid.EmbeddedCount
	var end *ports.ConceptMigration
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		end, err = b.svc.Status(ctx, owner)
		is.NoErr(err)
		is.True(end.EmbeddedCount >= last) // never goes backwards
		last = end.EmbeddedCount
		if end.Status != ports.MigrationRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the migration did not end after the takeover: %+v", end)
		}
	}
	is.Equal(end.Status, ports.MigrationCompleted)
	is.Equal(end.EmbeddedCount, n)
	is.Equal(end.CutTypes, []string{"company"})
	facets, err := store.ConceptTypes(ctx, org)
	is.NoErr(err)
	is.Equal(len(facets), 1)
	is.Equal(facets[0].EmbeddingModel, migTarget)
	is.Equal(facets[0].ConceptCount, n)
	is.Equal(facets[0].Dims, 256)
	ca, cb := a.emb.Counts(migTarget), b.emb.Counts(migTarget)
	for i := range n {
		text := fmt.Sprintf("company number %03d", i)
		is.Equal(ca[text]+cb[text], 1) // the page in flight was never answered on A
		if i < 30 {
			is.Equal(cb[text], 0) // done before the kill: not redone
		}
	}
	// The job ends once Run returns, just after the migration's last save.
	var j *job.Job
	eventually(t, func() bool {
		j, err = postgres.NewJobStore(db.DB).GetJob(ctx, org, m.ID)
		return err == nil && j.State.Terminal()
	})
	is.Equal(j.State, job.Completed)
	is.True(j.Attempt >= 2) // taken over
}

// TestConceptMigrationCancelDropsTargetVectors: a migration cancelled with
// its slice half-embedded leaves no vector in the target model (the source
// vectors stay authoritative), on PostgreSQL's exact index.
func TestConceptMigrationCancelDropsTargetVectors(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	const n = 30
	dsn, db, store, org := seedMigrationSource(t, "org_migc_", n)
	held := make(chan struct{})
	var once sync.Once
	r := startMigrationReplica(t, dsn, "replica-c", func(ctx context.Context, m string, texts []string) error {
		if m == migTarget && texts[0] == "company number 020" {
			once.Do(func() { close(held) })
			<-ctx.Done() // in flight until the cancel
			return ctx.Err()
		}
		return nil
	})
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.engine.Stop(stop)
	})
	owner := &access.Principal{OrgID: org, Role: access.Owner, Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}}
	_, err := r.svc.Start(ctx, owner, app.MigrationRequest{TargetModel: migTarget})
	is.NoErr(err)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the migration never reached its third page")
	}
	vx := postgres.NewExactVectorIndex(db.DB)
	probe := func() int {
		t.Helper()
		resp, err := r.emb.Embed(ctx, ports.EmbedRequest{Model: model.Key{Provider: "test", Model: "ngram-256"}, Texts: []string{"company number 003"}})
		is.NoErr(err)
		ns, err := vx.Nearest(ctx, org, concept.Slice{Type: "company", EmbeddingModel: migTarget}, resp.Vectors[0], 100)
		is.NoErr(err)
		return len(ns)
	}
	is.Equal(probe(), 20) // two pages written in the target model
	st, err := r.svc.Cancel(ctx, owner)
	is.NoErr(err)
	is.Equal(st.Status, ports.MigrationCancelled)
	is.Equal(probe(), 0) // gone with the cancel
	facets, err := store.ConceptTypes(ctx, org)
	is.NoErr(err)
	is.Equal(len(facets), 1)
	is.Equal(facets[0].EmbeddingModel, migSource) // the source slice stands, whole
	is.Equal(facets[0].ConceptCount, n)
}

// TestConceptRouteCacheAcrossReplicas: two replicas keep the concept
// routes for an hour; a migration's cut-over saved through one is seen by
// the other's next lookups once NOTIFY reaches it, as is a change of the
// embedding-model setting, on native PostgreSQL.
func TestConceptRouteCacheAcrossReplicas(t *testing.T) {
	is := is.New(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	dsn, _, _, org := seedMigrationSource(t, "org_route_", 0)
	replica := func() *cache.ConceptRoutes {
		db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
		is.NoErr(err)
		t.Cleanup(func() { db.Close() })
		notes := postgres.NewInvalidations(db.DB, dsn, slog.New(slog.DiscardHandler))
		r := cache.NewConceptRoutes(postgres.NewEmbeddingSettings(db.DB), postgres.NewConceptMigrations(db.DB), notes, systemClock{},
			slog.New(slog.DiscardHandler), cache.ConceptRouteConfig{TTL: time.Hour})
		go func() { _ = notes.Listen(ctx, r.Forget) }()
		return r
	}
	a, b := replica(), replica()
	_, err := b.Migrations().LatestMigration(ctx, org)
	is.True(errors.Is(err, ports.ErrNotFound)) // kept: none ran
	_, set, err := b.Settings().EmbeddingModel(ctx, org)
	is.NoErr(err)
	is.True(!set)

	m := ports.ConceptMigration{ID: "mig_" + org, OrgID: org, SourceModel: migSource, TargetModel: migTarget,
		ConceptTypes: []string{"company"}, StartedAt: time.Now()}
	is.NoErr(a.Migrations().StartMigration(ctx, m))
	m.Status, m.CutTypes = ports.MigrationRunning, []string{"company"}
	is.NoErr(a.Migrations().SaveMigration(ctx, m))
	eventually(t, func() bool {
		got, err := b.Migrations().LatestMigration(ctx, org)
		return err == nil && slices.Equal(got.CutTypes, []string{"company"})
	})
	is.NoErr(a.Settings().SetEmbeddingModel(ctx, org, migTarget))
	eventually(t, func() bool {
		got, set, err := b.Settings().EmbeddingModel(ctx, org)
		return err == nil && set && got == migTarget
	})
}

// eventually waits up to 10 s for ok.
func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not seen within 10 s")
		}
	}
}
