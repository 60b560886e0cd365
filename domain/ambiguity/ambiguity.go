// Package ambiguity judges property names in the context of their parent:
// names that admit several readings (ambiguous) or none (unmappable), and
// related items that mix the related entity's own facts with facts about
// the pairing (identity scoping). It builds the subject of an analysis from
// a sample object or a schema document, the prompt and the JSON Schema of
// the model's answer, keeps the answer's usable part, and writes verdicts
// into a schema document. It does no I/O.
package ambiguity

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// Kind is what is wrong with a name.
type Kind string

// Kinds of finding.
const (
	// Ambiguous: several readings compete (also an unframed value: no unit,
	// period, range or polarity).
	Ambiguous Kind = "ambiguous"
	// Unmappable: the parent has no such fact, so a model would invent one.
	Unmappable Kind = "unmappable"
)

// Level is how far the readings' data would differ.
type Level string

// Levels of finding.
const (
	Low    Level = "low"
	Medium Level = "medium"
	High   Level = "high"
)

// Finding is the verdict on one property (the reference's AmbiguityFinding).
type Finding struct {
	Path            string   `json:"path"`
	Kind            Kind     `json:"kind"`
	Level           Level    `json:"level"`
	Interpretations []string `json:"interpretations"`
	Note            string   `json:"note"`
	SuggestedNames  []string `json:"suggested_names"`
	// SuggestedDescription pins one meaning; asked for by the saved-schema
	// check only.
	SuggestedDescription string `json:"suggested_description,omitempty"`
}

// ScopingFinding is a related item that mixes the related entity's own
// facts (EntityFields) with facts about the pairing (PairFields): the
// reference's IdentityScopingFinding.
type ScopingFinding struct {
	Path                string   `json:"path"`
	Mixed               bool     `json:"mixed"`
	EntityFields        []string `json:"entity_fields"`
	PairFields          []string `json:"pair_fields"`
	SuggestedEntityName string   `json:"suggested_entity_name,omitempty"`
	Note                string   `json:"note"`
}

// Answer is what the model is asked to answer.
type Answer struct {
	Findings        []Finding        `json:"findings"`
	IdentityScoping []ScopingFinding `json:"identity_scoping"`
}

// Site is one property to judge.
type Site struct {
	// Path is the dotted path (items of an array are addressed through the
	// array's name, without an index).
	Path   string `json:"path"`
	Name   string `json:"name"`
	Parent string `json:"parent"`
	Type   string `json:"type,omitempty"`
	// Description is the schema's, when the subject is a schema.
	Description string `json:"description,omitempty"`
	// Example is a value seen in the sample, or the schema's first example.
	Example any `json:"example,omitempty"`
}

// Relation is a related-item site: an object or an array of objects, with
// the fields of its items.
type Relation struct {
	Path   string   `json:"path"`
	Fields []string `json:"fields"`
}

// Subject is what an analysis judges.
type Subject struct {
	// Entity names the root (the schema's title or name; "entity" for a
	// sample).
	Entity    string     `json:"entity"`
	Sites     []Site     `json:"properties"`
	Relations []Relation `json:"relationship_sites"`
}

// Limits of one analysis, so that a prompt stays bounded.
const (
	MaxSites      = 400
	maxDepth      = 12
	maxExampleLen = 120
)

// FromSample returns the subject of a sample object: every property, at
// every depth, the items of arrays merged.
func FromSample(sample map[string]any) Subject {
	s := Subject{Entity: "entity"}
	var walk func(obj map[string]any, prefix, parent string, depth int)
	sites := map[string]int{}
	walk = func(obj map[string]any, prefix, parent string, depth int) {
		if depth > maxDepth {
			return
		}
		for _, name := range sortedKeys(obj) {
			path := join(prefix, name)
			v := obj[name]
			i, seen := sites[path]
			if !seen {
				if len(s.Sites) >= MaxSites {
					return
				}
				sites[path] = len(s.Sites)
				s.Sites = append(s.Sites, Site{Path: path, Name: name, Parent: parent})
				i = len(s.Sites) - 1
			}
			site := &s.Sites[i]
			if site.Type == "" || site.Type == "null" {
				site.Type = jsonType(v)
			}
			if site.Example == nil {
				site.Example = example(v)
			}
			switch x := v.(type) {
			case map[string]any:
				s.relation(path, sortedKeys(x))
				walk(x, path, name, depth+1)
			case []any:
				var fields []string
				for _, it := range x {
					if m, ok := it.(map[string]any); ok {
						fields = union(fields, sortedKeys(m))
						walk(m, path, name, depth+1)
					}
				}
				if len(fields) > 0 {
					s.relation(path, fields)
				}
			}
		}
	}
	walk(sample, "", "entity", 0)
	return s
}

func (s *Subject) relation(path string, fields []string) {
	for i := range s.Relations {
		if s.Relations[i].Path == path {
			s.Relations[i].Fields = union(s.Relations[i].Fields, fields)
			return
		}
	}
	s.Relations = append(s.Relations, Relation{Path: path, Fields: fields})
}

// FromSchema returns the subject of a schema document (top-level
// properties, or the reference's root entity definition): every property
// through nested objects, array items and local $refs.
func FromSchema(doc map[string]any) Subject {
	root := rootOf(doc)
	s := Subject{Entity: "entity"}
	for _, k := range []string{"title", "name"} {
		if n, _ := root[k].(string); n != "" {
			s.Entity = n
			break
		}
		if n, _ := doc[k].(string); n != "" {
			s.Entity = n
			break
		}
	}
	var walk func(obj map[string]any, prefix, parent string, depth int)
	walk = func(obj map[string]any, prefix, parent string, depth int) {
		if depth > maxDepth {
			return
		}
		props, _ := jsondoc.Deref(doc, obj)["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			if len(s.Sites) >= MaxSites {
				return
			}
			p, _ := props[name].(map[string]any)
			if p == nil {
				continue
			}
			path := join(prefix, name)
			site := Site{Path: path, Name: name, Parent: parent, Type: typeOf(jsondoc.Deref(doc, p))}
			site.Description, _ = p["description"].(string)
			if ex, ok := p["examples"].([]any); ok && len(ex) > 0 {
				site.Example = example(ex[0])
			}
			s.Sites = append(s.Sites, site)
			if obj := objectOf(doc, p); obj != nil {
				props, _ := obj["properties"].(map[string]any)
				if len(props) > 0 {
					s.relation(path, sortedKeys(props))
				}
				walk(obj, path, name, depth+1)
			}
		}
	}
	walk(root, "", s.Entity, 0)
	return s
}

// rootOf returns the entity definition of a document: itself, or its
// "root" when it has no top-level properties.
func rootOf(doc map[string]any) map[string]any {
	if r, ok := doc["root"].(map[string]any); ok {
		if _, has := doc["properties"]; !has {
			return r
		}
	}
	return doc
}

// objectOf returns the object schema of a property: itself, its $ref's
// target, or its array's items; nil for a scalar.
func objectOf(doc, p map[string]any) map[string]any {
	p = jsondoc.Deref(doc, p)
	if jsondoc.HasType(p, "array") {
		items, _ := p["items"].(map[string]any)
		p = jsondoc.Deref(doc, items)
	}
	if p == nil {
		return nil
	}
	if jsondoc.HasType(p, "object") || p["properties"] != nil {
		return p
	}
	return nil
}

func typeOf(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, v := range t {
			if s, ok := v.(string); ok && s != "null" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "|")
	}
	if p["properties"] != nil {
		return "object"
	}
	return ""
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// example is a short scalar example of v (nil for containers and null).
func example(v any) any {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > maxExampleLen {
			r := []rune(x)
			return string(r[:maxExampleLen]) + "…"
		}
		return x
	case bool, float64, json.Number:
		return x
	case []any:
		for _, it := range x {
			if e := example(it); e != nil {
				return e
			}
		}
	}
	return nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// Report is the outcome of an analysis (the reference's
// AmbiguityCheckResponse, without its record and schema fields).
type Report struct {
	AnalyzedCount   int              `json:"analyzed_count"`
	Findings        []Finding        `json:"findings"`
	IdentityScoping []ScopingFinding `json:"identity_scoping"`
	// Summary counts the findings per level, low ones included (which the
	// findings list leaves out).
	Summary map[string]int `json:"summary"`
}

// Protected reports whether a site is one the caller owns: its name or its
// path is listed.
func Protected(site Site, protected []string) bool {
	for _, p := range protected {
		if p == site.Name || p == site.Path {
			return true
		}
	}
	return false
}

// Normalize keeps the usable part of a model's answer about subject: one
// finding per known property (the first), with at most 4
// interpretations and 3 suggested names (never the current name); only
// medium and high findings are listed, and every level is counted. A
// protected property is still flagged, but no rename is proposed for it
// (the reference's protected_fields). Scoping findings are kept for known
// relationship sites whose entity and pair fields are disjoint, non-empty
// fields of the site.
func Normalize(a Answer, subject Subject, protected []string) Report {
	rep := Report{AnalyzedCount: len(subject.Sites), Findings: []Finding{}, IdentityScoping: []ScopingFinding{},
		Summary: map[string]int{string(Low): 0, string(Medium): 0, string(High): 0}}
	order := map[string]int{}
	for i, s := range subject.Sites {
		order[s.Path] = i
	}
	seen := map[string]bool{}
	for _, f := range a.Findings {
		i, ok := order[f.Path]
		if !ok || seen[f.Path] {
			continue
		}
		switch f.Level {
		case Low, Medium, High:
		default:
			continue
		}
		if f.Kind != Unmappable {
			f.Kind = Ambiguous
		}
		seen[f.Path] = true
		site := subject.Sites[i]
		f.Interpretations = clean(f.Interpretations, 4, "")
		f.SuggestedNames = clean(f.SuggestedNames, 3, site.Name)
		f.Note = strings.TrimSpace(f.Note)
		f.SuggestedDescription = strings.TrimSpace(f.SuggestedDescription)
		if Protected(site, protected) {
			f.SuggestedNames = []string{}
		}
		rep.Summary[string(f.Level)]++
		if f.Level != Low {
			rep.Findings = append(rep.Findings, f)
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool { return order[rep.Findings[i].Path] < order[rep.Findings[j].Path] })
	rels := map[string]Relation{}
	for _, r := range subject.Relations {
		rels[r.Path] = r
	}
	done := map[string]bool{}
	for _, sf := range a.IdentityScoping {
		r, ok := rels[sf.Path]
		if !ok || done[sf.Path] {
			continue
		}
		ent, pair := within(sf.EntityFields, r.Fields), within(sf.PairFields, r.Fields)
		if len(ent) == 0 || len(pair) == 0 || overlaps(ent, pair) {
			continue
		}
		done[sf.Path] = true
		rep.IdentityScoping = append(rep.IdentityScoping, ScopingFinding{Path: sf.Path, Mixed: true, EntityFields: ent, PairFields: pair,
			SuggestedEntityName: strings.TrimSpace(sf.SuggestedEntityName), Note: strings.TrimSpace(sf.Note)})
	}
	sort.SliceStable(rep.IdentityScoping, func(i, j int) bool { return rep.IdentityScoping[i].Path < rep.IdentityScoping[j].Path })
	return rep
}

func clean(in []string, n int, not string) []string {
	out := []string{}
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" || s == not || contains(out, s) {
			continue
		}
		out = append(out, s)
		if len(out) == n {
			break
		}
	}
	return out
}

func within(fields, allowed []string) []string {
	var out []string
	for _, f := range fields {
		if contains(allowed, f) && !contains(out, f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// describe is the default suggested description of a finding: its first
// reading.
func describe(f Finding) string {
	if f.SuggestedDescription != "" {
		return f.SuggestedDescription
	}
	if len(f.Interpretations) > 0 {
		return fmt.Sprintf("%s.", strings.TrimSuffix(f.Interpretations[0], "."))
	}
	return ""
}
