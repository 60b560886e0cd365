package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// An entity-layer write is two round trips in one transaction: the read
// (lockRevisionsSQL and feedingLinksSQL, which lock the identities'
// revision rows and the links they render for), then, rendered in Go
// (dbsync.Write.Apply), the writes: the entity rows, their revisions and
// each feed's deltas (appendDeltasSQL), with whatever else the unit
// commits.

// lockRevisionsSQL returns the last revision of each identity, locking its
// entity_revisions row until the transaction ends; an identity without one
// gets a row at 0, which the write moves (and a rollback removes), so two
// first writes of one identity wait for each other too.
const lockRevisionsSQL = `INSERT INTO entity_revisions AS r (schema_id, entity_type, key_identity, revision)
SELECT s, t, k, 0 FROM unnest($1::text[], $2::text[], $3::text[]) AS v(s, t, k)
ON CONFLICT (schema_id, entity_type, key_identity) DO UPDATE SET revision = r.revision
RETURNING schema_id, entity_type, key_identity, revision`

// feedingLinksSQL reads the links that receive the schemas' data deltas
// (enrichment enabled, a projection shipped, a feed), sharing their rows'
// lock so that no link changes or goes before the commit.
const feedingLinksSQL = `SELECT l.database_id, l.schema_id, l.shipped::text FROM database_links l
JOIN delta_feeds f ON f.database_id = l.database_id
WHERE l.schema_id = ANY($1::text[]) AND l.enrichment_enabled AND l.shipped IS NOT NULL
ORDER BY l.database_id, l.schema_id FOR SHARE OF l`

const upsertEntitiesSQL = `INSERT INTO entities (id, org_id, schema_id, entity_type, key_identity, keys, semantic_id,
	payload, revision, last_record_id, updated_at)
SELECT v.id, v.org, v.s, v.t, v.k, v.keys::jsonb, v.sid, v.payload::jsonb, v.rev, v.rec, v.at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
	$9::bigint[], $10::text[], $11::timestamptz[]) AS v(id, org, s, t, k, keys, sid, payload, rev, rec, at)
ON CONFLICT (schema_id, entity_type, key_identity) DO UPDATE SET keys = EXCLUDED.keys,
	semantic_id = EXCLUDED.semantic_id, payload = EXCLUDED.payload, revision = EXCLUDED.revision,
	last_record_id = EXCLUDED.last_record_id, updated_at = EXCLUDED.updated_at`

const setRevisionsSQL = `UPDATE entity_revisions r SET revision = v.rev
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS v(s, t, k, rev)
WHERE r.schema_id = v.s AND r.entity_type = v.t AND r.key_identity = v.k`

// appendDeltasSQL is FeedWriter's appendQuery with numbered parameters,
// for a statement of a pgx batch.
const appendDeltasSQL = `WITH f AS (
	UPDATE delta_feeds SET next_id = next_id + $1 WHERE database_id = $2 RETURNING next_id - $1 AS first
)
INSERT INTO deltas (database_id, id, kind, op, sql, payload, batch_id, revision, entity_type, entity_id,
	schema_id, record_id, created_at)
SELECT $2, f.first + v.ord - 1, v.kind, v.op, v.sql, v.payload::jsonb, v.batch_id, v.revision, v.entity_type,
	v.entity_id, v.schema_id, v.record_id, v.created_at
FROM f, unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[],
	$11::text[], $12::text[], $13::timestamptz[]) WITH ORDINALITY
	AS v(kind, op, sql, payload, batch_id, revision, entity_type, entity_id, schema_id, record_id, created_at, ord)
ORDER BY v.ord
RETURNING id`

type identityKey struct{ schema, typ, key string }

func keyOf(w ports.EntityWrite) identityKey {
	return identityKey{w.SchemaID, w.Identity.EntityType, w.Identity.KeyIdentity}
}

// entityReads are the read statements of writes.
func entityReads(writes []ports.EntityWrite) (lock, links endStmt) {
	seen := map[identityKey]bool{}
	schemas := map[string]bool{}
	var s, t, k, sids []string
	for _, w := range writes {
		id := keyOf(w)
		if !schemas[w.SchemaID] {
			schemas[w.SchemaID] = true
			sids = append(sids, w.SchemaID)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		s, t, k = append(s, id.schema), append(t, id.typ), append(k, id.key)
	}
	return endStmt{lockRevisionsSQL, []any{s, t, k}}, endStmt{feedingLinksSQL, []any{sids}}
}

// rowScanner is what pgx.Rows and *sql.Rows share.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func scanRevisions(rows rowScanner) (map[identityKey]int64, error) {
	out := map[identityKey]int64{}
	for rows.Next() {
		var k identityKey
		var rev int64
		if err := rows.Scan(&k.schema, &k.typ, &k.key, &rev); err != nil {
			return nil, err
		}
		out[k] = rev
	}
	return out, rows.Err()
}

// scanLinks reads the feeding links as registrations, one per database
// and schema, each with the link alone.
func scanLinks(rows rowScanner) (map[string][]*dbsync.Database, error) {
	out := map[string][]*dbsync.Database{}
	for rows.Next() {
		var dbID, schemaID, shipped string
		if err := rows.Scan(&dbID, &schemaID, &shipped); err != nil {
			return nil, err
		}
		var m relmap.Map
		if err := json.Unmarshal([]byte(shipped), &m); err != nil {
			return nil, fmt.Errorf("postgres: the shipped map of database %s: %w", dbID, err)
		}
		out[schemaID] = append(out[schemaID], &dbsync.Database{ID: dbID,
			Links: []dbsync.Link{{SchemaID: schemaID, EnrichmentEnabled: true, Shipped: &m}}})
	}
	return out, rows.Err()
}

// entityWrites renders writes at the revisions read and returns the write
// statements (entities, revisions, then each feed's deltas in database id
// order, the order every writer locks feeds in) and what each write is.
func entityWrites(writes []ports.EntityWrite, revs map[identityKey]int64, links map[string][]*dbsync.Database) ([]endStmt, *rendered, error) {
	last := map[identityKey]*dbsync.Entity{}
	var order []identityKey
	feeds := map[string][]ports.FeedRow{}
	owners := map[string][]int{} // per feed, the write of each row
	out := make([]ports.EntityWritten, len(writes))
	for i, w := range writes {
		k := keyOf(w)
		e, dds, err := w.Apply(revs[k], links[w.SchemaID])
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: write entity: %w: %w", ports.ErrInvalid, err)
		}
		revs[k] = e.Revision
		if last[k] == nil {
			order = append(order, k)
		}
		last[k] = e
		out[i] = ports.EntityWritten{EntityID: e.ID, Revision: e.Revision, Deltas: map[string][]int64{}}
		for _, dd := range dds {
			feeds[dd.DatabaseID] = append(feeds[dd.DatabaseID], ports.FeedRow{Delta: dd.Delta, EntityID: e.ID,
				SchemaID: w.SchemaID, RecordID: w.RecordID})
			owners[dd.DatabaseID] = append(owners[dd.DatabaseID], i)
		}
	}
	stmts := []endStmt{upsertEntities(order, last), setRevisions(order, revs)}
	r := &rendered{written: out}
	r.feeds = feedsOf(feeds)
	for _, db := range r.feeds {
		args, err := feedArgs(db, feeds[db])
		if err != nil {
			return nil, nil, err
		}
		stmts = append(stmts, endStmt{appendDeltasSQL, args})
		r.owners = append(r.owners, owners[db])
	}
	return stmts, r, nil
}

// rendered is what entityWrites made: each write's result, and per append
// statement (after the two entity statements) its feed and the write of
// each of its rows, to hand the returned ids back.
type rendered struct {
	written []ports.EntityWritten
	feeds   []string
	owners  [][]int
}

// gave records the ids the i-th append statement returned.
func (r *rendered) gave(i int, ids []int64) {
	for j, id := range ids {
		w := &r.written[r.owners[i][j]]
		w.Deltas[r.feeds[i]] = append(w.Deltas[r.feeds[i]], id)
	}
}

func upsertEntities(order []identityKey, last map[identityKey]*dbsync.Entity) endStmt {
	n := len(order)
	ids, orgs, ss, ts, ks := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	keys, sids, payloads, recs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	revs, ats := make([]int64, n), make([]time.Time, n)
	for i, k := range order {
		e := last[k]
		kb, _ := json.Marshal(e.Keys)
		ids[i], orgs[i], ss[i], ts[i], ks[i] = e.ID, e.OrgID, e.SchemaID, e.EntityType, e.KeyIdentity
		keys[i], sids[i], payloads[i], recs[i] = string(kb), e.SemanticID, string(e.Payload), e.LastRecordID
		revs[i], ats[i] = e.Revision, utc(e.UpdatedAt)
	}
	return endStmt{upsertEntitiesSQL, []any{ids, orgs, ss, ts, ks, keys, sids, payloads, revs, recs, ats}}
}

func setRevisions(order []identityKey, revs map[identityKey]int64) endStmt {
	n := len(order)
	ss, ts, ks, rs := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, k := range order {
		ss[i], ts[i], ks[i], rs[i] = k.schema, k.typ, k.key, revs[k]
	}
	return endStmt{setRevisionsSQL, []any{ss, ts, ks, rs}}
}
