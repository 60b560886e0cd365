package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// TestShapesStayAsBuilt: runs share a contract's decoded document and its
// shapes (app/shape.go), so nothing a run does may change them. Runs of
// every kind that reads them (strategies, languages, preserved values,
// fusion of two models) go first; then each cached document must equal
// one built afresh, and a second round must answer as the first did.
func TestShapesStayAsBuilt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	reg, err := llm.NewRegistry(llm.Config{Sandbox: true})
	is.NoErr(err)
	store := memory.NewSchemaStore()
	sc := &schema.Schema{ID: "sch", OrgID: "org", Name: "Company", Content: json.RawMessage(`{"type": "object",
	  "required": ["name"],
	  "x-expertiseDomains": {"finance": {"name": "Finance"}},
	  "properties": {
	    "name": {"type": "string"},
	    "internal_id": {"type": "string", "preserve": true},
	    "summary": {"type": "string", "multilingual": true},
	    "revenue": {"type": "number", "expertise": "finance"},
	    "ticker": {"type": "string", "expertise": "finance"},
	    "hq": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}}}}`)}
	is.NoErr(store.CreateSchema(ctx, sc))
	svc := testEnricher(store, nil, reg, reg, nil, nil)
	svc.Contracts, svc.Shapes = cache.NewMemo[[32]byte, map[string]any](1024), cache.NewMemo[string, *app.Shape](1024)

	type combo struct {
		strategy string
		langs    []string
		models   []string
	}
	var combos []combo
	for _, st := range []string{"single_pass", "multi_expertise"} {
		for _, langs := range [][]string{nil, {"en", "de"}} {
			for _, models := range [][]string{{"sandbox::echo"}, {"sandbox::echo", "sandbox::alt"}} {
				combos = append(combos, combo{st, langs, models})
			}
		}
	}
	round := func() []string {
		var results []string
		for _, c := range combos {
			req := app.EnrichRequest{EntityData: json.RawMessage(`{"name": "Acme", "internal_id": "X-1"}`), SchemaID: sc.ID,
				Models: c.models, Strategy: c.strategy, Languages: c.langs}
			body, err := jobcodec.New().EncodeEnrich(req)
			is.NoErr(err)
			out := svc.Run(ctx, &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: job.TypeEnrichment, Request: body},
				Publish: func(job.Payload) {}})
			if out.Failure != nil {
				t.Fatalf("%+v: %s: %s", c, out.Failure.Code, out.Failure.Msg)
			}
			results = append(results, string(out.Result))
		}
		return results
	}
	first := round()

	var fresh map[string]any
	is.NoErr(json.Unmarshal(sc.Contract(), &fresh))
	preserve := app.PreservePaths(fresh)
	is.Equal(len(preserve), 1) // the test's schema preserves internal_id
	for _, c := range combos {
		strategy, err := enrichment.ParseStrategy(c.strategy)
		is.NoErr(err)
		contract, localized, doc, calls, ok := svc.CachedShape(sc, c.langs, strategy)
		is.True(ok)                                 // every combination's shape was cached
		is.True(reflect.DeepEqual(contract, fresh)) // the decoded contract is as decoded
		langs := c.langs
		if langs == nil {
			langs = []string{app.DefaultLanguage}
		}
		wantLocalized := enrichment.Localize(fresh, langs)
		wantDoc := enrichment.WithoutPaths(wantLocalized, preserve)
		is.True(reflect.DeepEqual(localized, wantLocalized))
		is.True(reflect.DeepEqual(doc, wantDoc))
		domains, err := enrichment.Plan(wantDoc)
		is.NoErr(err)
		is.True(reflect.DeepEqual(calls, enrichment.Calls(enrichment.Choose(strategy, domains).Strategy, wantDoc, domains)))
	}
	is.Equal(round(), first) // and runs on the cached shapes answer alike
}

// TestShapeErrorsAreNotKept: a stored contract that does not compile (saved
// before a validation, or written by hand) refuses every start with
// schema_invalid, each time (a failed shape is not cached), and a preserved
// value that does not fit its property is still reported first, as before
// shapes.
func TestShapeErrorsAreNotKept(t *testing.T) {
	ctx := context.Background()
	store := memory.NewSchemaStore()
	sc := &schema.Schema{ID: "bad", OrgID: "org", Name: "Broken", Content: json.RawMessage(`{"type": "object",
	  "properties": {"name": {"type": "string"}, "internal_id": {"type": "string", "preserve": true},
	    "founded": {"type": 5}}}`)}
	if err := store.CreateSchema(ctx, sc); err != nil {
		t.Fatal(err)
	}
	reg, err := llm.NewRegistry(llm.Config{Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := testEnricher(store, nil, reg, reg, nil, nil)
	svc.Contracts, svc.Shapes = cache.NewMemo[[32]byte, map[string]any](1024), cache.NewMemo[string, *app.Shape](1024)
	for _, tt := range []struct {
		name, entity, code string
	}{
		{"a preserved value that does not fit", `{"name": "Acme", "internal_id": 7}`, app.CodeInputContract},
		{"the contract does not compile", `{"name": "Acme", "internal_id": "X-1"}`, "schema_invalid"},
		{"nor does it the second time", `{"name": "Acme", "internal_id": "X-1"}`, "schema_invalid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := svc.PlannedSchema(ctx, "org", app.EnrichRequest{EntityData: json.RawMessage(tt.entity), SchemaID: sc.ID,
				Models: []string{"sandbox::echo"}, Strategy: "single_pass"})
			var e *app.Error
			is.True(errors.As(err, &e))
			is.Equal(e.Code, tt.code)
		})
	}
	_, _, _, _, cached := svc.CachedShape(sc, nil, enrichment.SinglePass)
	is.New(t).True(!cached) // no shape was kept for it
}
