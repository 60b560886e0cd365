package eventhub_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestEventStreamMemory(t *testing.T) {
	contract.RunEventStream(t, func(*testing.T) contract.StreamFixture {
		jobs, events := memory.NewJobStore(), memory.NewEventLog()
		uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
			memory.NewRecordStore(), jobs, events, memory.NewRefreshTokenStore(), nil)
		h := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{PollInterval: 20 * time.Millisecond})
		return contract.StreamFixture{Stream: h, UoW: uow, Jobs: jobs, Events: events}
	})
}

func TestEventStreamPostgres(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"native", pgtest.Native}, {"pglite", pgtest.PGlite}} {
		t.Run(b.name, func(t *testing.T) {
			db, err := postgres.Open(t.Context(), b.dsn(t), postgres.PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := postgres.Migrate(t.Context(), db.DB); err != nil {
				t.Fatal(err)
			}
			contract.RunEventStream(t, func(t *testing.T) contract.StreamFixture {
				uow := postgres.NewUnitOfWork(db.DB, func(bun.Tx) ports.JobEnqueuer { return nil })
				jobs, events := postgres.NewJobStore(db), postgres.NewEventLog(db)
				h := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{PollInterval: 20 * time.Millisecond})
				return contract.StreamFixture{Stream: h, UoW: uow, Jobs: jobs, Events: events}
			})
		})
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }
