package postgres_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestAttachmentStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			contract.RunAttachmentStore(t, func(*testing.T) ports.AttachmentStore { return postgres.NewAttachmentStore(db) })
		})
	}
}
