package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestEntities(t *testing.T) {
	contract.RunEntities(t, func(*testing.T) contract.EntitiesFixture {
		f := newUoW(nil)
		sync := memory.NewSyncStore()
		f.UoW.(*memory.UnitOfWork).WithSync(sync)
		return contract.EntitiesFixture{UnitOfWorkFixture: f, Entities: sync,
			Seed:   func(_ *testing.T, d *dbsync.Database) { sync.SeedDatabase(d) },
			Deltas: func(_ *testing.T, id string) []ports.FeedRow { return sync.FeedRows(id) }}
	})
}
