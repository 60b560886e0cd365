package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
)

// CachedShape is what the shape memo holds for sc's contract in langs
// (nil: the default) with strategy: the decoded contract, and the shape's
// localized document, its document without the preserved paths and its
// calls' domains. ok is false when no shape is kept for them.
func (s *Enricher) CachedShape(sc *schema.Schema, langs []string, strategy enrichment.Strategy) (contract, localized, doc map[string]any, calls []enrichment.Domain, ok bool) {
	ctx := context.Background()
	contract, sum, err := s.contract(ctx, sc)
	if err != nil || s.Shapes == nil {
		return nil, nil, nil, nil, false
	}
	// A build that fails keeps nothing: this one only looks.
	notKept := errors.New("not kept")
	sh, err := s.Shapes.Get(ctx, shapeKey(sum, EnrichRequest{Languages: langs}.languages(), preservePaths(contract), strategy),
		func(context.Context, string) (*Shape, error) { return nil, notKept })
	if err != nil {
		return contract, nil, nil, nil, false
	}
	for _, c := range sh.calls {
		calls = append(calls, c.domain)
	}
	return contract, sh.localized, sh.doc, calls, true
}

// PreservePaths are the contract's preserved paths.
func PreservePaths(contract map[string]any) [][]string { return preservePaths(contract) }
