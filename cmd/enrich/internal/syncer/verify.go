package syncer

import (
	"context"
	"fmt"
	"sort"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
)

// catalogQuery reads a table's primary key columns in key order and
// whether it has the revision column (an entity table).
const catalogQuery = `SELECT coalesce(array_agg(a.attname::text ORDER BY k.n), '{}'),
	EXISTS (SELECT 1 FROM pg_attribute r WHERE r.attrelid = $1::regclass AND r.attname = 'ee_revision' AND NOT r.attisdropped)
FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1::regclass AND i.indisprimary`

// Verify compares the server's checksum with the target's, computed with
// dbsync.ChecksumSQL; it returns the tables that differ (none: equal).
func (s *Syncer) Verify(ctx context.Context) (asOf int64, diffs []string, err error) {
	want, err := s.Feed.Checksum(ctx)
	if err != nil {
		return 0, nil, err
	}
	tx, err := s.Target.Begin(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, q := range dbsync.ChecksumSettings {
		if _, err := tx.Exec(ctx, q); err != nil {
			return 0, nil, err
		}
	}
	var wm int64
	_ = tx.QueryRow(ctx, `SELECT last_delta_id FROM `+dbsync.StateTable+` WHERE database_id = $1`, s.DatabaseID).Scan(&wm)
	if wm != want.AsOf {
		diffs = append(diffs, fmt.Sprintf("the target is at delta %d, the checksum is as of %d", wm, want.AsOf))
	}
	names := make([]string, 0, len(want.Tables))
	for n := range want.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t := relmap.Table{Name: name, Kind: relmap.KindObjects}
		var entity bool
		if err := tx.QueryRow(ctx, catalogQuery, relmap.QuoteIdent(name)).Scan(&t.PrimaryKey, &entity); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if entity {
			t.Kind = relmap.KindEntity
		}
		var n int64
		var h string
		if err := tx.QueryRow(ctx, dbsync.ChecksumSQL(t)).Scan(&n, &h); err != nil {
			return 0, nil, fmt.Errorf("checksum of %s: %w", name, err)
		}
		if n != want.RowCounts[name] || h != want.Tables[name] {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows (hash %s), the server has %d (hash %s)", name, n, h, want.RowCounts[name], want.Tables[name]))
		}
	}
	return want.AsOf, diffs, nil
}
