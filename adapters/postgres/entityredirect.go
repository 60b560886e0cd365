package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// mentioningSQL finds the entities naming a concept id, as their semantic
// id or as a string anywhere in their state (a strict jsonpath equality,
// so a longer string holding the id does not match). The path is a
// parameter: Bun would read its filter's question mark as one.
const mentioningSQL = `SELECT * FROM entities WHERE org_id = ? AND (semantic_id = ?
	OR jsonb_path_exists(payload, ?::jsonpath, jsonb_build_object('t', ?::text)))
ORDER BY id COLLATE "C" FOR UPDATE`

// EntitiesMentioning implements ports.EntityWriter.
func (w EntityWriter) EntitiesMentioning(ctx context.Context, orgID, text string) ([]*dbsync.Entity, error) {
	if !storable(orgID, text) {
		return nil, nil
	}
	var rows []entityRow
	if err := w.tx.NewRaw(mentioningSQL, orgID, text, `$.** ? (@ == $t)`, text).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "read the entities naming "+text)
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

// DeleteEntities implements ports.EntityWriter: per entity, its row
// locked, its revision row locked and moved, the row deleted and the
// delete deltas appended to the feeds that read its schema.
func (w EntityWriter) DeleteEntities(ctx context.Context, orgID string, ids []string, batchID string, at time.Time) ([]ports.EntityWritten, error) {
	gone, err := w.EntitiesByID(ctx, orgID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ports.EntityWritten, 0, len(gone))
	for _, e := range gone {
		done, err := w.deleteEntity(ctx, e, batchID, at)
		if err != nil {
			return nil, err
		}
		out = append(out, done)
	}
	return out, nil
}

func (w EntityWriter) deleteEntity(ctx context.Context, e *dbsync.Entity, batchID string, at time.Time) (ports.EntityWritten, error) {
	rows, err := w.tx.Tx.QueryContext(ctx, lockRevisionsSQL, []string{e.SchemaID}, []string{e.EntityType}, []string{e.KeyIdentity})
	if err != nil {
		return ports.EntityWritten{}, fail(err, "lock entity revision")
	}
	revs, err := scanRevisions(rows)
	rows.Close()
	if err != nil {
		return ports.EntityWritten{}, fail(err, "lock entity revision")
	}
	rev := dbsync.NextRevision(revs[identityKey{e.SchemaID, e.EntityType, e.KeyIdentity}])
	if rows, err = w.tx.Tx.QueryContext(ctx, feedingLinksSQL, []string{e.SchemaID}); err != nil {
		return ports.EntityWritten{}, fail(err, "read feeding links")
	}
	feeding, err := scanLinks(rows)
	rows.Close()
	if err != nil {
		return ports.EntityWritten{}, fail(err, "read feeding links")
	}
	dds, err := dbsync.DeleteDeltas(feeding[e.SchemaID], e, rev, batchID, utc(at))
	if err != nil {
		return ports.EntityWritten{}, err
	}
	if _, err := w.tx.NewDelete().TableExpr("entities").Where("id = ?", e.ID).Exec(ctx); err != nil {
		return ports.EntityWritten{}, fail(err, "delete entity "+e.ID)
	}
	if _, err := w.tx.Tx.ExecContext(ctx, setRevisionsSQL, []string{e.SchemaID}, []string{e.EntityType}, []string{e.KeyIdentity},
		[]int64{rev}); err != nil {
		return ports.EntityWritten{}, fail(err, "move entity revision")
	}
	done := ports.EntityWritten{EntityID: e.ID, Revision: rev, Deltas: map[string][]int64{}}
	for _, dd := range dds {
		got, err := NewFeedWriter(w.tx).Append(ctx, dd.DatabaseID, []ports.FeedRow{{Delta: dd.Delta, EntityID: e.ID,
			SchemaID: e.SchemaID, RecordID: e.LastRecordID}})
		if err != nil {
			return ports.EntityWritten{}, err
		}
		done.Deltas[dd.DatabaseID] = append(done.Deltas[dd.DatabaseID], got...)
	}
	return done, nil
}
