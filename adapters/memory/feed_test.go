package memory_test

import (
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/test/contract"
)

func feedFixture(*testing.T) contract.FeedFixture {
	s := memory.NewSyncStore()
	n := 0
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), nil).WithSync(s)
	return contract.FeedFixture{
		Store: s, Writer: s, UoW: uow,
		Register: func(_ *testing.T, orgID string, set delta.Settings, schemaIDs ...string) string {
			n++
			d := dbsync.Database{ID: "db-" + string(rune('a'+n)), OrgID: orgID, Name: "n", PageLimit: set.PageLimit,
				PurgeOnAck: set.PurgeOnAck, PurgeEntityState: set.PurgeEntityState, CreatedAt: time.Now()}
			for _, id := range schemaIDs {
				d.Links = append(d.Links, dbsync.Link{SchemaID: id})
			}
			s.SeedDatabase(&d)
			return d.ID
		},
		PutEntity:    func(_ *testing.T, e dbsync.Entity) { s.SeedEntity(e) },
		EntityStored: func(_ *testing.T, id string) bool { return s.EntityStored(id) },
		Mark:         func(_ *testing.T, id string, from int64, hashes map[string]string) { s.MarkDatabase(id, from, hashes) },
	}
}

func TestFeedStore(t *testing.T) {
	contract.RunFeedStore(t, feedFixture)
	t.Run("Concurrency", func(t *testing.T) { contract.RunFeedConcurrency(t, feedFixture(t), 4, 2) })
}
