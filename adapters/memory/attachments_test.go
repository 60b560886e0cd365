package memory_test

import (
	"testing"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestAttachmentStore(t *testing.T) {
	contract.RunAttachmentStore(t, func(*testing.T) ports.AttachmentStore { return memory.NewAttachmentStore() })
}
