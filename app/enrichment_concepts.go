package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/jsondoc"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// semanticProp is a semantic_id property of a job's schema with what
// resolving it needs: the schema of the object holding it and its
// concept type.
type semanticProp struct {
	prop concept.Property
	obj  map[string]any
	typ  string
}

// semanticProps lists the schema's semantic_id properties that sit on the
// root, on 1-1 nested objects or on array items, those of definitions
// included at each place a local $ref reaches them (concept.Reachable).
func semanticProps(doc map[string]any, schemaName string) []semanticProp {
	props := concept.Reachable(doc)
	var out []semanticProp
	for _, p := range props {
		obj := objectSchema(doc, p.Object)
		if obj == nil {
			continue
		}
		typ := p.ConceptType
		if typ == "" {
			typ = defaultConceptType(obj, p.Object, schemaName)
		}
		out = append(out, semanticProp{prop: p, obj: obj, typ: typ})
	}
	return out
}

// defaultConceptType is an object's concept type when its property names
// none: the object's title, else the schema's name for the root and the
// holding property's name for a nested object.
func defaultConceptType(obj map[string]any, path []string, schemaName string) string {
	if t, _ := obj["title"].(string); concept.CheckConceptType(t) == nil {
		return t
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] != "[]" {
			return path[i]
		}
	}
	if concept.CheckConceptType(schemaName) == nil {
		return schemaName
	}
	return "entity"
}

// objectSchema follows path (property names and "[]") from the root object
// schema of doc, through local $refs; nil when a step is missing.
func objectSchema(doc map[string]any, path []string) map[string]any {
	s := doc
	if _, has := doc["properties"]; !has {
		s, _ = doc["root"].(map[string]any)
	}
	for _, step := range path {
		s = jsondoc.Deref(doc, s)
		if s == nil {
			return nil
		}
		if step == "[]" {
			s, _ = s["items"].(map[string]any)
			continue
		}
		props, _ := s["properties"].(map[string]any)
		s, _ = props[step].(map[string]any)
	}
	return jsondoc.Deref(doc, s)
}

// identityKeys are the paths IdentityText reads for the property: its
// source keys, else the object's identifying properties and those of its
// 1-1 nested objects.
func (sp semanticProp) identityKeys() (own []string, nested [][]string) {
	if sp.prop.SourceKeys != nil {
		for _, k := range sp.prop.SourceKeys {
			if strings.Contains(k, ".") {
				nested = append(nested, strings.Split(k, "."))
			} else {
				own = append(own, k)
			}
		}
		return own, nested
	}
	props, _ := sp.obj["properties"].(map[string]any)
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		if p["identifying"] == true {
			own = append(own, name)
		}
		inner, _ := p["properties"].(map[string]any)
		for sub, r := range inner {
			if q, _ := r.(map[string]any); q["identifying"] == true {
				nested = append(nested, []string{name, sub})
			}
		}
	}
	return own, nested
}

// objectAt is one object of an output that carries a semantic_id
// property: the object, its JSON path, and the input's object at the same
// place (nil when the input has none).
type objectAt struct {
	obj, input map[string]any
	path       string
}

// objectsAt walks out and in along path, one object per array item.
func objectsAt(out, in map[string]any, path []string) []objectAt {
	cur := []objectAt{{obj: out, input: in, path: "$"}}
	for i, step := range path {
		if step == "[]" {
			continue // taken with the step before it
		}
		array := i+1 < len(path) && path[i+1] == "[]"
		var next []objectAt
		for _, o := range cur {
			v := o.obj[step]
			var iv any
			if o.input != nil {
				iv = o.input[step]
			}
			if !array {
				if m, ok := v.(map[string]any); ok {
					im, _ := iv.(map[string]any)
					next = append(next, objectAt{obj: m, input: im, path: o.path + "." + step})
				}
				continue
			}
			items, _ := v.([]any)
			inItems, _ := iv.([]any)
			for j, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					continue
				}
				var im map[string]any
				if j < len(inItems) {
					im, _ = inItems[j].(map[string]any)
				}
				next = append(next, objectAt{obj: m, input: im, path: o.path + "." + step + "[" + strconv.Itoa(j) + "]"})
			}
		}
		cur = next
	}
	return cur
}

// resolveConcepts resolves the semantic_id properties of a record's output
// (merged, which it updates; fields is the entity's input) before the
// record is stored, a model's record (finish) and a fused one (fuseEntity)
// alike: each object's identity text goes through the ladder, written
// (minting, adding aliases), and its concept id replaces the property's
// value; an id the input already carried is kept. A resolution that fails
// (an embedder down) leaves the property null and the enrichment stands:
// the record keeps the text and lists the property in its
// SemanticUnresolved.
func (s *Enricher) resolveConcepts(ctx context.Context, pl *plan, fields map[string]any, rec *enrichment.Record, merged map[string]any) {
	conceptLinker{Concepts: s.Concepts, Log: s.Log}.resolve(ctx, pl.semantic, fields, rec, merged)
}

// conceptLinker resolves the semantic ids of the records an enrichment,
// an auto-fusion and a manual merge store.
type conceptLinker struct {
	Concepts *ConceptService
	Log      *slog.Logger
}

// resolve is resolveConcepts for the schema's semantic properties.
func (s conceptLinker) resolve(ctx context.Context, semantic []semanticProp, fields map[string]any, rec *enrichment.Record,
	merged map[string]any) {
	if s.Concepts == nil || len(semantic) == 0 {
		return
	}
	changed := false
	for _, sp := range semantic {
		own, nested := sp.identityKeys()
		for _, o := range objectsAt(merged, fields, sp.prop.Object) {
			inputID, _ := o.input[sp.prop.Name].(string)
			text := concept.IdentityText(o.obj, own, nested)
			ref, ok, err := s.resolveOne(ctx, rec.OrgID, sp, text, inputID)
			path := o.path + "." + sp.prop.Name
			if err != nil {
				rec.SemanticUnresolved = append(rec.SemanticUnresolved, enrichment.SemanticUnresolved{JSONPath: path,
					ConceptType: sp.typ, Text: text, Reason: unresolvedReason(err)})
			}
			if !ok {
				if inputID == "" && o.obj[sp.prop.Name] != nil {
					o.obj[sp.prop.Name], changed = nil, true
				}
				continue
			}
			ref.JSONPath = path
			o.obj[sp.prop.Name], changed = ref.ConceptID, true
			rec.SemanticConcepts = append(rec.SemanticConcepts, ref)
		}
	}
	if changed {
		rec.StructuredOutput, _ = json.Marshal(merged)
	}
}

// unresolvedReason is the code of a failed resolution.
func unresolvedReason(err error) string {
	switch {
	case errors.Is(err, rotation.ErrNoUsableKey):
		return enrichment.UnresolvedNoKey
	case errors.Is(err, ports.ErrUnavailable):
		return enrichment.UnresolvedStorage
	}
	return enrichment.UnresolvedFailed
}

// resolveOne resolves one object's identity text; false when it resolved
// to nothing (a blank text, an input id that names no concept), and an
// error when the resolution failed.
func (s conceptLinker) resolveOne(ctx context.Context, orgID string, sp semanticProp, text, inputID string) (enrichment.SemanticConceptRef, bool, error) {
	req := ResolveRequest{Type: sp.typ, EmbeddingModel: sp.prop.EmbeddingModel, Text: text, InputID: inputID, Mode: ResolveWrite,
		Origin: concept.OriginEnrichment}
	if sp.prop.Threshold != nil {
		req.Thresholds = concept.Thresholds{Accept: *sp.prop.Threshold, JudgeFloor: min(concept.DefaultJudgeFloor, *sp.prop.Threshold)}
	}
	res, err := s.Concepts.Resolve(ctx, orgID, req)
	if err != nil {
		s.Log.Warn("semantic_unresolved: the record keeps the text without a concept id", "org_id", orgID,
			"property", sp.prop.Path, "err", err)
		return enrichment.SemanticConceptRef{}, false, err
	}
	c := res.Concept
	if c == nil && res.Outcome.Kind == concept.KeptInputID {
		// The input's id stands; it is linked when it names one of the
		// organization's concepts.
		got, gerr := s.Concepts.Store.GetConcept(ctx, orgID, inputID)
		if gerr != nil {
			return enrichment.SemanticConceptRef{ConceptID: inputID, ConceptType: sp.typ}, false, nil
		}
		c = got
	}
	if c == nil {
		return enrichment.SemanticConceptRef{}, false, nil
	}
	ref := enrichment.SemanticConceptRef{ConceptID: c.ID, ConceptType: c.Type, CanonicalText: c.CanonicalText}
	if m := res.Outcome.Matched; m != nil {
		ref.AliasID = m.AliasID
	}
	if k := res.Outcome.Kind; k == concept.Match || k == concept.JudgedMatch {
		sim := res.Outcome.Similarity
		ref.Cosine = &sim
	}
	if ref.AliasID == "" && res.Outcome.Kind != concept.KeptInputID {
		// A mint or an alias just added: the alias holding the text.
		norm := concept.Normalize(text)
		for _, a := range c.Aliases {
			if a.NormalizedText == norm {
				ref.AliasID = a.ID
			}
		}
	}
	return ref, true, nil
}
