package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestConceptStore(t *testing.T) {
	newPorts := func(*testing.T) contract.ConceptPorts {
		s := memory.NewConceptStore()
		return contract.ConceptPorts{Store: s, Index: s}
	}
	contract.RunConceptStore(t, newPorts)
	contract.RunVectorIndex(t, newPorts)
	contract.RunExactVectorIndex(t, newPorts)
	t.Run("cut over", func(t *testing.T) { contract.RunConceptCutOver(t, newPorts) })
	t.Run("migrations", func(t *testing.T) { contract.RunConceptMigrations(t, memory.NewConceptMigrations()) })
}

func TestConceptReviews(t *testing.T) {
	contract.RunConceptReviews(t, func(*testing.T) ports.ConceptReviews { return memory.NewConceptReviews() })
}

func TestConceptLinks(t *testing.T) {
	contract.RunConceptLinks(t, func(*testing.T) ports.ConceptLinks { return memory.NewConceptLinks() })
}
