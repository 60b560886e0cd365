package postgres_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/test/contract"
)

func TestConceptStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			newPorts := func(*testing.T) contract.ConceptPorts {
				return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: postgres.NewExactVectorIndex(db)}
			}
			contract.RunConceptStore(t, newPorts)
			contract.RunVectorIndex(t, newPorts)
			// Pages of two vectors: the k best carry over from page to page.
			contract.RunVectorIndex(t, func(*testing.T) contract.ConceptPorts {
				return contract.ConceptPorts{Store: postgres.NewConceptStore(db), Index: postgres.NewExactVectorIndexPaged(db, 2)}
			})
		})
	}
}
