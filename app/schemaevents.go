package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// SchemaEvents gives the records a run ends with their schema events,
// which the job's end queues for the schemas' subscriptions in its commit
// (ports.JobEnd.SchemaEvents): enrichment_result for every enrichment or
// fusion record of a schema, and rejected_for_database_save for a record
// the entity layer refused. A schema without subscriptions queues nothing
// (the store fans the events out to the subscriptions it has at commit).
type SchemaEvents struct {
	// Render is a record as the records API shows it (GET
	// /api/records/{id}), the event's data.
	Render func(rc *enrichment.Record) (json.RawMessage, error)
	// Database is the entity layer's outcome of a record in a run's
	// Outcome (its DatabaseSyncOutcome as JSON), nil when there is none,
	// and whether the entity layer rejected the record. Nil: no record
	// has one.
	Database func(out *ports.Outcome, rc *enrichment.Record) (outcome json.RawMessage, rejected bool)
	Clock    ports.Clock
}

// Wrap returns r whose Outcomes carry their records' schema events.
func (s *SchemaEvents) Wrap(r ports.Runner) ports.Runner { return eventsRunner{r: r, s: s} }

type eventsRunner struct {
	r ports.Runner
	s *SchemaEvents
}

func (e eventsRunner) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	out := e.r.Run(ctx, w)
	out.SchemaEvents = append(out.SchemaEvents, e.s.For(&out)...)
	return out
}

// For returns the schema events of out's records.
func (s *SchemaEvents) For(out *ports.Outcome) []ports.SchemaEvent {
	var evs []ports.SchemaEvent
	for _, rc := range out.Records {
		if rc.SchemaID == "" || (rc.Type != enrichment.RecordEnrichment && rc.Type != enrichment.RecordFusion) {
			continue
		}
		data, err := s.Render(rc)
		if err != nil {
			continue
		}
		var db json.RawMessage
		rejected := false
		if s.Database != nil {
			db, rejected = s.Database(out, rc)
		}
		data = withDatabase(data, db)
		at := s.Clock.Now()
		evs = append(evs, ports.SchemaEvent{ID: eventID(rc.ID, webhook.EnrichmentResult), OrgID: rc.OrgID,
			SchemaID: rc.SchemaID, Event: webhook.EnrichmentResult, Data: data, At: at})
		if rejected {
			evs = append(evs, ports.SchemaEvent{ID: eventID(rc.ID, webhook.RejectedForDatabaseSave), OrgID: rc.OrgID,
				SchemaID: rc.SchemaID, Event: webhook.RejectedForDatabaseSave, Data: data, At: at})
		}
	}
	return evs
}

// eventID is the id of a record's event: the same for every worker that
// ends the job (record ids are), so a redone end queues nothing new.
func eventID(recordID string, e webhook.Event) string {
	h := sha256.Sum256([]byte(recordID + "/" + string(e)))
	return "evt_" + hex.EncodeToString(h[:16])
}

// withDatabase adds the "database" member to a rendered record object.
func withDatabase(record, db json.RawMessage) json.RawMessage {
	if len(db) == 0 || len(record) < 2 || record[len(record)-1] != '}' {
		return record
	}
	out := make([]byte, 0, len(record)+len(db)+13)
	out = append(out, record[:len(record)-1]...)
	if len(record) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"database":`...)
	out = append(out, db...)
	return append(out, '}')
}

// injection returns the schema events of a sync-to-database call (callID
// makes them its own: the same record injected again is a new event):
// enrichment_result for each record the call minted, and
// rejected_for_database_save for each stored or minted record the entity
// layer refused.
func (s *SchemaEvents) injection(plans []injection, callID string) []ports.SchemaEvent {
	if s == nil {
		return nil
	}
	var evs []ports.SchemaEvent
	at := s.Clock.Now()
	for _, pl := range plans {
		rc := pl.mint
		if rc == nil {
			rc = pl.rec
		}
		if rc == nil || rc.SchemaID == "" || pl.res.Database == nil {
			continue
		}
		data, err := s.Render(rc)
		if err != nil {
			continue
		}
		var db json.RawMessage
		if b, err := json.Marshal(OutcomeJSON(*pl.res.Database)); err == nil {
			db = b
		}
		data = withDatabase(data, db)
		add := func(e webhook.Event) {
			evs = append(evs, ports.SchemaEvent{ID: eventID(rc.ID+"/"+callID, e), OrgID: rc.OrgID,
				SchemaID: rc.SchemaID, Event: e, Data: data, At: at})
		}
		if pl.mint != nil {
			add(webhook.EnrichmentResult)
		}
		if pl.res.Status == InjectionRejected {
			add(webhook.RejectedForDatabaseSave)
		}
	}
	return evs
}

// queueInjectionEvents queues evs in the unit of work (a store without an
// outbox drops them, as a job's end does).
func queueInjectionEvents(ctx context.Context, r ports.Repos, evs []ports.SchemaEvent) error {
	if len(evs) == 0 || r.Outbox == nil {
		return nil
	}
	return r.Outbox.QueueEvents(ctx, evs)
}
