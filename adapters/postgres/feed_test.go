package postgres_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/test/contract"
)

var feedSeq atomic.Int64

// feedFixture seeds registrations by inserting their rows directly.
func feedFixture(db *postgres.DB) func(t *testing.T) contract.FeedFixture {
	return func(t *testing.T) contract.FeedFixture {
		ctx := context.Background()
		return contract.FeedFixture{
			Store: postgres.NewFeedStore(db.DB), Writer: postgres.NewFeedWriter(db.DB), UoW: postgres.NewUnitOfWork(db.DB, nil, nil),
			Register: func(t *testing.T, orgID string, set delta.Settings, schemaIDs ...string) string {
				t.Helper()
				id := fmt.Sprintf("db-%d-%d", time.Now().UnixNano(), feedSeq.Add(1))
				if set.PageLimit == 0 {
					set.PageLimit = delta.DefaultPageLimit
				}
				_, err := db.DB.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, purge_on_ack, purge_entity_state,
					on_gaps, pk_strategy, index_scalars, notify_debounce_s, max_threshold_timeout_s, created_at, updated_at)
					VALUES (?, ?, 'n', ?, ?, ?, 'skip_children', 'surrogate', 'filterable', 30, 300, now(), now())`,
					id, orgID, set.PageLimit, set.PurgeOnAck, set.PurgeEntityState)
				if err == nil {
					_, err = db.DB.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, id)
				}
				for _, s := range schemaIDs {
					if err == nil {
						_, err = db.DB.ExecContext(ctx, `INSERT INTO database_links (database_id, schema_id, org_id, linked_at)
							VALUES (?, ?, ?, now())`, id, s, orgID)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				return id
			},
			PutEntity: func(t *testing.T, e dbsync.Entity) {
				_, err := db.DB.ExecContext(ctx, `INSERT INTO entities (id, org_id, schema_id, entity_type, key_identity, payload, revision, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.OrgID, e.SchemaID, e.EntityType, e.KeyIdentity, string(e.Payload), e.Revision, e.UpdatedAt)
				if err != nil {
					t.Fatal(err)
				}
			},
			Mark: func(t *testing.T, databaseID string, from int64, hashes map[string]string) {
				_, err := db.DB.ExecContext(ctx, `UPDATE databases SET snapshot_required_from = ? WHERE id = ?`, from, databaseID)
				for schemaID, h := range hashes {
					if err == nil {
						_, err = db.DB.ExecContext(ctx, `UPDATE database_links SET shipped_hash = ? WHERE database_id = ? AND schema_id = ?`,
							h, databaseID, schemaID)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			},
			EntityStored: func(t *testing.T, id string) bool {
				n, err := db.DB.NewSelect().Table("entities").Where("id = ?", id).Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return n == 1
			},
		}
	}
}

func TestFeedStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunFeedStore(t, feedFixture(db))
			if b.parallel {
				t.Run("Concurrency", func(t *testing.T) { contract.RunFeedConcurrency(t, feedFixture(db)(t), 4, 2) })
			}
		})
	}
}
