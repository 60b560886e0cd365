package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/test/contract"
)

func consumerFixture(*testing.T) contract.ConsumerFixture {
	s := memory.NewSyncStore()
	return contract.ConsumerFixture{Credentials: memory.NewCredentialStore(s), Snapshots: s,
		Seed: func(_ *testing.T, d *dbsync.Database, head int64, es []*dbsync.Entity) { s.SeedSync(d, head, es) }}
}

func TestConsumerStores(t *testing.T) {
	t.Run("CredentialStore", func(t *testing.T) { contract.RunCredentialStore(t, consumerFixture) })
	t.Run("SnapshotReader", func(t *testing.T) { contract.RunSnapshotReader(t, consumerFixture) })
}
