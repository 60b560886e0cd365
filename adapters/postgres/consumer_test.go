package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/test/contract"
)

// seedSync inserts a registration with its links, a feed whose last delta
// id is head, and entities, as the registry and the entity layer would.
func seedSync(t *testing.T, db bun.IDB, d *dbsync.Database, head int64, es []*dbsync.Entity) {
	t.Helper()
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy, index_scalars, notify_debounce_s,
		max_threshold_timeout_s, snapshot_required_from, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.ID, d.OrgID, d.Name, d.PageLimit, d.OnGaps, d.PKStrategy, d.IndexScalars, d.NotifyDebounceS, d.MaxThresholdTimeoutS,
		d.SnapshotRequiredFrom, d.CreatedAt, d.UpdatedAt)
	for _, l := range d.Links {
		var shipped any
		if l.Shipped != nil {
			b, err := json.Marshal(l.Shipped)
			if err != nil {
				t.Fatal(err)
			}
			shipped = string(b)
		}
		exec(`INSERT INTO database_links (database_id, schema_id, org_id, linked_at, enrichment_enabled, shipped, shipped_hash)
			VALUES (?, ?, ?, ?, ?, ?::jsonb, ?)`, d.ID, l.SchemaID, d.OrgID, l.LinkedAt, l.EnrichmentEnabled, shipped, l.ShippedHash)
	}
	exec(`INSERT INTO delta_feeds (database_id, next_id) VALUES (?, ?)`, d.ID, head+1)
	for _, e := range es {
		keys, _ := json.Marshal(e.Keys)
		exec(`INSERT INTO entities (id, org_id, schema_id, entity_type, key_identity, keys, semantic_id, payload, revision,
			last_record_id, updated_at) VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, ?::jsonb, ?, ?, ?)`, e.ID, e.OrgID, e.SchemaID,
			e.EntityType, e.KeyIdentity, string(keys), e.SemanticID, string(e.Payload), e.Revision, e.LastRecordID, e.UpdatedAt)
	}
}

func TestConsumerStores(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			fixture := func(*testing.T) contract.ConsumerFixture {
				return contract.ConsumerFixture{Credentials: postgres.NewCredentialStore(db.DB),
					Snapshots: postgres.NewSnapshotReader(db.DB),
					Seed: func(t *testing.T, d *dbsync.Database, head int64, es []*dbsync.Entity) {
						seedSync(t, db.DB, d, head, es)
					}}
			}
			t.Run("CredentialStore", func(t *testing.T) { contract.RunCredentialStore(t, fixture) })
			t.Run("SnapshotReader", func(t *testing.T) { contract.RunSnapshotReader(t, fixture) })
		})
	}
}
