package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestProviderStore(t *testing.T) {
	contract.RunProviderStore(t, func(*testing.T) ports.ProviderStore { return memory.NewProviderStore() })
	contract.RunProviderStoreConcurrency(t, func(*testing.T) ports.ProviderStore { return memory.NewProviderStore() })
}
