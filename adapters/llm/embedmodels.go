package llm

import (
	"fmt"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.EmbeddingCatalog = (*Registry)(nil)

// errNotEmbedding is a model the catalog does not know as an embedding
// model.
var errNotEmbedding = fmt.Errorf("not a known embedding model")

// EmbeddingModel describes the embedding model k (ports.EmbeddingCatalog):
// a built-in one (free), or one the catalog marks as an embedding model on
// a configured provider whose protocol has embeddings, priced per million
// input tokens by the configured prices, else the catalog's. A local
// Ollama serves any model it pulled, so any name goes there, free unless
// priced.
func (r *Registry) EmbeddingModel(k model.Key) (model.Info, error) {
	if dims, ok := builtinEmbedders[k]; ok {
		for _, info := range r.EmbeddingModels() {
			if info.Key == k {
				return info, nil
			}
		}
		return model.Info{Key: k, Dims: dims}, nil
	}
	p, ok := r.providers[k.Provider]
	if !ok {
		return model.Info{}, fmt.Errorf("llm: %w %s: no provider %q is configured", ports.ErrUnknownModel, k, k.Provider)
	}
	switch p.Type {
	case TypeOpenAI, TypeGoogleAI, TypeMistral, TypeOllama:
	default:
		return model.Info{}, fmt.Errorf("llm: %s: %w: %w", k, ports.ErrInvalid, errNoEmbeddings)
	}
	ce, known := r.cfg.Catalog.lookup(k)
	if known && !ce.Embedding {
		known = false
	}
	if !known && p.Type != TypeOllama {
		return model.Info{}, fmt.Errorf("llm: %s: %w: %w", k, ports.ErrInvalid, errNotEmbedding)
	}
	info := model.Info{Key: k, DisplayName: k.Model, ContextLength: ce.ContextLength, Dims: ce.Dims}
	switch {
	case known:
		info.Price = price(r.cfg, k, ce, true)
	default:
		info.Price = price(r.cfg, k, ce, false)
		if _, priced := r.cfg.Prices[k.String()]; !priced {
			if _, priced = r.cfg.Prices[k.Model]; !priced {
				info.Price = model.Price{} // the organization's own machine
			}
		}
	}
	return info, nil
}
