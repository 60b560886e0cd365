package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// ackRowsCTE marks the acknowledged range's rows (?10 now, the range
// (?11, ?12]), or deletes them when purging; quarantined rows stay.
func ackRowsCTE(purge bool, guard string) string {
	if purge {
		return `a AS (DELETE FROM deltas WHERE database_id = ?0 AND id > ?11 AND id <= ?12 AND quarantined_at IS NULL` + guard + ` RETURNING 1)`
	}
	return `a AS (UPDATE deltas SET acked_at = ?10 WHERE database_id = ?0 AND id > ?11 AND id <= ?12 AND quarantined_at IS NULL` +
		guard + ` RETURNING 1)`
}

// Ack acknowledges the deltas up to upTo. Without purge_entity_state it is
// two statements: the state's load, then one that saves the state by
// compare-and-set and marks (or purges) the range's rows only if it won.
func (s *FeedStore) Ack(ctx context.Context, orgID, databaseID string, upTo int64, now time.Time) (ports.AckOutcome, error) {
	now = utc(now)
	var out ports.AckOutcome
	err := retry(databaseID, func() error {
		l, err := s.loadState(ctx, s.db, "ack the feed", databaseID, orgID)
		if err != nil {
			return err
		}
		res, st, err := delta.Ack(l.state, upTo, now, l.set)
		if err != nil {
			return fmt.Errorf("postgres: ack the feed of database %s: %w", databaseID, err)
		}
		if res.Acked.Empty() {
			out = ports.AckOutcome{}
			return nil
		}
		args := append(stateArgs(databaseID, l.version, st, &now), now, res.Acked.After, res.Acked.Through)
		if res.PurgeEntities {
			out, err = s.ackPurgingEntities(ctx, databaseID, res, args)
			return err
		}
		var won, n int64
		err = s.db.NewRaw(`WITH s AS (`+stateSet+`), `+ackRowsCTE(res.PurgeDeltas, ` AND EXISTS (SELECT 1 FROM s)`)+
			` SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM a)`, args...).Scan(ctx, &won, &n)
		if err != nil {
			return fail(err, "ack the feed of database "+databaseID)
		}
		if won == 0 {
			return errLostRace
		}
		out = ports.AckOutcome{Acked: n}
		if res.PurgeDeltas {
			out.PurgedDeltas = n
		}
		return nil
	})
	return out, err
}

// ackPurgingEntities is an ack with purge_entity_state, in a transaction:
// the state saved first (which locks the feed row), then the entity rows
// delta.EntityPurgeable allows deleted, then the range's rows.
func (s *FeedStore) ackPurgingEntities(ctx context.Context, databaseID string, res delta.AckResult, args []any) (ports.AckOutcome, error) {
	var out ports.AckOutcome
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if r, err := tx.NewRaw(stateSet, args...).Exec(ctx); err != nil {
			return fail(err, "save the feed state of database "+databaseID)
		} else if n, _ := r.RowsAffected(); n == 0 {
			return errLostRace
		}
		ids, err := purgeableEntities(ctx, tx, databaseID, res.Acked)
		if err != nil {
			return err
		}
		if out.PurgedEntities, err = deleteEntities(ctx, tx, ids); err != nil {
			return err
		}
		if err := tx.NewRaw(`WITH `+ackRowsCTE(res.PurgeDeltas, "")+` SELECT count(*) FROM a`, args...).Scan(ctx, &out.Acked); err != nil {
			return fail(err, "ack the feed of database "+databaseID)
		}
		if res.PurgeDeltas {
			out.PurgedDeltas = out.Acked
		}
		return nil
	})
	return out, txErr(err, "ack the feed of database "+databaseID)
}

// replicaRow is one registration feeding from a candidate entity's schema.
type replicaRow struct {
	EntityID         string `bun:"entity_id"`
	PurgeEntityState bool   `bun:"purge_entity_state"`
	Watermark        int64  `bun:"watermark"`
	Latest           int64  `bun:"latest"`
	LatestQ          bool   `bun:"latest_q"`
}

// purgeableEntities returns the entities with a delta in the acknowledged
// range that delta.EntityPurgeable allows deleting. It locks their rows
// first, so an enrichment writing one of them either committed before
// (its delta is seen as the latest) or waits.
func purgeableEntities(ctx context.Context, tx bun.Tx, databaseID string, r delta.Range) ([]string, error) {
	var rows []replicaRow
	err := tx.NewRaw(`WITH cand AS (
		SELECT DISTINCT entity_id FROM deltas WHERE database_id = ?0 AND id > ?1 AND id <= ?2 AND entity_id <> '' AND quarantined_at IS NULL
	), ents AS (
		SELECT e.id, e.schema_id FROM entities e WHERE e.id IN (SELECT entity_id FROM cand) ORDER BY e.id FOR UPDATE
	)
	SELECT ents.id AS entity_id, db.purge_entity_state, f.watermark, coalesce(l.id, 0) AS latest,
		coalesce(l.quarantined, false) AS latest_q
	FROM ents JOIN database_links dl ON dl.schema_id = ents.schema_id
	JOIN databases db ON db.id = dl.database_id JOIN delta_feeds f ON f.database_id = dl.database_id
	LEFT JOIN LATERAL (SELECT x.id, x.quarantined_at IS NOT NULL AS quarantined FROM deltas x
		WHERE x.database_id = dl.database_id AND x.entity_id = ents.id ORDER BY x.id DESC LIMIT 1) l ON true
	ORDER BY ents.id`, databaseID, r.After, r.Through).Scan(ctx, &rows)
	if err != nil {
		return nil, fail(err, "find the purgeable entities of database "+databaseID)
	}
	var ids []string
	for i := 0; i < len(rows); {
		j := i
		var reps []delta.Replica
		for ; j < len(rows) && rows[j].EntityID == rows[i].EntityID; j++ {
			reps = append(reps, delta.Replica{PurgeEntityState: rows[j].PurgeEntityState, Watermark: rows[j].Watermark,
				LatestDeltaID: rows[j].Latest, LatestQuarantined: rows[j].LatestQ})
		}
		if delta.EntityPurgeable(reps) {
			ids = append(ids, rows[i].EntityID)
		}
		i = j
	}
	return ids, nil
}

// deleteEntities deletes entity rows, keeping the revision each reached
// (entity_revisions), so that a re-created entity's revisions keep rising.
func deleteEntities(ctx context.Context, tx bun.Tx, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := tx.NewRaw(`WITH del AS (
		DELETE FROM entities WHERE id = ANY(?::text[]) RETURNING schema_id, entity_type, key_identity, revision
	), rev AS (
		INSERT INTO entity_revisions (schema_id, entity_type, key_identity, revision)
		SELECT schema_id, entity_type, key_identity, revision FROM del
		ON CONFLICT (schema_id, entity_type, key_identity) DO UPDATE SET revision = greatest(entity_revisions.revision, EXCLUDED.revision)
		RETURNING 1
	) SELECT count(*) FROM del`, pgdialect.Array(ids)).Scan(ctx, &n)
	if err != nil {
		return 0, fail(err, "purge entity rows")
	}
	return n, nil
}

// Report quarantines the batch of delta deltaID: one statement loads the
// state and the row, one saves the state and marks the batch.
func (s *FeedStore) Report(ctx context.Context, orgID, databaseID string, deltaID int64, applyError string, now time.Time) (delta.ReportResult, error) {
	now = utc(now)
	var out delta.ReportResult
	err := retry(databaseID, func() error {
		l, err := s.load(ctx, s.db, "report a delta", databaseID, orgID, 0, 0,
			`rows AS (SELECT d.* FROM deltas d WHERE d.database_id = ?0 AND d.id = ?4::bigint)`, false, deltaID)
		if err != nil {
			return err
		}
		if len(l.rows) == 0 {
			return fmt.Errorf("postgres: report delta %d of database %s: %w", deltaID, databaseID, ports.ErrNotFound)
		}
		d := l.rows[0].Delta
		res, st, err := delta.Report(l.state, d)
		if err != nil {
			return fmt.Errorf("postgres: report delta %d of database %s: %w", deltaID, databaseID, err)
		}
		if out = res; res.Already {
			return nil
		}
		batch := `id = ?11`
		if d.BatchID != "" {
			batch = `batch_id <> '' AND batch_id = ?13`
		}
		var won int64
		err = s.db.NewRaw(`WITH s AS (`+stateSet+`), q AS (
			UPDATE deltas SET quarantined_at = ?10,
				apply_error = CASE WHEN id = ?11 THEN ?12 ELSE apply_error END,
				apply_error_at = CASE WHEN id = ?11 THEN ?10::timestamptz ELSE apply_error_at END
			WHERE database_id = ?0 AND `+batch+` AND EXISTS (SELECT 1 FROM s) RETURNING 1
		) SELECT (SELECT count(*) FROM s) + 0 * (SELECT count(*) FROM q)`,
			append(stateArgs(databaseID, l.version, st, nil), now, deltaID, applyError, d.BatchID)...).Scan(ctx, &won)
		if err != nil {
			return fail(err, "report a delta of database "+databaseID)
		}
		if won == 0 {
			return errLostRace
		}
		return nil
	})
	return out, err
}

// ListQuarantine returns the quarantined rows in id order.
func (s *FeedStore) ListQuarantine(ctx context.Context, orgID, databaseID string) ([]ports.StoredDelta, error) {
	l, err := s.load(ctx, s.db, "list the quarantine", databaseID, orgID, 0, 0,
		`rows AS (SELECT d.* FROM deltas d WHERE d.database_id = ?0 AND d.quarantined_at IS NOT NULL)`, false)
	return l.rows, err
}

// batchKeys returns the distinct batch keys of rows, in id order.
func batchKeys(rows []ports.StoredDelta) []string {
	var keys []string
	for _, r := range rows {
		if !slices.Contains(keys, r.BatchKey()) {
			keys = append(keys, r.BatchKey())
		}
	}
	return keys
}

// releaseKeys saves delta.Release(keys) by compare-and-set and deletes
// the quarantined rows of keys in one statement; the rows deleted.
func releaseKeys(ctx context.Context, db bun.IDB, databaseID string, l loaded, keys []string) (int64, error) {
	batches, ids := []string{}, []int64{}
	for _, k := range keys {
		if id, ok := strings.CutPrefix(k, "#"); ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				ids = append(ids, n)
			}
			continue
		}
		batches = append(batches, k)
	}
	var won, n int64
	err := db.NewRaw(`WITH s AS (`+stateSet+`), del AS (
		DELETE FROM deltas WHERE database_id = ?0 AND quarantined_at IS NOT NULL
			AND ((batch_id <> '' AND batch_id = ANY(?10::text[])) OR (batch_id = '' AND id = ANY(?11::bigint[])))
			AND EXISTS (SELECT 1 FROM s) RETURNING 1
	) SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM del)`,
		append(stateArgs(databaseID, l.version, delta.Release(l.state, keys...), nil), pgdialect.Array(batches), pgdialect.Array(ids))...).
		Scan(ctx, &won, &n)
	if err != nil {
		return 0, fail(err, "release quarantined deltas of database "+databaseID)
	}
	if won == 0 {
		return 0, errLostRace
	}
	return n, nil
}

// DeleteQuarantined deletes the selected quarantined batches.
func (s *FeedStore) DeleteQuarantined(ctx context.Context, orgID, databaseID string, sel ports.QuarantineSelection) (ports.AckOutcome, error) {
	var out ports.AckOutcome
	ids, ents := sel.DeltaIDs, sel.EntityIDs
	if ids == nil {
		ids = []int64{}
	}
	if ents == nil {
		ents = []string{}
	}
	err := retry(databaseID, func() error {
		l, err := s.load(ctx, s.db, "delete quarantined deltas", databaseID, orgID, 0, 0, `rows AS (SELECT d.* FROM deltas d
			WHERE d.database_id = ?0 AND d.quarantined_at IS NOT NULL
			AND (d.id = ANY(?4::bigint[]) OR (d.entity_id <> '' AND d.entity_id = ANY(?5::text[]))))`, false,
			pgdialect.Array(ids), pgdialect.Array(ents))
		if err != nil || len(l.rows) == 0 {
			out = ports.AckOutcome{}
			return err
		}
		out.PurgedDeltas, err = releaseKeys(ctx, s.db, databaseID, l, batchKeys(l.rows))
		return err
	})
	return out, err
}

// Release deletes the quarantined rows of the batches keyed keys.
func (s *FeedStore) Release(ctx context.Context, orgID, databaseID string, keys []string) (int64, error) {
	var n int64
	err := retry(databaseID, func() error {
		l, err := s.loadState(ctx, s.db, "release quarantined deltas", databaseID, orgID)
		if err != nil {
			return err
		}
		n, err = releaseKeys(ctx, s.db, databaseID, l, keys)
		return err
	})
	return n, err
}

// Redrive appends copies of the selected quarantined batches at the tail
// and deletes the originals, in one transaction: the release (which locks
// the feed row), then the append.
func (s *FeedStore) Redrive(ctx context.Context, orgID, databaseID string, deltaIDs []int64, now time.Time, newBatchID func() string) (ports.RedriveOutcome, error) {
	now = utc(now)
	if deltaIDs == nil {
		deltaIDs = []int64{}
	}
	var out ports.RedriveOutcome
	err := retry(databaseID, func() error {
		out = ports.RedriveOutcome{}
		l, err := s.load(ctx, s.db, "redrive quarantined deltas", databaseID, orgID, 0, 0, `rows AS (SELECT d.* FROM deltas d
			WHERE d.database_id = ?0 AND d.quarantined_at IS NOT NULL AND (d.id = ANY(?4::bigint[]) OR (d.batch_id <> '' AND d.batch_id IN (
				SELECT batch_id FROM deltas WHERE database_id = ?0 AND id = ANY(?4::bigint[]) AND batch_id <> '' AND quarantined_at IS NOT NULL))))`,
			false, pgdialect.Array(deltaIDs))
		if err != nil || len(l.rows) == 0 {
			return err
		}
		copies := ports.RequeueRows(l.rows, now, newBatchID)
		return txErr(inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
			removed, err := releaseKeys(ctx, tx, databaseID, l, batchKeys(l.rows))
			if err != nil {
				return err
			}
			ids, err := NewFeedWriter(tx).Append(ctx, databaseID, copies)
			out = ports.RedriveOutcome{Queued: int64(len(ids)), Removed: removed}
			return err
		}), "redrive quarantined deltas of database "+databaseID)
	})
	return out, err
}
