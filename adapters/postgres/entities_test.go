package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestEntities(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunEntities(t, func(t *testing.T) contract.EntitiesFixture {
				return contract.EntitiesFixture{UnitOfWorkFixture: uowFixture(t, db.DB), Entities: postgres.NewEntityStore(db.DB),
					Seed:   func(t *testing.T, d *dbsync.Database) { SeedDatabase(t, db.DB, d) },
					Deltas: func(t *testing.T, id string) []ports.FeedRow { return feedRows(t, db.DB, id) }}
			})
		})
	}
}

// SeedDatabase inserts a registration, its links and its feed, as the
// registry does.
func SeedDatabase(t *testing.T, db *bun.DB, d *dbsync.Database) {
	t.Helper()
	ctx := context.Background()
	_, err := db.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy,
		index_scalars, notify_debounce_s, max_threshold_timeout_s, key_language, snapshot_required_from, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.ID, d.OrgID, d.Name, d.PageLimit, string(d.OnGaps),
		string(d.PKStrategy), string(d.IndexScalars), d.NotifyDebounceS, d.MaxThresholdTimeoutS, d.KeyLanguage,
		d.SnapshotRequiredFrom, d.CreatedAt, d.UpdatedAt)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range d.Links {
		var shipped any
		if l.Shipped != nil {
			b, _ := json.Marshal(l.Shipped)
			shipped = string(b)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO database_links (database_id, schema_id, org_id, linked_at,
			enrichment_enabled, shipped, shipped_hash) VALUES (?, ?, ?, ?, ?, ?::jsonb, ?)`, d.ID, l.SchemaID, d.OrgID, l.LinkedAt,
			l.EnrichmentEnabled, shipped, l.ShippedHash); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, d.ID); err != nil {
		t.Fatal(err)
	}
}

func feedRows(t *testing.T, db *bun.DB, databaseID string) []ports.FeedRow {
	t.Helper()
	var rows []struct {
		ID         int64     `bun:"id"`
		Kind       string    `bun:"kind"`
		Op         string    `bun:"op"`
		SQL        string    `bun:"sql"`
		Draft      string    `bun:"draft"`
		Payload    string    `bun:"payload"`
		BatchID    string    `bun:"batch_id"`
		Revision   int64     `bun:"revision"`
		EntityType string    `bun:"entity_type"`
		EntityID   string    `bun:"entity_id"`
		SchemaID   string    `bun:"schema_id"`
		RecordID   string    `bun:"record_id"`
		CreatedAt  time.Time `bun:"created_at"`
	}
	if err := db.NewRaw(`SELECT id, kind, op, sql, coalesce(draft::text, '') AS draft, payload::text AS payload, batch_id, revision, entity_type, entity_id,
		schema_id, record_id, created_at FROM deltas WHERE database_id = ? ORDER BY id`, databaseID).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := make([]ports.FeedRow, len(rows))
	for i, r := range rows {
		if r.Draft != "" {
			sql, err := dbsync.DraftSQL([]byte(r.Draft), r.Revision)
			if err != nil {
				t.Fatal(err)
			}
			r.SQL = sql
		}
		out[i] = ports.FeedRow{Delta: delta.Delta{ID: r.ID, Kind: delta.Kind(r.Kind), Op: delta.Op(r.Op), SQL: r.SQL,
			Payload: json.RawMessage(r.Payload), BatchID: r.BatchID, Revision: r.Revision, EntityType: r.EntityType,
			CreatedAt: r.CreatedAt}, EntityID: r.EntityID, SchemaID: r.SchemaID, RecordID: r.RecordID}
	}
	return out
}
