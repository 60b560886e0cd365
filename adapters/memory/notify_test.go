package memory_test

import (
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/test/contract"
)

func TestNotifications(t *testing.T) {
	contract.RunNotifications(t, func(*testing.T) contract.NotificationsFixture {
		n := memory.NewNotifications()
		uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
			memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), nil).WithOutbox(n)
		i := 0
		return contract.NotificationsFixture{Subscriptions: n, Outbox: n, UoW: uow,
			NewSchema: func(*testing.T) (string, string) { i++; return "org", "schema-" + string(rune('a'+i)) }}
	})
}

func TestLinkWebhooks(t *testing.T) {
	contract.RunLinkWebhooks(t, func(*testing.T) contract.LinkWebhooksFixture {
		s := memory.NewSyncStore()
		n := 0
		return contract.LinkWebhooksFixture{Store: memory.NewLinkWebhooks(s), Feed: s,
			Seed: func(_ *testing.T, orgID string, debounceS, capS int, schemaIDs ...string) string {
				n++
				d := &dbsync.Database{ID: "db-" + string(rune('a'+n)), OrgID: orgID, NotifyDebounceS: debounceS, MaxThresholdTimeoutS: capS}
				for _, sc := range schemaIDs {
					d.Links = append(d.Links, dbsync.Link{SchemaID: sc, LinkedAt: time.Now(), EnrichmentEnabled: true})
				}
				s.SeedDatabase(d)
				return d.ID
			}}
	})
}
