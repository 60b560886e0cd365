package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestOrgStore(t *testing.T) {
	contract.RunOrgStore(t, func(*testing.T) ports.OrgStore { return memory.NewOrgStore() })
}

func TestUserStore(t *testing.T) {
	contract.RunUserStore(t, func(*testing.T) ports.UserStore { return memory.NewUserStore() })
}

func TestAPIKeyStore(t *testing.T) {
	contract.RunAPIKeyStore(t, func(*testing.T) ports.APIKeyStore { return memory.NewAPIKeyStore() })
}

func TestRefreshTokenStore(t *testing.T) {
	contract.RunRefreshTokenStore(t, func(*testing.T) ports.RefreshTokenStore { return memory.NewRefreshTokenStore() })
	contract.RunRefreshTokenStoreConcurrency(t, func(*testing.T) ports.RefreshTokenStore { return memory.NewRefreshTokenStore() })
}

func TestSchemaStore(t *testing.T) {
	contract.RunSchemaStore(t, func(*testing.T) ports.SchemaStore { return memory.NewSchemaStore() })
}

func TestRecordStore(t *testing.T) {
	contract.RunRecordStore(t, func(*testing.T) ports.RecordStore { return memory.NewRecordStore() })
}

func TestJobStore(t *testing.T) {
	contract.RunJobStore(t, func(*testing.T) ports.JobStore { return memory.NewJobStore() })
	contract.RunJobStoreConcurrency(t, func(*testing.T) ports.JobStore { return memory.NewJobStore() })
}

func TestEventLog(t *testing.T) {
	contract.RunEventLog(t, func(*testing.T) ports.EventLog { return memory.NewEventLog() })
}
