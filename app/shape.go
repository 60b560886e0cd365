package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// A Shape is what preparing a run derives from a schema's contract alone,
// for one set of languages, preserved paths and strategy: the contract
// localized, the expertise calls and their compiled validators. Every run
// that shares those shares one shape (Enricher.Shapes), so a job
// start no longer decodes, localizes, encodes and plans the same contract
// again. A shape and its documents are never changed once built: the
// domain's transformations (Localize, WithoutPaths, SubSchema) copy what
// they change.
type Shape struct {
	// localized is the contract in the run's languages, preserved paths
	// included (checkPreserved, and a batch's checkDoc).
	localized map[string]any
	// doc is localized without the preserved paths: what the models answer.
	doc    map[string]any
	whole  ports.Validator
	choice enrichment.Choice
	calls  []call
}

// memo returns key's value from m, building it on a miss; without m it
// builds it every time.
func memo[K comparable, V any](ctx context.Context, m ports.Memo[K, V], key K, build func(context.Context, K) (V, error)) (V, error) {
	if m == nil {
		return build(ctx, key)
	}
	return m.Get(ctx, key, build)
}

// contract returns the decoded contract of sc (shared: never change it) and
// its content hash.
func (s *Enricher) contract(ctx context.Context, sc *schema.Schema) (map[string]any, [32]byte, error) {
	raw := sc.Contract()
	sum := sha256.Sum256(raw)
	doc, err := memo(ctx, s.Contracts, sum, func(context.Context, [32]byte) (map[string]any, error) {
		var doc map[string]any
		err := json.Unmarshal(raw, &doc)
		return doc, err
	})
	return doc, sum, err
}

// shapeOf returns the shape of the contract doc (content hash sum) for
// langs, the preserved paths and strategy, building it on first use. A
// contract that does not compile or plan is an error each time, returned
// with the part of the shape that was built (localized is always set, so
// that the caller can check the entity first, as before); only shapes that
// succeeded are kept.
func (s *Enricher) shapeOf(ctx context.Context, schemaID string, sum [32]byte, doc map[string]any, langs []string,
	preserve [][]string, strategy enrichment.Strategy) (*Shape, error) {
	var built *Shape
	build := func(ctx context.Context, _ string) (*Shape, error) {
		built = &Shape{localized: enrichment.Localize(doc, langs)}
		return built, s.buildShape(ctx, built, schemaID, preserve, strategy)
	}
	sh, err := memo(ctx, s.Shapes, shapeKey(sum, langs, preserve, strategy), build)
	if err == nil {
		return sh, nil
	}
	if built == nil {
		// The failed build was another run's: build the part this run
		// reports with its error.
		return build(ctx, "")
	}
	return built, err
}

// buildShape completes sh, whose localized document is set.
func (s *Enricher) buildShape(ctx context.Context, sh *Shape, schemaID string, preserve [][]string, strategy enrichment.Strategy) error {
	sh.doc = enrichment.WithoutPaths(sh.localized, preserve)
	localized, err := json.Marshal(sh.doc)
	if err != nil {
		return fmt.Errorf("schema %s: %w", schemaID, err)
	}
	if sh.whole, err = s.Compiler.Compile(ctx, localized); err != nil {
		// A schema saved before the limits, or under higher ones, or one
		// that its multilingual properties, answered per language, take
		// past them.
		if e := compileError(ctx, "schema_id", err); e != nil {
			if ae, ok := AsError(e); ok && ae.Limit != nil {
				ae.Detail = fmt.Sprintf("schema_id: schema %s, its multilingual properties answered per requested language: %v", schemaID, ae.Limit)
			}
			return e
		}
		return coded(ports.ErrInvalid, "schema_invalid", "schema %s does not compile: %v", schemaID, err)
	}
	domains, err := enrichment.Plan(sh.doc)
	if err != nil {
		return coded(ports.ErrInvalid, "schema_invalid", "schema %s: %v", schemaID, err)
	}
	sh.choice = enrichment.Choose(strategy, domains)
	for _, d := range enrichment.Calls(sh.choice.Strategy, sh.doc, domains) {
		raw, _ := json.Marshal(d.Schema)
		v, err := s.Compiler.Compile(ctx, raw)
		if err != nil {
			if e := compileError(ctx, "schema_id", err); e != nil {
				return e
			}
			return coded(ports.ErrInvalid, "schema_invalid", "expertise %s of schema %s does not compile: %v", d.Key, schemaID, err)
		}
		sh.calls = append(sh.calls, call{domain: d, validator: v, schema: raw})
	}
	return nil
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
