package fakeports

import (
	"context"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// Embedder is a deterministic ports.Embedder for tests: every model embeds
// with concept.NgramEmbed at the dimensions Dims gives it (384 for a model
// it does not name); a model in FirstWord embeds only a text's first word,
// so that texts sharing it become identical. It counts the texts each
// model embedded, and Hook, when set, runs before each call (a test
// blocks or fails a call there).
type Embedder struct {
	Dims      map[string]int
	FirstWord map[string]bool
	Hook      func(ctx context.Context, model string, texts []string) error

	mu     sync.Mutex
	counts map[string]map[string]int
	calls  int
}

var _ ports.Embedder = (*Embedder)(nil)

// Embed implements ports.Embedder; a text costs one token a word.
func (e *Embedder) Embed(ctx context.Context, req ports.EmbedRequest) (ports.EmbedResponse, error) {
	m := req.Model.String()
	if e.Hook != nil {
		if err := e.Hook(ctx, m, req.Texts); err != nil {
			return ports.EmbedResponse{}, err
		}
	}
	dims := e.Dims[m]
	if dims == 0 {
		dims = concept.NgramDims
	}
	out := ports.EmbedResponse{Vectors: make([][]float32, len(req.Texts))}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]map[string]int{}
	}
	if e.counts[m] == nil {
		e.counts[m] = map[string]int{}
	}
	e.calls++
	for i, t := range req.Texts {
		e.counts[m][t]++
		out.InputTokens += len(strings.Fields(t))
		if e.FirstWord[m] {
			if f := strings.Fields(t); len(f) > 0 {
				t = f[0]
			}
		}
		out.Vectors[i] = concept.NgramEmbed(t, dims)
	}
	return out, nil
}

// Counts returns how many times model embedded each text.
func (e *Embedder) Counts(model string) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for t, n := range e.counts[model] {
		out[t] = n
	}
	return out
}
