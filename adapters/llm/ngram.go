package llm

import (
	"context"
	"fmt"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// BuiltinProvider is the provider name of the embedding models enrich
// computes itself. Like SandboxProvider it is reserved, so that
// builtin::* always means them; unlike the sandbox they are always
// offered: they are real (if modest) embeddings, not stand-ins.
const BuiltinProvider = "builtin"

// NgramModel is the built-in embedding model: character 3-gram hashing
// into concept.NgramDims dimensions (concept.NgramEmbed). It needs no
// network and no key, costs nothing and always gives the same vector for
// the same text, so it is the default of a fresh service and of tests.
var NgramModel = model.Key{Provider: BuiltinProvider, Model: fmt.Sprintf("ngram-%d", concept.NgramDims)}

// builtinEmbedders are the built-in embedding models and their vector
// sizes.
var builtinEmbedders = map[model.Key]int{NgramModel: concept.NgramDims}

// EmbeddingModels lists the embedding models the registry offers itself,
// with their vector sizes (Dims) and zero prices. They are not chat
// models, so Models (the catalog enrichment picks from) leaves them out.
func (r *Registry) EmbeddingModels() []model.Info {
	return []model.Info{{
		Key:         NgramModel,
		DisplayName: fmt.Sprintf("Built-in n-gram embedding (deterministic, no network, %d dimensions)", concept.NgramDims),
		Dims:        concept.NgramDims,
	}}
}

// embedBuiltin answers an embedding call to a built-in model; false when
// req names none (or an organization's endpoint, which takes precedence
// over any built-in name, as it does for chat).
func embedBuiltin(ctx context.Context, req ports.EmbedRequest) (ports.EmbedResponse, bool, error) {
	dims, ok := builtinEmbedders[req.Model]
	if !ok || (req.Credential != nil && req.Credential.Endpoint != nil) {
		return ports.EmbedResponse{}, false, nil
	}
	vecs := make([][]float32, len(req.Texts))
	for i, t := range req.Texts {
		if i%embedBatch == 0 {
			if err := ctx.Err(); err != nil {
				return ports.EmbedResponse{}, true, classify(ctx, req.Model, err)
			}
		}
		vecs[i] = concept.NgramEmbed(t, dims)
	}
	// No provider counts tokens here, and the model is free.
	return ports.EmbedResponse{Vectors: vecs}, true, nil
}
