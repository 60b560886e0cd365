package postgres

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// mentioningSQL finds the entities naming one of the texts (concept
// ids), as their semantic id or as a string anywhere in their state (a
// strict jsonpath equality, existential over the array $t, so a longer
// string holding an id does not match). The path is a parameter: Bun
// would read its filter's question mark as one.
const mentioningSQL = `SELECT * FROM entities WHERE org_id = ? AND (semantic_id = ANY(?::text[])
	OR jsonb_path_exists(payload, ?::jsonpath, jsonb_build_object('t', to_jsonb(?::text[]))))
ORDER BY id COLLATE "C" FOR UPDATE`

// EntitiesMentioning implements ports.EntityWriter.
func (w EntityWriter) EntitiesMentioning(ctx context.Context, orgID string, texts ...string) ([]*dbsync.Entity, error) {
	texts = storableOnly(texts)
	if len(texts) == 0 || !storable(orgID) {
		return nil, nil
	}
	var rows []entityRow
	arr := pgdialect.Array(texts)
	if err := w.tx.NewRaw(mentioningSQL, orgID, arr, `$.** ? (@ == $t[*])`, arr).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "read the entities naming concepts")
	}
	return entities(rows), nil
}

func entities(rows []entityRow) []*dbsync.Entity {
	out := make([]*dbsync.Entity, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.entity())
	}
	return out
}

// EntitiesByID implements ports.EntityWriter.
func (w EntityWriter) EntitiesByID(ctx context.Context, orgID string, ids []string) ([]*dbsync.Entity, error) {
	ids = storableOnly(ids)
	if len(ids) == 0 || !storable(orgID) {
		return nil, nil
	}
	var rows []entityRow
	err := w.tx.NewSelect().Model(&rows).Where("org_id = ? AND id IN (?)", orgID, bun.In(ids)).OrderExpr(`id COLLATE "C"`).
		For("UPDATE").Scan(ctx)
	if err != nil {
		return nil, fail(err, "read entities")
	}
	return entities(rows), nil
}

// DeleteEntities implements ports.EntityWriter: the entities' rows
// locked, then their revision rows (in one statement, as a write's read
// does) and the feeding links, the rows deleted, the revisions moved, and
// the delete deltas appended feed by feed in registration id order
// (feedOrder), the order every writer takes feeds in.
func (w EntityWriter) DeleteEntities(ctx context.Context, orgID string, ids []string, batchID string, at time.Time) ([]ports.EntityWritten, error) {
	gone, err := w.EntitiesByID(ctx, orgID, ids)
	if err != nil || len(gone) == 0 {
		return nil, err
	}
	revs, feeding, err := w.deleteReads(ctx, gone)
	if err != nil {
		return nil, err
	}
	feeds, owners := map[string][]ports.FeedRow{}, map[string][]int{}
	r := &rendered{written: make([]ports.EntityWritten, len(gone))}
	order, eids := make([]identityKey, 0, len(gone)), make([]string, 0, len(gone))
	for i, e := range gone {
		k := identityKey{e.SchemaID, e.EntityType, e.KeyIdentity}
		revs[k] = dbsync.NextRevision(revs[k])
		dds, err := dbsync.DeleteDeltas(feeding[e.SchemaID], e, revs[k], batchID, utc(at))
		if err != nil {
			return nil, err
		}
		order, eids = append(order, k), append(eids, e.ID)
		r.written[i] = ports.EntityWritten{EntityID: e.ID, Revision: revs[k], Deltas: map[string][]int64{}}
		for _, dd := range dds {
			feeds[dd.DatabaseID] = append(feeds[dd.DatabaseID], ports.FeedRow{Delta: dd.Delta, EntityID: e.ID,
				SchemaID: e.SchemaID, RecordID: e.LastRecordID})
			owners[dd.DatabaseID] = append(owners[dd.DatabaseID], i)
		}
	}
	if _, err := w.tx.NewDelete().TableExpr("entities").Where("id IN (?)", bun.In(eids)).Exec(ctx); err != nil {
		return nil, fail(err, "delete entities")
	}
	st := setRevisions(order, revs)
	if _, err := w.tx.Tx.ExecContext(ctx, st.sql, st.args...); err != nil {
		return nil, fail(err, "move entity revisions")
	}
	r.feeds = feedsOf(feeds)
	for i, db := range r.feeds {
		got, err := NewFeedWriter(w.tx).Append(ctx, db, feeds[db])
		if err != nil {
			return nil, err
		}
		r.owners = append(r.owners, owners[db])
		r.gave(i, got)
	}
	return r.written, nil
}

// deleteReads locks the revision rows of the entities' identities and
// reads the links that feed on their schemas (locked FOR SHARE).
func (w EntityWriter) deleteReads(ctx context.Context, es []*dbsync.Entity) (map[identityKey]int64, map[string][]*dbsync.Database, error) {
	ws := make([]ports.EntityWrite, 0, len(es))
	for _, e := range es {
		ws = append(ws, ports.EntityWrite{Write: dbsync.Write{SchemaID: e.SchemaID,
			Identity: dbsync.Identity{EntityType: e.EntityType, KeyIdentity: e.KeyIdentity}}})
	}
	lock, links := entityReads(ws)
	rows, err := w.tx.Tx.QueryContext(ctx, lock.sql, lock.args...)
	if err != nil {
		return nil, nil, fail(err, "lock entity revisions")
	}
	revs, err := scanRevisions(rows)
	rows.Close()
	if err != nil {
		return nil, nil, fail(err, "lock entity revisions")
	}
	if rows, err = w.tx.Tx.QueryContext(ctx, links.sql, links.args...); err != nil {
		return nil, nil, fail(err, "read feeding links")
	}
	feeding, err := scanLinks(rows)
	rows.Close()
	if err != nil {
		return nil, nil, fail(err, "read feeding links")
	}
	return revs, feeding, nil
}

// lockFeedsSQL locks the feed rows of the registrations linked to the
// schemas $1, byte-wise in id order (COLLATE "C", as feedOrder sorts), in
// the mode appendDeltasSQL's UPDATE takes.
const lockFeedsSQL = `SELECT f.database_id FROM delta_feeds f
WHERE f.database_id IN (SELECT l.database_id FROM database_links l WHERE l.schema_id = ANY($1::text[]))
ORDER BY f.database_id COLLATE "C" FOR NO KEY UPDATE OF f`

// LockFeeds implements ports.EntityWriter.
func (w EntityWriter) LockFeeds(ctx context.Context, schemaIDs []string) error {
	ids := storableOnly(schemaIDs)
	if len(ids) == 0 {
		return nil
	}
	_, err := w.tx.Tx.ExecContext(ctx, lockFeedsSQL, ids)
	return maybeFail(err, "lock feeds")
}

// feedOrder is the order every writer appends to (and so locks) the
// feeds of registrations in: by id, byte-wise, each once. Two units that
// take the feeds they share in one order wait for each other rather than
// deadlock.
func feedOrder(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// feedsOf is the feeds keyed in m, in feedOrder.
func feedsOf[T any](m map[string]T) []string { return feedOrder(slices.Collect(maps.Keys(m))) }
