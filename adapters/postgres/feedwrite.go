package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.FeedWriter = (*FeedWriter)(nil)

// FeedWriter appends deltas to the deltas table.
type FeedWriter struct{ db bun.IDB }

// NewFeedWriter returns a FeedWriter on db (a transaction inside a unit of
// work).
func NewFeedWriter(db bun.IDB) *FeedWriter { return &FeedWriter{db: db} }

// appendQuery hands out the ids by moving the feed row's next_id, which
// locks the row until the transaction ends, and inserts the rows with
// those ids in the same statement: one round trip.
const appendQuery = `WITH f AS (
	UPDATE delta_feeds SET next_id = next_id + ? WHERE database_id = ? RETURNING next_id - ? AS first
)
INSERT INTO deltas (database_id, id, kind, op, sql, payload, batch_id, revision, entity_type, entity_id,
	schema_id, record_id, created_at)
SELECT ?, f.first + v.ord - 1, v.kind, v.op, v.sql, v.payload::jsonb, v.batch_id, v.revision, v.entity_type,
	v.entity_id, v.schema_id, v.record_id, v.created_at
FROM f, unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], ?::text[], ?::text[],
	?::text[], ?::text[], ?::timestamptz[]) WITH ORDINALITY
	AS v(kind, op, sql, payload, batch_id, revision, entity_type, entity_id, schema_id, record_id, created_at, ord)
ORDER BY v.ord
RETURNING id`

// Append appends rows to the registration's feed in one statement.
func (w *FeedWriter) Append(ctx context.Context, databaseID string, rows []ports.FeedRow) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	args, err := feedArgs(databaseID, rows)
	if err != nil {
		return nil, err
	}
	n := len(rows)
	var ids []int64
	err = w.db.NewRaw(appendQuery, n, databaseID, n, databaseID, pgdialect.Array(args[2]), pgdialect.Array(args[3]),
		pgdialect.Array(args[4]), pgdialect.Array(args[5]), pgdialect.Array(args[6]), pgdialect.Array(args[7]),
		pgdialect.Array(args[8]), pgdialect.Array(args[9]), pgdialect.Array(args[10]), pgdialect.Array(args[11]),
		pgdialect.Array(args[12])).Scan(ctx, &ids)
	if err != nil {
		return nil, conflict(err, "append to the feed of database "+databaseID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("postgres: append to the feed of database %s: %w", databaseID, ports.ErrNotFound)
	}
	return ids, nil
}

// feedArgs validates rows and returns them as the parameters of
// appendDeltasSQL: the count, the registration, then the parallel arrays.
func feedArgs(databaseID string, rows []ports.FeedRow) ([]any, error) {
	n := len(rows)
	var kinds, ops, sqls, payloads, batches, types, entities, schemas, records []string
	revisions := make([]int64, 0, n)
	created := make([]time.Time, 0, n)
	for i, r := range rows {
		r.ID = int64(i + 1) // validated before its id is known
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("postgres: append to the feed of database %s: %w: %w", databaseID, ports.ErrInvalid, err)
		}
		payload := string(r.Payload)
		if payload == "" {
			payload = "{}"
		}
		kinds, ops, sqls = append(kinds, string(r.Kind)), append(ops, string(r.Op)), append(sqls, r.SQL)
		payloads, batches, types = append(payloads, payload), append(batches, r.BatchID), append(types, r.EntityType)
		entities, schemas, records = append(entities, r.EntityID), append(schemas, r.SchemaID), append(records, r.RecordID)
		revisions, created = append(revisions, r.Revision), append(created, utc(r.CreatedAt))
	}
	return []any{n, databaseID, kinds, ops, sqls, payloads, batches, revisions, types, entities, schemas, records,
		created}, nil
}
