package ports

import "github.com/entityenrich/enrich/domain/model"

// EmbeddingCatalog describes the embedding models the service can serve.
type EmbeddingCatalog interface {
	// EmbeddingModel returns the embedding model k (its vector size in
	// Dims, its price per million input tokens in Price.InputPerMTok). A
	// model no configured provider serves is ErrUnknownModel; a model that
	// is not an embedding model ErrInvalid.
	EmbeddingModel(k model.Key) (model.Info, error)
}
