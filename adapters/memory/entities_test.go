package memory_test

import (
	"context"
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
			Seed: func(t *testing.T, d *dbsync.Database) {
				if err := sync.CreateDatabase(context.Background(), d); err != nil {
					t.Fatal(err)
				}
			},
			Deltas: func(_ *testing.T, id string) []ports.FeedRow { return sync.FeedRows(id) }}
	})
}
