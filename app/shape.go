package app

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// A shape is what preparing a run derives from a schema's contract alone,
// for one set of languages, preserved paths and strategy: the contract
// localized, the expertise calls and their compiled validators. Every run
// that shares those shares one shape, so a job start no longer decodes,
// localizes, encodes and plans the same contract again. A shape and its
// documents are never changed once built: the domain's transformations
// (Localize, WithoutPaths, SubSchema) copy what they change.
type shape struct {
	// localized is the contract in the run's languages, preserved paths
	// included (checkPreserved, and a batch's checkDoc).
	localized map[string]any
	// doc is localized without the preserved paths: what the models answer.
	doc    map[string]any
	whole  ports.Validator
	choice enrichment.Choice
	calls  []call
}

// shapes caches decoded contracts by content and shapes by content and
// options. Like the validators, each map is dropped whole when full.
type shapes struct {
	mu        sync.Mutex
	contracts map[[32]byte]map[string]any
	m         map[string]*shape
}

const maxCachedShapes = 1024

// contract returns the decoded contract of sc (shared: never change it) and
// its content hash.
func (s *Enricher) contract(sc *schema.Schema) (map[string]any, [32]byte, error) {
	raw := sc.Contract()
	sum := sha256.Sum256(raw)
	s.shapes.mu.Lock()
	doc, ok := s.shapes.contracts[sum]
	s.shapes.mu.Unlock()
	if ok {
		return doc, sum, nil
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, sum, err
	}
	s.shapes.mu.Lock()
	if s.shapes.contracts == nil || len(s.shapes.contracts) >= maxCachedShapes {
		s.shapes.contracts = map[[32]byte]map[string]any{}
	}
	s.shapes.contracts[sum] = doc
	s.shapes.mu.Unlock()
	return doc, sum, nil
}

// shapeOf returns the shape of the contract doc (content hash sum) for
// langs, the preserved paths and strategy, building it on first use. A
// contract that does not compile or plan is an error each time, returned
// with the part of the shape that was built (localized is always set, so
// that the caller can check the entity first, as before); only shapes that
// succeeded are kept.
func (s *Enricher) shapeOf(schemaID string, sum [32]byte, doc map[string]any, langs []string, preserve [][]string, strategy enrichment.Strategy) (*shape, error) {
	key := shapeKey(sum, langs, preserve, strategy)
	s.shapes.mu.Lock()
	sh, ok := s.shapes.m[key]
	s.shapes.mu.Unlock()
	if ok {
		return sh, nil
	}
	sh = &shape{localized: enrichment.Localize(doc, langs)}
	sh.doc = enrichment.WithoutPaths(sh.localized, preserve)
	localized, err := json.Marshal(sh.doc)
	if err != nil {
		return sh, fmt.Errorf("schema %s: %w", schemaID, err)
	}
	if sh.whole, err = s.compile(localized); err != nil {
		return sh, coded(ports.ErrInvalid, "schema_invalid", "schema %s does not compile: %v", schemaID, err)
	}
	domains, err := enrichment.Plan(sh.doc)
	if err != nil {
		return sh, coded(ports.ErrInvalid, "schema_invalid", "schema %s: %v", schemaID, err)
	}
	sh.choice = enrichment.Choose(strategy, domains)
	for _, d := range enrichment.Calls(sh.choice.Strategy, sh.doc, domains) {
		raw, _ := json.Marshal(d.Schema)
		v, err := s.compile(raw)
		if err != nil {
			return sh, coded(ports.ErrInvalid, "schema_invalid", "expertise %s of schema %s does not compile: %v", d.Key, schemaID, err)
		}
		sh.calls = append(sh.calls, call{domain: d, validator: v, schema: raw})
	}
	s.shapes.mu.Lock()
	if s.shapes.m == nil || len(s.shapes.m) >= maxCachedShapes {
		s.shapes.m = map[string]*shape{}
	}
	s.shapes.m[key] = sh
	s.shapes.mu.Unlock()
	return sh, nil
}

// shapeKey encodes a shape's inputs unambiguously: the contract's hash,
// then every string length-prefixed and every list counted.
func shapeKey(sum [32]byte, langs []string, preserve [][]string, strategy enrichment.Strategy) string {
	var b strings.Builder
	b.Write(sum[:])
	part := func(s string) { fmt.Fprintf(&b, "%d:%s", len(s), s) }
	part(string(strategy))
	fmt.Fprintf(&b, "L%d", len(langs))
	for _, l := range langs {
		part(l)
	}
	fmt.Fprintf(&b, "P%d", len(preserve))
	for _, p := range preserve {
		fmt.Fprintf(&b, "p%d", len(p))
		for _, seg := range p {
			part(seg)
		}
	}
	return b.String()
}
