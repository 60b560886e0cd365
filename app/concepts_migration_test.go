package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

const (
	srcModel = "builtin::ngram-384"
	dstModel = "test::ngram-256"
)

// directRunner is a JobRunner that runs each submitted job at once in
// its own goroutine, outside any job runtime: Cancel cancels the run the
// way the runtime does (its context's cause) and waits for it.
type directRunner struct {
	ports.JobRunner
	r    ports.Runner
	mu   sync.Mutex
	runs map[string]*directRun
}

type directRun struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	out    ports.Outcome
}

func (d *directRunner) Submit(_ context.Context, id, orgID string, t job.Type, request []byte, _ any) (*job.Job, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	run := &directRun{cancel: cancel, done: make(chan struct{})}
	d.mu.Lock()
	d.runs[id] = run
	d.mu.Unlock()
	j := &job.Job{ID: id, OrgID: orgID, Type: t, Request: request, State: job.Running}
	go func() {
		defer close(run.done)
		run.out = d.r.Run(ctx, &ports.Work{Job: j, Publish: func(job.Payload) {}})
	}()
	return j, nil
}

func (d *directRunner) Cancel(_ context.Context, _, id, reason string) error {
	d.mu.Lock()
	run := d.runs[id]
	d.mu.Unlock()
	if run == nil {
		return ports.ErrNotFound
	}
	run.cancel(&ports.JobCancelled{Reason: reason})
	<-run.done
	return nil
}

func (d *directRunner) wait(t *testing.T, id string) ports.Outcome {
	t.Helper()
	d.mu.Lock()
	run := d.runs[id]
	d.mu.Unlock()
	select {
	case <-run.done:
		return run.out
	case <-time.After(10 * time.Second):
		t.Fatal("the migration did not end")
	}
	return ports.Outcome{}
}

type migrationWorld struct {
	store    *memory.ConceptStore
	emb      *fakeports.Embedder
	concepts *app.ConceptService
	svc      *app.ConceptMigrationService
	runner   *directRunner
	owner    *access.Principal
}

// newMigrationWorld seeds org "o" with n concepts of each type, embedded
// in the source model, and a migration service on memory.
func newMigrationWorld(t *testing.T, n map[string]int, page int) *migrationWorld {
	t.Helper()
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := memory.NewConceptStore()
	emb := &fakeports.Embedder{Dims: map[string]int{dstModel: 256}}
	def, _ := model.ParseKey(srcModel)
	cs := &app.ConceptService{Store: store, Vectors: store, Embedder: emb, DefaultModel: def, Clock: fakeports.NewClock(),
		IDs: system.IDs{}, Log: lg, Migrations: memory.NewConceptMigrations()}
	for typ, count := range n {
		for i := range count {
			text := fmt.Sprintf("%s number %03d", typ, i)
			_, err := store.CreateConcept(context.Background(), ports.NewConcept{ID: fmt.Sprintf("%s-%03d", typ, i), OrgID: "o", Type: typ,
				AliasID: fmt.Sprintf("a-%s-%03d", typ, i), Text: text, EmbeddingModel: srcModel,
				Vector: concept.NgramEmbed(concept.Normalize(text), concept.NgramDims), CreatedAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	m := &app.ConceptMigrator{Concepts: cs, Store: cs.Migrations, Clock: cs.Clock, Log: lg, Page: page}
	dr := &directRunner{r: m, runs: map[string]*directRun{}}
	svc := &app.ConceptMigrationService{ConceptMigrator: m, JobRunner: dr, IDs: system.IDs{}}
	owner := &access.Principal{OrgID: "o", Role: access.Owner, Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}}
	return &migrationWorld{store: store, emb: emb, concepts: cs, svc: svc, runner: dr, owner: owner}
}

// modelOf is the model a lookup of typ reads.
func (w *migrationWorld) modelOf(t *testing.T, typ, text string) app.Resolution {
	t.Helper()
	res, err := w.concepts.Resolve(context.Background(), "o", app.ResolveRequest{Type: typ, Text: text, Mode: app.ResolveProbe})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestConceptMigrationMovesEverySlice(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w := newMigrationWorld(t, map[string]int{"company": 25, "city": 7}, 10)
	st, err := w.svc.Status(ctx, w.owner)
	is.NoErr(err)
	is.True(st == nil) // none ever ran
	m, err := w.svc.Start(ctx, w.owner, app.MigrationRequest{TargetModel: dstModel})
	is.NoErr(err)
	is.Equal(m.Status, ports.MigrationRunning)
	is.Equal(m.TotalCount, 32)
	is.Equal(m.ConceptTypes, []string{"city", "company"})
	out := w.runner.wait(t, m.ID)
	is.True(out.Failure == nil)
	st, err = w.svc.Status(ctx, w.owner)
	is.NoErr(err)
	is.Equal(st.Status, ports.MigrationCompleted)
	is.Equal(st.EmbeddedCount, 32)
	is.Equal(st.CutTypes, []string{"city", "company"})
	is.True(st.EmbeddingTokens > 0)
	is.True(st.CompletedAt != nil)
	facets, err := w.store.ConceptTypes(ctx, "o")
	is.NoErr(err)
	for _, f := range facets {
		is.Equal(f.EmbeddingModel, dstModel)
		is.Equal(f.Dims, 256)
	}
	// The source vectors are gone; lookups read the target model.
	left, err := w.store.Nearest(ctx, "o", concept.Slice{Type: "company", EmbeddingModel: srcModel}, concept.NgramEmbed("x", concept.NgramDims), 5)
	is.NoErr(err)
	is.Equal(len(left), 0)
	res := w.modelOf(t, "company", "company numbr 004")
	is.Equal(res.EmbeddingModel, dstModel)
	is.True(len(res.Neighbors) > 0)
	is.Equal(res.Neighbors[0].ConceptID, "company-004")
	for text, n := range w.emb.Counts(dstModel) {
		if text != "probe" && text != "company numbr 004" {
			is.Equal(n, 1) // each concept embedded once
		}
	}
	// Back again: a second migration may start once the first ended.
	m2, err := w.svc.Start(ctx, w.owner, app.MigrationRequest{TargetModel: srcModel, SourceModel: dstModel, ConceptTypes: []string{"city"}})
	is.NoErr(err)
	is.Equal(m2.TotalCount, 7)
	w.runner.wait(t, m2.ID)
	is.Equal(w.modelOf(t, "city", "city number 001").EmbeddingModel, srcModel)
}

// TestConceptMigrationLookupsKeepSourceUntilCutover: while a type's
// concepts are being re-embedded its lookups read the source model; a
// cancel leaves it there, and the type cut over before stays cut over.
func TestConceptMigrationLookupsKeepSourceUntilCutover(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w := newMigrationWorld(t, map[string]int{"company": 25, "city": 7}, 10)
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.emb.Hook = func(ctx context.Context, m string, texts []string) error {
		if m == dstModel && texts[0] == "company number 010" {
			once.Do(func() { close(held) })
			select {
			case <-hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	m, err := w.svc.Start(ctx, w.owner, app.MigrationRequest{TargetModel: dstModel})
	is.NoErr(err)
	<-held
	is.Equal(w.modelOf(t, "company", "company number 003").EmbeddingModel, srcModel)
	is.Equal(w.modelOf(t, "company", "company number 003").Outcome.Kind, concept.ExactHit)
	res := w.modelOf(t, "company", "company numbr 003")
	is.Equal(res.EmbeddingModel, srcModel)
	is.Equal(res.Neighbors[0].ConceptID, "company-003")
	is.Equal(w.modelOf(t, "city", "city numbr 003").EmbeddingModel, dstModel) // city sorts first: cut over
	_, err = w.svc.Start(ctx, w.owner, app.MigrationRequest{TargetModel: dstModel})
	var ae *app.Error
	is.True(errors.As(err, &ae))
	is.Equal(ae.Code, app.CodeMigrationRunning)

	st, err := w.svc.Cancel(ctx, w.owner)
	is.NoErr(err)
	is.Equal(st.ID, m.ID)
	is.Equal(st.Status, ports.MigrationCancelled)
	is.Equal(st.CutTypes, []string{"city"})
	is.Equal(st.EmbeddedCount, 17) // city's 7 and company's first page
	c, err := w.store.GetConcept(ctx, "o", "company-020")
	is.NoErr(err)
	is.Equal(c.EmbeddingModel, srcModel)
	is.Equal(w.modelOf(t, "company", "company numbr 003").Neighbors[0].ConceptID, "company-003")
	is.Equal(w.modelOf(t, "city", "city numbr 003").Neighbors[0].ConceptID, "city-003")
	// The target vectors of the first company page are gone with the
	// cancel; the city slice, cut over, keeps its own.
	is.Equal(len(targetVectors(t, w.concepts, w.store, "o", "company")), 0)
	is.Equal(len(targetVectors(t, w.concepts, w.store, "o", "city")), 7)
	_, err = w.svc.Cancel(ctx, w.owner)
	is.True(errors.As(err, &ae))
	is.Equal(ae.Code, app.CodeMigrationNotRunning)
}

// TestConceptMigrationResumesFromItsCursor: a run that loses its job
// mid-way leaves its cursor; the next run re-embeds only the page that
// was in flight.
func TestConceptMigrationResumesFromItsCursor(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w := newMigrationWorld(t, map[string]int{"company": 45}, 10)
	lost := make(chan struct{})
	w.emb.Hook = func(ctx context.Context, m string, texts []string) error {
		if m == dstModel && texts[0] == "company number 020" {
			select {
			case <-lost:
			default:
				close(lost)
				<-ctx.Done() // the replica dies with this page in flight
				return ctx.Err()
			}
		}
		return nil
	}
	m := ports.ConceptMigration{ID: "mig", OrgID: "o", SourceModel: srcModel, TargetModel: dstModel, ConceptTypes: []string{"company"},
		AllTypes: true, TotalCount: 45, StartedAt: time.Now()}
	is.NoErr(w.svc.Store.StartMigration(ctx, m))
	work := &ports.Work{Job: &job.Job{ID: "mig", OrgID: "o", Type: job.TypeConceptMigration}, Publish: func(job.Payload) {}}
	runCtx, kill := context.WithCancelCause(ctx)
	go func() { <-lost; kill(ports.ErrJobLost) }()
	out := w.svc.ConceptMigrator.Run(runCtx, work)
	is.True(out.Failure == nil)
	mid, err := w.svc.Store.GetMigration(ctx, "o", "mig")
	is.NoErr(err)
	is.Equal(mid.Status, ports.MigrationRunning)
	is.Equal(mid.EmbeddedCount, 20)
	is.Equal(mid.Cursor, "company-019")

	out = w.svc.ConceptMigrator.Run(ctx, work)
	is.True(out.Failure == nil)
	end, err := w.svc.Store.GetMigration(ctx, "o", "mig")
	is.NoErr(err)
	is.Equal(end.Status, ports.MigrationCompleted)
	is.Equal(end.EmbeddedCount, 45)
	twice := 0
	for _, n := range w.emb.Counts(dstModel) {
		is.True(n <= 2)
		if n == 2 {
			twice++
		}
	}
	is.True(twice <= 10) // at most the page in flight
}

// TestConceptMigrationPreview: counts, tokens and the pairs that only the
// target model puts together.
func TestConceptMigrationPreview(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w := newMigrationWorld(t, map[string]int{"company": 3}, 10)
	for i, text := range []string{"acme corporation", "acme industries"} {
		_, err := w.store.CreateConcept(ctx, ports.NewConcept{ID: fmt.Sprintf("acme-%d", i), OrgID: "o", Type: "company",
			AliasID: fmt.Sprintf("a-acme-%d", i), Text: text, EmbeddingModel: srcModel, Vector: concept.NgramEmbed(text, concept.NgramDims)})
		is.NoErr(err)
	}
	w.emb.FirstWord = map[string]bool{dstModel: true}
	p, err := w.svc.Preview(ctx, w.owner, app.MigrationRequest{TargetModel: dstModel})
	is.NoErr(err)
	is.Equal(p.ConceptCount, 5)
	is.Equal(p.CollisionsSampled, 5)
	is.Equal(p.TargetDims, 256)
	is.Equal(p.SourceModel, srcModel)
	is.True(p.EstimatedTokens > 0)
	is.Equal(p.EstimatedCostUSD, 0.0)
	// The three "company number …" concepts collide too (one first word).
	is.Equal(len(p.Collisions), 4)
	found := false
	for _, c := range p.Collisions {
		if c.AText == "acme corporation" && c.BText == "acme industries" {
			found = true
			is.True(c.SimilarityNow < 0.92)
			is.True(c.SimilarityAfter > 0.999)
		}
	}
	is.True(found)
	st, err := w.svc.Status(ctx, w.owner)
	is.NoErr(err)
	is.True(st == nil) // a preview starts nothing
}

func TestConceptMigrationRefusals(t *testing.T) {
	ctx := context.Background()
	w := newMigrationWorld(t, map[string]int{"company": 1}, 10)
	editor := &access.Principal{OrgID: "o", Role: access.Editor, Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}}
	tests := []struct {
		name  string
		p     *access.Principal
		req   app.MigrationRequest
		field string
		kind  error
	}{
		{"editor", editor, app.MigrationRequest{TargetModel: dstModel}, "", access.ErrForbidden},
		{"no target", w.owner, app.MigrationRequest{}, "target_model", ports.ErrInvalid},
		{"bad target", w.owner, app.MigrationRequest{TargetModel: "nope"}, "target_model", ports.ErrInvalid},
		{"same model", w.owner, app.MigrationRequest{TargetModel: srcModel}, "target_model", ports.ErrInvalid},
		{"bad type", w.owner, app.MigrationRequest{TargetModel: dstModel, ConceptTypes: []string{"a\x00b"}}, "concept_types", ports.ErrInvalid},
		{"bad source", w.owner, app.MigrationRequest{TargetModel: dstModel, SourceModel: "x"}, "source_model", ports.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := w.svc.Start(ctx, tt.p, tt.req)
			is.True(errors.Is(err, tt.kind))
			if tt.field != "" {
				var ae *app.Error
				is.True(errors.As(err, &ae))
				is.Equal(ae.Field, tt.field)
			}
		})
	}
}

// targetVectors are the concepts of typ that hold a vector in dstModel.
func targetVectors(t *testing.T, cs *app.ConceptService, vx ports.VectorIndex, org, typ string) []concept.Neighbor {
	t.Helper()
	dst, _ := model.ParseKey(dstModel)
	vecs, _, err := cs.Embed(context.Background(), org, dst, []string{typ + " number 003"})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := vx.Nearest(context.Background(), org, concept.Slice{Type: typ, EmbeddingModel: dstModel}, vecs[0], 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}
