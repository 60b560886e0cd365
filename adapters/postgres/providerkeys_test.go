package postgres_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

// TestProviderKeyStore runs the provider-key contract on both backends, and
// the race of picks across two connection pools (two replicas) on native
// PostgreSQL.
func TestProviderKeyStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			db := migrated(t, dsn)
			contract.RunProviderKeyStore(t, func(*testing.T) ports.ProviderKeyStore { return postgres.NewProviderKeyStore(db) })
			if b.parallel {
				other := open(t, dsn)
				contract.RunProviderKeyStoreConcurrency(t, func(*testing.T) []ports.ProviderKeyStore {
					return []ports.ProviderKeyStore{postgres.NewProviderKeyStore(db), postgres.NewProviderKeyStore(other)}
				})
			}
		})
	}
}

func TestUsageLedger(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunUsageLedger(t, func(*testing.T) ports.UsageLedger { return postgres.NewUsageLedger(db) })
		})
	}
}
