package postgres_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

// TestContractProviderStore runs the contract of organizations' own
// providers on both backends, and the race of updates on native PostgreSQL.
func TestContractProviderStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunProviderStore(t, func(*testing.T) ports.ProviderStore { return postgres.NewProviderStore(db) })
			if b.parallel {
				contract.RunProviderStoreConcurrency(t, func(*testing.T) ports.ProviderStore { return postgres.NewProviderStore(db) })
			}
		})
	}
}
