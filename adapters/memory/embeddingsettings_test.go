package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestEmbeddingSettings(t *testing.T) {
	contract.RunEmbeddingSettings(t, func(*testing.T) ports.EmbeddingSettings { return memory.NewEmbeddingSettings() })
}
