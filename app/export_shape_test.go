package app

import (
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
)

// CachedShape is what the shape cache holds for sc's contract in langs
// (nil: the default) with strategy: the decoded contract, and the shape's
// localized document, its document without the preserved paths and its
// calls' domains. ok is false when no shape is cached for them.
func (s *Enricher) CachedShape(sc *schema.Schema, langs []string, strategy enrichment.Strategy) (contract, localized, doc map[string]any, calls []enrichment.Domain, ok bool) {
	contract, sum, err := s.contract(sc)
	if err != nil {
		return nil, nil, nil, nil, false
	}
	s.shapes.mu.Lock()
	sh := s.shapes.m[shapeKey(sum, EnrichRequest{Languages: langs}.languages(), preservePaths(contract), strategy)]
	s.shapes.mu.Unlock()
	if sh == nil {
		return contract, nil, nil, nil, false
	}
	for _, c := range sh.calls {
		calls = append(calls, c.domain)
	}
	return contract, sh.localized, sh.doc, calls, true
}

// PreservePaths are the contract's preserved paths.
func PreservePaths(contract map[string]any) [][]string { return preservePaths(contract) }
