package postgres_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

// TestEmbeddingSettings runs the suite on native PostgreSQL and PGlite.
func TestEmbeddingSettings(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunEmbeddingSettings(t, func(*testing.T) ports.EmbeddingSettings { return postgres.NewEmbeddingSettings(db) })
		})
	}
}
