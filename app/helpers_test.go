package app_test

import (
	"io"
	"log/slog"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// testEnricher is an Enricher on store (and cache, nil for none) that
// calls llm for the models of catalog, with no provider keys and no pinned
// defaults, retrying at once; clock nil is the system clock, lg nil
// discards.
func testEnricher(store ports.SchemaStore, cache ports.SchemaCache, llm ports.LLM, catalog ports.ModelCatalog, clock ports.Clock,
	lg *slog.Logger) *app.Enricher {
	if clock == nil {
		clock = system.Clock{}
	}
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	models := app.NewModelService(nil, catalog, nil)
	calls := app.NewCalls(llm, nil, nil, clock, system.IDs{}, lg, app.CallsConfig{})
	e := app.NewEnricher(store, nil, cache, jsonschema.New(schema.Limits{}), jobcodec.New(), models, calls, app.NewFuser(models, calls, clock, lg), clock, lg,
		app.EnrichMemos{}, app.EnrichConfig{}, nil, nil)
	e.RetryBackoff = 1
	return e
}
