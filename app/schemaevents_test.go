package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

type runnerFunc func(ctx context.Context, w *ports.Work) ports.Outcome

func (f runnerFunc) Run(ctx context.Context, w *ports.Work) ports.Outcome { return f(ctx, w) }

func TestSchemaEvents(t *testing.T) {
	is := is.New(t)
	render := func(rc *enrichment.Record) (json.RawMessage, error) {
		return json.Marshal(map[string]string{"id": rc.ID})
	}
	recs := []*enrichment.Record{
		{ID: "r1", OrgID: "o", SchemaID: "s", Type: enrichment.RecordEnrichment},
		{ID: "r2", OrgID: "o", SchemaID: "s", Type: enrichment.RecordFusion},
		{ID: "r3", OrgID: "o", Type: enrichment.RecordEnrichment},                      // no schema
		{ID: "r4", OrgID: "o", SchemaID: "s", Type: enrichment.RecordSchemaGeneration}, // not an enrichment
	}
	inner := runnerFunc(func(context.Context, *ports.Work) ports.Outcome { return ports.Outcome{Records: recs} })
	se := &app.SchemaEvents{Render: render, Clock: fixedClock{time.Unix(100, 0)}}
	out := se.Wrap(inner).Run(context.Background(), &ports.Work{})
	is.Equal(len(out.SchemaEvents), 2)
	is.Equal(out.SchemaEvents[0].Event, webhook.EnrichmentResult)
	is.Equal(string(out.SchemaEvents[0].Data), `{"id":"r1"}`)
	is.Equal(out.SchemaEvents[0].SchemaID, "s")
	again := se.Wrap(inner).Run(context.Background(), &ports.Work{})
	is.Equal(again.SchemaEvents[0].ID, out.SchemaEvents[0].ID) // stable per record

	// The entity layer's outcome goes in as "database"; a rejection adds
	// its own event.
	se.Database = func(_ *ports.Outcome, rc *enrichment.Record) (json.RawMessage, bool) {
		if rc.ID == "r1" {
			return json.RawMessage(`{"saved":false,"status":"rejected"}`), true
		}
		return nil, false
	}
	out = se.Wrap(inner).Run(context.Background(), &ports.Work{})
	is.Equal(len(out.SchemaEvents), 3)
	is.Equal(string(out.SchemaEvents[0].Data), `{"id":"r1","database":{"saved":false,"status":"rejected"}}`)
	is.Equal(out.SchemaEvents[1].Event, webhook.RejectedForDatabaseSave)
	is.True(out.SchemaEvents[1].ID != out.SchemaEvents[0].ID)
	is.Equal(string(out.SchemaEvents[2].Data), `{"id":"r2"}`)
}

// TestRecordDatabase: a run's Outcome.Database gives each decided record
// its DatabaseSyncOutcome and says whether it was rejected.
func TestRecordDatabase(t *testing.T) {
	is := is.New(t)
	out := &ports.Outcome{Database: map[string]dbsync.Outcome{
		"r1": {Status: dbsync.StatusRejected, Reason: "gap"},
		"r2": {Saved: true, Status: dbsync.StatusSaved, DeltaCount: 1, BatchID: "b"},
	}}
	db, rejected := app.RecordDatabase(out, &enrichment.Record{ID: "r1"})
	is.True(rejected)
	var o map[string]any
	is.NoErr(json.Unmarshal(db, &o))
	is.Equal(o["status"], "rejected")
	is.Equal(o["reason"], "gap")
	db, rejected = app.RecordDatabase(out, &enrichment.Record{ID: "r2"})
	is.True(!rejected)
	is.NoErr(json.Unmarshal(db, &o))
	is.Equal(o["batch_id"], "b")
	db, rejected = app.RecordDatabase(out, &enrichment.Record{ID: "r3"})
	is.True(db == nil && !rejected)
}
