package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// syncEnabled is the request's database_sync (default true).
func syncEnabled(flag *bool) bool { return flag == nil || *flag }

// syncBatchID is the delta batch of a record's entity-layer write: derived
// from the record, so that a resumed run that writes the same record
// announces the same batch.
func syncBatchID(recordID string) string {
	sum := sha256.Sum256([]byte("batch/v1\x00" + recordID))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// syncEntity decides the entity-layer write of a run's final record on a
// linked schema and announces it (database_saved or database_rejected,
// entity index set in a batch) before the run's end, which stores the
// returned write with the record. Nothing happens for an unlinked schema,
// database_sync=false, or a schema no registration feeds on; the schema's
// registrations are read only for a linked schema (one round trip).
func (s *Enricher) syncEntity(ctx context.Context, sc *schema.Schema, flag *bool, rec *enrichment.Record, index *int,
	pub func(job.Payload)) entitySync {
	return syncEntity(ctx, s.Entities, s.Clock, sc, flag, rec, index, pub)
}

// syncEntity is the decision and announcement of any run that stores a
// final record: an enrichment's, a batch entity's, a fusion merge's.
func syncEntity(ctx context.Context, entities ports.EntityStore, clock ports.Clock, sc *schema.Schema, flag *bool,
	rec *enrichment.Record, index *int, pub func(job.Payload)) entitySync {
	if entities == nil || sc == nil || !sc.Linked || rec == nil || !syncEnabled(flag) {
		return entitySync{}
	}
	w, out, ok := decideEntity(ctx, entities, sc, rec, clock)
	if !ok {
		return entitySync{}
	}
	pub(job.DatabaseOutcome{RecordID: rec.ID, Database: OutcomeJSON(out), Rejected: !out.Saved, EntityIndex: index})
	es := entitySync{recordID: rec.ID, outcome: &out}
	if w != nil {
		es.writes = []ports.EntityWrite{*w}
	}
	return es
}

// entitySync is a record's entity-layer decision: the writes to store
// with it and its outcome (nil when nothing was decided).
type entitySync struct {
	recordID string
	writes   []ports.EntityWrite
	outcome  *dbsync.Outcome
}

// outcomes is the Outcome.Database of decisions.
func outcomes(ss ...entitySync) map[string]dbsync.Outcome {
	var out map[string]dbsync.Outcome
	for _, s := range ss {
		if s.outcome == nil {
			continue
		}
		if out == nil {
			out = map[string]dbsync.Outcome{}
		}
		out[s.recordID] = *s.outcome
	}
	return out
}

// RecordDatabase is a record's entity-layer outcome in a run's Outcome, as
// the DatabaseSyncOutcome JSON of its schema events, and whether the
// entity layer rejected it (SchemaEvents.Database).
func RecordDatabase(out *ports.Outcome, rc *enrichment.Record) (json.RawMessage, bool) {
	o, ok := out.Database[rc.ID]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(OutcomeJSON(o))
	if err != nil {
		return nil, false
	}
	return b, !o.Saved
}

// decideEntity is the decision on one record of a linked schema: the
// write to store (nil when rejected) and its outcome; ok is false when no
// registration feeds on the schema (nothing to say).
func decideEntity(ctx context.Context, entities ports.EntityStore, sc *schema.Schema, rec *enrichment.Record,
	clock ports.Clock) (*ports.EntityWrite, dbsync.Outcome, bool) {
	dbs, err := entities.SchemaDatabases(ctx, sc.OrgID, sc.ID)
	if err != nil {
		return nil, rejected("the schema's databases could not be read"), true
	}
	t := dbsync.Target{OrgID: sc.OrgID, SchemaID: sc.ID, Contract: sc.Contract(), KeyLanguage: sc.KeyLanguage}
	out, w, feeds, err := dbsync.Decide(dbs, t, rec.ID, rec.StructuredOutput, syncBatchID(rec.ID))
	switch {
	case !feeds:
		return nil, dbsync.Outcome{}, false
	case err != nil:
		return nil, rejected("the entity could not be admitted: " + err.Error()), true
	case w == nil:
		return nil, out, true
	}
	w.At = clock.Now()
	return &ports.EntityWrite{Write: *w, Outcome: out, Feeds: dbs}, out, true
}

func rejected(reason string) dbsync.Outcome {
	return dbsync.Outcome{Status: dbsync.StatusRejected, Reason: reason}
}

// OutcomeJSON is an outcome as the wire's DatabaseSyncOutcome (WIRE.md
// §1.4): every list present, empty when nothing applies.
func OutcomeJSON(o dbsync.Outcome) map[string]any {
	strs := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	var batch, reason, keys any
	if o.BatchID != "" {
		batch = o.BatchID
	}
	if o.Reason != "" {
		reason = o.Reason
	}
	if o.EntityKeys != nil {
		keys = o.EntityKeys
	}
	return map[string]any{"saved": o.Saved, "status": string(o.Status), "batch_id": batch, "delta_count": o.DeltaCount,
		"entity_count": o.EntityCount, "entity_keys": keys, "missing_fields": strs(o.MissingFields),
		"skipped_items": strs(o.SkippedItems), "reason": reason, "declared_unknown": []any{},
		"detached_references": []string{}, "identity_merges": []any{}, "identity_underidentifies": []any{},
		"key_collisions": []any{}, "shared_entity_conflicts": []any{}, "unique_conflicts": []any{}}
}

// batchSyncs are a batch's entity-layer writes, in entity index order,
// and its outcomes by record.
func batchSyncs(bp *batchPlan, reports map[int]*entityReport) ([]ports.EntityWrite, map[string]dbsync.Outcome) {
	var out []ports.EntityWrite
	var all []entitySync
	for _, i := range bp.selected {
		if r := reports[i]; r != nil {
			out = append(out, r.sync.writes...)
			all = append(all, r.sync)
		}
	}
	return out, outcomes(all...)
}

// priorSync is the entity-layer write of a batch entity that a prior run
// of the job completed and announced saved (its database_saved event):
// decided again from its rebuilt record, silently (the event is out
// already), so that the resumed job's end stores it with the record. The
// decision is deterministic (the batch id derives from the record), so it
// is the announced one unless the registrations changed in between.
func (s *Enricher) priorSync(ctx context.Context, pl *plan, r *entityReport, evs []job.Event) entitySync {
	if r.status != entityCompleted || s.Entities == nil || pl.schema == nil || !pl.schema.Linked ||
		!syncEnabled(pl.req.DatabaseSync) {
		return entitySync{}
	}
	for _, ev := range evs {
		d, ok := job.Inner(ev.Payload).(job.DatabaseOutcome)
		if !ok {
			continue
		}
		rec := recordOf(r.records, d.RecordID)
		if rec == nil {
			return entitySync{}
		}
		if w, out, ok := decideEntity(ctx, s.Entities, pl.schema, rec, s.Clock); ok {
			es := entitySync{recordID: rec.ID, outcome: &out}
			if w != nil {
				es.writes = []ports.EntityWrite{*w}
			}
			return es
		}
	}
	return entitySync{}
}
