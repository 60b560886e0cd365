package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// A linked end (a job's end with entity-layer writes) goes in the end's
// one round trip when every write carries the registrations its decision
// read (EntityWrite.Feeds): the deltas are rendered against them as
// drafts (relmap.Draft, everything but the revision), and the batch
// gains three kinds of statement after the end's own:
//
//   - linkedEntitiesSQL moves each identity's revision (locking its
//     entity_revisions row, as the locked read did) and upserts the entity
//     row at the revision it reached;
//   - checkFeedsSQL locks the feeding links (FOR SHARE, as the read did)
//     and raises EJ412 unless they are the ones rendered against, which
//     rolls the whole end back; the end is then stored by endWithSync;
//   - linkedDeltasSQL appends each feed's deltas (in database id order)
//     with their revision, read back from entity_revisions, set into the
//     payload, and the draft kept for the feed's readers to render the SQL.
//
// Each statement of the batch sees the ones before it (one implicit
// transaction), so the revisions the deltas carry are the ones written.

// errStaleFeeds is the SQLSTATE enrich_require_feeds raises (see the
// linked_end migration).
const errStaleFeeds = "EJ412"

const linkedEntitiesSQL = `WITH v AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
		$9::bigint[], $10::text[], $11::timestamptz[]) AS v(id, org, s, t, k, keys, sid, payload, n, rec, at)
), r AS (
	INSERT INTO entity_revisions AS r (schema_id, entity_type, key_identity, revision)
	SELECT s, t, k, n FROM v
	ON CONFLICT (schema_id, entity_type, key_identity) DO UPDATE SET revision = r.revision + EXCLUDED.revision
	RETURNING schema_id, entity_type, key_identity, revision
)
INSERT INTO entities (id, org_id, schema_id, entity_type, key_identity, keys, semantic_id, payload, revision,
	last_record_id, updated_at)
SELECT v.id, v.org, v.s, v.t, v.k, v.keys::jsonb, v.sid, v.payload::jsonb, r.revision, v.rec, v.at
FROM v JOIN r ON r.schema_id = v.s AND r.entity_type = v.t AND r.key_identity = v.k
ON CONFLICT (schema_id, entity_type, key_identity) DO UPDATE SET keys = EXCLUDED.keys,
	semantic_id = EXCLUDED.semantic_id, payload = EXCLUDED.payload, revision = EXCLUDED.revision,
	last_record_id = EXCLUDED.last_record_id, updated_at = EXCLUDED.updated_at`

// checkFeedsSQL counts the differences between the feeding links of the
// schemas ($1; feedingLinksSQL's rows, locked the same way) and the ones
// rendered against ($2 database, $3 schema, $4 shipped map).
const checkFeedsSQL = `SELECT enrich_require_feeds(count(*)) FROM (
	SELECT l.database_id, l.schema_id, l.shipped FROM database_links l
	JOIN delta_feeds f ON f.database_id = l.database_id
	WHERE l.schema_id = ANY($1::text[]) AND l.enrichment_enabled AND l.shipped IS NOT NULL
	ORDER BY l.database_id, l.schema_id FOR SHARE OF l
) cur FULL JOIN unnest($2::text[], $3::text[], $4::text[]) AS v(db, s, m) ON v.db = cur.database_id AND v.s = cur.schema_id
WHERE cur.database_id IS NULL OR v.db IS NULL OR cur.shipped <> v.m::jsonb`

// linkedDeltasSQL is appendDeltasSQL for drafts: a row's revision is its
// identity's ($14 type, $15 key) as linkedEntitiesSQL left it, minus
// $16 (the writes of the identity after this one in the end), and goes
// into the payload at the paths $3 and $4.
const linkedDeltasSQL = `WITH f AS (
	UPDATE delta_feeds SET next_id = next_id + $1 WHERE database_id = $2 RETURNING next_id - $1 AS first
)
INSERT INTO deltas (database_id, id, kind, op, sql, payload, batch_id, revision, entity_type, entity_id,
	schema_id, record_id, created_at, draft)
SELECT $2, f.first + v.ord - 1, v.kind, v.op, '',
	jsonb_set(jsonb_set(v.payload::jsonb, $3::text[], to_jsonb(r.revision - v.back)), $4::text[], to_jsonb(r.revision - v.back)),
	v.batch_id, r.revision - v.back, v.entity_type, v.entity_id, v.schema_id, v.record_id, v.created_at, v.draft::jsonb
FROM f, unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
	$13::timestamptz[], $14::text[], $15::text[], $16::bigint[], $17::text[]) WITH ORDINALITY
	AS v(kind, op, payload, batch_id, entity_type, entity_id, schema_id, record_id, created_at, t, k, back, draft, ord)
JOIN entity_revisions r ON r.schema_id = v.schema_id AND r.entity_type = v.t AND r.key_identity = v.k
ORDER BY v.ord`

// draftRow is one draft delta of a linked end, with its identity and
// its place among the identity's writes (seq, from 1).
type draftRow struct {
	dd       dbsync.DraftDelta
	entityID string
	w        ports.EntityWrite
	id       identityKey
	seq      int64
}

// linkedStmts are the statements of writes in the end's round trip, or
// false when a write does not carry its registrations (endWithSync then
// reads them under lock). A write whose deltas cannot be rendered is
// ErrInvalid.
func linkedStmts(writes []ports.EntityWrite) ([]endStmt, bool, error) {
	last := map[identityKey]*dbsync.Entity{}
	count := map[identityKey]int64{}
	var order []identityKey
	feeds := map[string][]draftRow{}
	maps := map[[2]string]string{} // (database, schema) -> the shipped map rendered against
	var schemas []string
	for _, w := range writes {
		if w.Feeds == nil {
			return nil, false, nil
		}
		e, dds, err := w.Drafts(w.Feeds)
		if err != nil {
			return nil, false, fmt.Errorf("postgres: write entity: %w: %w", ports.ErrInvalid, err)
		}
		k := keyOf(w)
		if last[k] == nil {
			order = append(order, k)
		}
		last[k] = e
		count[k]++
		if err := noteFeeds(maps, &schemas, w); err != nil {
			return nil, false, err
		}
		for _, dd := range dds {
			feeds[dd.DatabaseID] = append(feeds[dd.DatabaseID], draftRow{dd: dd, entityID: e.ID, w: w, id: k, seq: count[k]})
		}
	}
	stmts := []endStmt{linkedEntities(order, last, count), checkFeeds(schemas, maps)}
	for _, db := range feedsOf(feeds) {
		st, err := linkedDeltas(db, feeds[db], count)
		if err != nil {
			return nil, false, err
		}
		stmts = append(stmts, st)
	}
	return stmts, true, nil
}

// noteFeeds records the feeding links of w's schema as its registrations
// say (once per schema).
func noteFeeds(maps map[[2]string]string, schemas *[]string, w ports.EntityWrite) error {
	for _, s := range *schemas {
		if s == w.SchemaID {
			return nil
		}
	}
	*schemas = append(*schemas, w.SchemaID)
	for _, d := range dbsync.Feeds(w.Feeds, w.SchemaID) {
		l, _ := d.Link(w.SchemaID)
		b, err := json.Marshal(l.Shipped)
		if err != nil {
			return fmt.Errorf("postgres: the shipped map of database %s: %w", d.ID, err)
		}
		maps[[2]string{d.ID, w.SchemaID}] = string(b)
	}
	return nil
}

func linkedEntities(order []identityKey, last map[identityKey]*dbsync.Entity, count map[identityKey]int64) endStmt {
	st := upsertEntities(order, last)
	ns := make([]int64, len(order))
	for i, k := range order {
		ns[i] = count[k]
	}
	st.args[8] = ns // the revision column's place: how far each identity moves
	st.sql = linkedEntitiesSQL
	return st
}

func checkFeeds(schemas []string, maps map[[2]string]string) endStmt {
	var dbs, ss, ms []string
	for k, m := range maps {
		dbs, ss, ms = append(dbs, k[0]), append(ss, k[1]), append(ms, m)
	}
	return endStmt{checkFeedsSQL, []any{schemas, dbs, ss, ms}}
}

func linkedDeltas(databaseID string, rows []draftRow, count map[identityKey]int64) (endStmt, error) {
	n := len(rows)
	var kinds, ops, payloads, batches, types, entities, schemas, records, ts, ks, drafts []string
	backs, created := make([]int64, 0, n), make([]time.Time, 0, n)
	for _, r := range rows {
		d := r.dd.Delta
		b, err := json.Marshal(r.dd.Draft)
		if err != nil {
			return endStmt{}, err
		}
		kinds, ops, payloads = append(kinds, string(d.Kind)), append(ops, string(d.Op)), append(payloads, string(d.Payload))
		batches, types, entities = append(batches, d.BatchID), append(types, d.EntityType), append(entities, r.entityID)
		schemas, records = append(schemas, r.w.SchemaID), append(records, r.w.RecordID)
		ts, ks, drafts = append(ts, r.id.typ), append(ks, r.id.key), append(drafts, string(b))
		backs, created = append(backs, count[r.id]-r.seq), append(created, utc(d.CreatedAt))
	}
	return endStmt{linkedDeltasSQL, []any{n, databaseID, relmap.PayloadRevisionPaths[0], relmap.PayloadRevisionPaths[1],
		kinds, ops, payloads, batches, types, entities, schemas, records, created, ts, ks, backs, drafts}}, nil
}
