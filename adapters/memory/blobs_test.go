package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestBlobStore(t *testing.T) {
	newStore := func(*testing.T) ports.BlobStore { return memory.NewBlobStore() }
	contract.RunBlobStore(t, newStore)
	contract.RunBlobStoreConcurrency(t, newStore)
}
