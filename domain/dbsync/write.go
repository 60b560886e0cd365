package dbsync

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/relmap"
)

// NextRevision is the revision an entity's write takes: one more than the
// last revision its identity reached (entity_revisions, which outlives a
// purge of the entity row, so a re-created entity keeps rising and the
// consumer's guard, ee_revision < the incoming one, never drops it).
//
// An unchanged payload still makes a new revision: the revision counts
// admitted writes, not distinct states. The write's outcome (its batch and
// delta count, announced in the stream before the end commits) is decided
// before the stored state is read, each write names its record
// (last_record_id), and the consumer's apply of an equal state is
// idempotent; skipping would make the announced batch a lie.
func NextRevision(last int64) int64 { return last + 1 }

// DatabaseDelta is a data delta bound for one registration's feed.
type DatabaseDelta struct {
	DatabaseID string
	Delta      delta.Delta
}

// Feeds lists the registrations of dbs whose link to schemaID receives
// data deltas: enrichment enabled and a projection shipped. A link whose
// schema never shipped gets none (its state reaches the consumer through
// the snapshot).
func Feeds(dbs []*Database, schemaID string) []*Database {
	var out []*Database
	for _, d := range dbs {
		if l, ok := d.Link(schemaID); ok && l.EnrichmentEnabled && l.Shipped != nil {
			out = append(out, d)
		}
	}
	return out
}

// UpsertDeltas renders the data deltas of an entity written at its
// revision: one upsert per registration that Feeds names, rendered
// against the link's shipped map with the entity's id as the row's ee_id,
// all sharing batchID.
func UpsertDeltas(dbs []*Database, e *Entity, batchID string, now time.Time) ([]DatabaseDelta, error) {
	var out []DatabaseDelta
	for _, d := range Feeds(dbs, e.SchemaID) {
		l, _ := d.Link(e.SchemaID)
		w, err := relmap.UpsertWithID(*l.Shipped, e.ID, e.Payload, e.Revision)
		if err != nil {
			return nil, fmt.Errorf("render the upsert of entity %s for database %s: %w", e.ID, d.ID, err)
		}
		dd, err := dataDelta(d.ID, w, delta.Upsert, batchID, now)
		if err != nil {
			return nil, err
		}
		out = append(out, dd)
	}
	return out, nil
}

// DeleteDeltas renders the removal of an entity at revision (the consumer
// deletes the row only at that revision or older) for every registration
// that Feeds names.
func DeleteDeltas(dbs []*Database, e *Entity, revision int64, batchID string, now time.Time) ([]DatabaseDelta, error) {
	var out []DatabaseDelta
	for _, d := range Feeds(dbs, e.SchemaID) {
		l, _ := d.Link(e.SchemaID)
		obj, err := relmap.Decode(e.Payload)
		if err != nil {
			return nil, err
		}
		k, err := relmap.KeyOf(*l.Shipped, obj)
		if err != nil {
			return nil, err
		}
		if l.Shipped.PKStrategy == relmap.Surrogate {
			k[relmap.ColID] = e.ID
		}
		w, err := relmap.Delete(*l.Shipped, k, revision)
		if err != nil {
			return nil, err
		}
		dd, err := dataDelta(d.ID, w, delta.Delete, batchID, now)
		if err != nil {
			return nil, err
		}
		out = append(out, dd)
	}
	return out, nil
}

func dataDelta(databaseID string, w relmap.Write, op delta.Op, batchID string, now time.Time) (DatabaseDelta, error) {
	payload, err := json.Marshal(w.Payload)
	if err != nil {
		return DatabaseDelta{}, err
	}
	return DatabaseDelta{DatabaseID: databaseID, Delta: delta.Delta{Kind: delta.Data, Op: op, SQL: w.SQL(),
		Payload: payload, BatchID: batchID, Revision: w.Payload.Revision, EntityType: w.Payload.EntityType,
		CreatedAt: now}}, nil
}

// Write is one admitted entity state bound for the entity layer of its
// schema, as the decision made it: the store reads the identity's last
// revision and the schema's registrations under lock, then Apply renders
// the row and the deltas, all committed with the record.
type Write struct {
	OrgID, SchemaID, RecordID string
	Identity                  Identity
	State                     json.RawMessage // the admitted state
	BatchID                   string
	At                        time.Time // the write's time (updated_at, created_at)
}

// Apply is the write at the identity's next revision (last is the last
// revision it reached, 0 for none): the entity row and the data deltas
// for dbs (the schema's registrations as the store read them).
func (w Write) Apply(last int64, dbs []*Database) (*Entity, []DatabaseDelta, error) {
	now := w.At
	e := &Entity{ID: EntityID(w.SchemaID, w.Identity), OrgID: w.OrgID, SchemaID: w.SchemaID,
		EntityType: w.Identity.EntityType, KeyIdentity: w.Identity.KeyIdentity, Keys: w.Identity.Keys,
		SemanticID: w.Identity.SemanticID, Payload: w.State, Revision: NextRevision(last), LastRecordID: w.RecordID,
		UpdatedAt: now}
	ds, err := UpsertDeltas(dbs, e, w.BatchID, now)
	if err != nil {
		return nil, nil, err
	}
	return e, ds, nil
}

// DraftDelta is a data delta bound for one registration's feed, rendered
// before the entity's revision is known (relmap.Draft): Delta has every
// field but its id, SQL and revision, and its payload is at revision 0
// (relmap.PayloadRevisionPaths). The store that learns the revision keeps
// the draft, and the feed renders the SQL when it serves the delta
// (DraftSQL).
type DraftDelta struct {
	DatabaseID string
	Draft      relmap.Draft
	Delta      delta.Delta
}

// Drafts is Apply before the revision is known, for a store that computes
// it in the statement that writes the entity: the entity row (Revision 0)
// and the draft deltas for dbs, rendered as Apply renders them at any
// revision.
func (w Write) Drafts(dbs []*Database) (*Entity, []DraftDelta, error) {
	now := w.At
	e := &Entity{ID: EntityID(w.SchemaID, w.Identity), OrgID: w.OrgID, SchemaID: w.SchemaID,
		EntityType: w.Identity.EntityType, KeyIdentity: w.Identity.KeyIdentity, Keys: w.Identity.Keys,
		SemanticID: w.Identity.SemanticID, Payload: w.State, LastRecordID: w.RecordID, UpdatedAt: now}
	var out []DraftDelta
	for _, d := range Feeds(dbs, e.SchemaID) {
		l, _ := d.Link(e.SchemaID)
		dr, err := relmap.UpsertDraft(*l.Shipped, e.ID, e.Payload)
		if err != nil {
			return nil, nil, fmt.Errorf("render the upsert of entity %s for database %s: %w", e.ID, d.ID, err)
		}
		payload, err := json.Marshal(dr.Payload)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, DraftDelta{DatabaseID: d.ID, Draft: dr, Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert,
			Payload: payload, BatchID: w.BatchID, EntityType: dr.Payload.EntityType, CreatedAt: now}})
	}
	return e, out, nil
}

// DraftSQL is the SQL of a delta stored as a draft (DraftDelta), at the
// revision the store gave it.
func DraftSQL(draft []byte, revision int64) (string, error) {
	d, err := relmap.ParseDraft(draft)
	if err != nil {
		return "", err
	}
	return d.SQL(revision)
}
