package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/test/contract"
)

func TestNotifications(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunNotifications(t, func(*testing.T) contract.NotificationsFixture {
				n := postgres.NewNotifications(db.DB)
				return contract.NotificationsFixture{Subscriptions: n, Outbox: n,
					UoW: postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, nil), NewSchema: func(t *testing.T) (string, string) {
						return seedSchema(t, db)
					}}
			})
			contract.RunLinkWebhooks(t, func(*testing.T) contract.LinkWebhooksFixture {
				return contract.LinkWebhooksFixture{Store: postgres.NewLinkWebhooks(db.DB), Feed: postgres.NewFeedWriter(db.DB),
					Seed: func(t *testing.T, orgID string, debounceS, capS int, schemaIDs ...string) string {
						return seedRegistration(t, db, orgID, debounceS, capS, schemaIDs...)
					}}
			})
		})
	}
}

// seedSchema stores an organization and a schema of it.
func seedSchema(t *testing.T, db *postgres.DB) (orgID, schemaID string) {
	t.Helper()
	org := createOrg(t, db)
	sc := &schema.Schema{ID: "sc_" + org, OrgID: org, Name: "s", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	sc.SetContent(json.RawMessage(`{"type":"object"}`))
	if err := postgres.NewSchemaStore(db).CreateSchema(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	return org, sc.ID
}

// seedRegistration stores a registration's rows directly (the registry's
// store is another part's): the registration, its links and its feed.
func seedRegistration(t *testing.T, db *postgres.DB, orgID string, debounceS, capS int, schemaIDs ...string) string {
	t.Helper()
	ctx := context.Background()
	id := "db_" + orgID
	_, err := db.DB.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy,
		index_scalars, notify_debounce_s, max_threshold_timeout_s, created_at, updated_at)
		VALUES (?, ?, 'n', 100, 'reject_entity', 'surrogate', 'filterable', ?, ?, now(), now())`, id, orgID, debounceS, capS)
	if err == nil {
		_, err = db.DB.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, id)
	}
	for _, sc := range schemaIDs {
		if err == nil {
			_, err = db.DB.ExecContext(ctx, `INSERT INTO database_links (database_id, schema_id, org_id, linked_at)
				VALUES (?, ?, ?, now())`, id, sc, orgID)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return id
}
