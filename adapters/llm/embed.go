package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/embeddings"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// embedBatch bounds the texts of one embeddings request: OpenAI takes up
// to 2048 inputs, and a smaller batch keeps a request's body modest.
const embedBatch = 256

// errNoEmbeddings is an embedding call to a provider whose protocol has
// none in enrich (Anthropic's, the sandbox).
var errNoEmbeddings = errors.New("the provider offers no embeddings")

// embedder is what a provider client offers for embeddings: the vectors
// and the input tokens they cost (openAIClient). langchaingo's Ollama
// client is an embeddings.EmbedderClient and reports no usage.
type embedder interface {
	embed(ctx context.Context, texts []string) ([][]float32, int, error)
}

// Embed returns the vectors of req.Texts (ports.Embedder), through
// langchaingo's embeddings.Embedder in batches. The model may be any of a
// configured provider's: embedding models are not chat models, so the
// provider's model list (its chat models) need not name it. Clients are
// built and cached per credential, as for Generate. The built-in models
// (NgramModel) are computed here, with no client.
func (r *Registry) Embed(ctx context.Context, req ports.EmbedRequest) (ports.EmbedResponse, error) {
	if resp, ok, err := embedBuiltin(ctx, req); ok {
		return resp, err
	}
	client, err := r.resolveEmbedder(req)
	if err != nil {
		return ports.EmbedResponse{}, err
	}
	tokens := 0
	var ec embeddings.EmbedderClient
	switch c := client.(type) {
	case embedder:
		// BatchedEmbed calls it once per batch, one after the other.
		ec = embeddings.EmbedderClientFunc(func(ctx context.Context, texts []string) ([][]float32, error) {
			v, n, err := c.embed(ctx, texts)
			tokens += n
			return v, err
		})
	case embeddings.EmbedderClient:
		ec = c
	default:
		return ports.EmbedResponse{}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errNoEmbeddings)
	}
	emb, err := embeddings.NewEmbedder(ec, embeddings.WithBatchSize(embedBatch), embeddings.WithStripNewLines(false))
	if err != nil {
		return ports.EmbedResponse{}, fmt.Errorf("llm: %s: %w", req.Model, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	vecs, err := emb.EmbedDocuments(ctx, req.Texts)
	if err != nil {
		return ports.EmbedResponse{InputTokens: tokens}, classify(ctx, req.Model, err)
	}
	if len(vecs) != len(req.Texts) {
		return ports.EmbedResponse{InputTokens: tokens}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrLLMUnavailable, errEmbeddings)
	}
	return ports.EmbedResponse{Vectors: vecs, InputTokens: tokens}, nil
}

// resolveEmbedder finds the client of an embedding call: an
// organization's endpoint when the credential names one, else a model of
// a configured provider, declared or not.
func (r *Registry) resolveEmbedder(req ports.EmbedRequest) (any, error) {
	if c := req.Credential; c != nil && c.Endpoint != nil {
		_, client, err := r.endpointClient(req.Model, *c.Endpoint)
		return client, err
	}
	e, ok := r.entries[req.Model]
	if !ok {
		p, known := r.providers[req.Model.Provider]
		if !known {
			_, err := r.entry(req.Model)
			return nil, err
		}
		e = &entry{prov: p, info: model.Info{Key: req.Model}}
	}
	if e.fixed != nil {
		return nil, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errNoEmbeddings)
	}
	return r.client(e, req.Credential)
}
