package inproc_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/test/contract"
)

func TestQueue(t *testing.T) {
	contract.RunJobQueue(t, func(*testing.T) contract.QueueFixture {
		q := inproc.New()
		uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
			memory.NewRecordStore(), memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{}), memory.NewRefreshTokenStore(), q)
		return contract.QueueFixture{Queue: q, UoW: uow}
	})
}
