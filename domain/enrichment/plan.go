// Package enrichment plans an enrichment: it splits a schema into expertise
// domains, chooses a strategy, builds the prompts, and merges the parts.
package enrichment

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// Strategy is how a schema is split into LLM calls.
type Strategy string

const (
	// MultiExpertise makes one call per expertise domain, in parallel.
	MultiExpertise Strategy = "multi_expertise"
	// SinglePass sends the whole schema in one call.
	SinglePass Strategy = "single_pass"
	// ExpertDomains is one call whose prompt groups the properties by domain.
	ExpertDomains Strategy = "expert_domains"
	// Auto lets the server choose from the schema's shape.
	Auto Strategy = "auto"
)

// Strategies lists the accepted strategy names.
func Strategies() []Strategy { return []Strategy{Auto, MultiExpertise, SinglePass, ExpertDomains} }

// Describe says what a strategy does, for pickers.
func (s Strategy) Describe() string {
	switch s {
	case Auto:
		return "The server picks single_pass or multi_expertise from the schema's shape."
	case MultiExpertise:
		return "One call per expertise domain, in parallel, merged per model."
	case SinglePass:
		return "The whole schema in one call."
	case ExpertDomains:
		return "One call, its prompt sectioned by expertise domain."
	}
	return ""
}

// ParseStrategy returns the strategy named s ("" means Auto).
func ParseStrategy(s string) (Strategy, error) {
	if s == "" {
		return Auto, nil
	}
	for _, st := range Strategies() {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown strategy %q (want auto, multi_expertise, single_pass or expert_domains)", s)
}

// GeneralDomain collects the scalar properties that name no domain.
const GeneralDomain = "general"

// DefaultMaxAttempts is how many times one expertise call is tried, unless
// configured otherwise (ENRICH_LLM_ATTEMPTS), before the model fails with
// model_output_invalid: the reference product's 5.
const DefaultMaxAttempts = 5

// Domain is one expertise domain: a subset of the schema's top-level
// properties answered by one LLM call.
type Domain struct {
	Key         string
	Name        string
	Description string
	Properties  []string
	// Schema is the sub-schema of the domain's properties; the model's answer
	// is validated against it.
	Schema map[string]any
}

// ErrNoProperties is returned for a schema without top-level properties.
var ErrNoProperties = errors.New("schema has no top-level properties")

// carried are top-level keywords every sub-schema keeps so that references
// and vocabularies still resolve.
var carried = []string{"$schema", "$defs", "definitions", "additionalProperties", "x-enums", "x-localized"}

// Plan splits a schema into expertise domains. A property naming a domain
// ("expertise", or "x-expertise") goes to that domain, described by the
// top-level x-expertiseDomains map; otherwise each object or array-of-object
// property is its own domain and the remaining scalars form "general".
// Domains come out sorted by key with general first, properties sorted by name,
// so that the plan is the same for the same schema.
func Plan(doc map[string]any) ([]Domain, error) {
	props, _ := doc["properties"].(map[string]any)
	if len(props) == 0 {
		return nil, ErrNoProperties
	}
	described, _ := doc["x-expertiseDomains"].(map[string]any)
	byKey := map[string]*Domain{}
	for _, name := range sortedKeys(props) {
		p, _ := props[name].(map[string]any)
		key := expertiseOf(p)
		if key == "" {
			if isObjectLike(doc, p) {
				key = name
			} else {
				key = GeneralDomain
			}
		}
		d, ok := byKey[key]
		if !ok {
			d = &Domain{Key: key, Name: key}
			if desc, ok := described[key].(map[string]any); ok {
				if n, _ := desc["name"].(string); n != "" {
					d.Name = n
				}
				d.Description, _ = desc["description"].(string)
			}
			byKey[key] = d
		}
		d.Properties = append(d.Properties, name)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == GeneralDomain) != (keys[j] == GeneralDomain) {
			return keys[i] == GeneralDomain
		}
		return keys[i] < keys[j]
	})
	out := make([]Domain, 0, len(keys))
	for _, k := range keys {
		d := byKey[k]
		d.Schema = SubSchema(doc, d.Properties)
		out = append(out, *d)
	}
	return out, nil
}

// SubSchema returns the schema restricted to the named top-level properties.
func SubSchema(doc map[string]any, names []string) map[string]any {
	props, _ := doc["properties"].(map[string]any)
	sub := map[string]any{"type": "object"}
	for _, k := range carried {
		if v, ok := doc[k]; ok {
			sub[k] = v
		}
	}
	keep := make(map[string]any, len(names))
	in := map[string]bool{}
	for _, n := range names {
		keep[n] = props[n]
		in[n] = true
	}
	sub["properties"] = keep
	if req, ok := doc["required"].([]any); ok {
		var r []any
		for _, v := range req {
			if s, _ := v.(string); in[s] {
				r = append(r, s)
			}
		}
		if len(r) > 0 {
			sub["required"] = r
		}
	}
	return sub
}

func expertiseOf(p map[string]any) string {
	for _, k := range []string{"expertise", "x-expertise"} {
		if s, _ := p[k].(string); strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// isObjectLike reports whether a property is an object or an array of objects,
// following one local $ref.
func isObjectLike(doc, p map[string]any) bool {
	p = jsondoc.Deref(doc, p)
	if jsondoc.HasType(p, "object") {
		return true
	}
	if jsondoc.HasType(p, "array") {
		items, _ := p["items"].(map[string]any)
		return jsondoc.HasType(jsondoc.Deref(doc, items), "object")
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Choice is the outcome of automatic strategy selection.
type Choice struct {
	Strategy Strategy
	Reason   string
	Signals  map[string]any
}

// Choose resolves a requested strategy against the schema's shape. Auto picks
// single_pass for small or flat schemas (one domain, or at most 6 properties)
// and multi_expertise otherwise.
func Choose(requested Strategy, domains []Domain) Choice {
	n := 0
	for _, d := range domains {
		n += len(d.Properties)
	}
	signals := map[string]any{"property_count": n, "domain_count": len(domains)}
	if requested != Auto {
		return Choice{Strategy: requested, Reason: "requested", Signals: signals}
	}
	if len(domains) <= 1 || n <= 6 {
		return Choice{Strategy: SinglePass, Reason: "schema is small or has a single expertise domain", Signals: signals}
	}
	return Choice{Strategy: MultiExpertise, Reason: "schema spans several expertise domains", Signals: signals}
}

// Calls returns the LLM calls a strategy makes for one model: one per domain
// for multi_expertise, one covering everything otherwise.
func Calls(s Strategy, doc map[string]any, domains []Domain) []Domain {
	if s == MultiExpertise {
		return domains
	}
	var all []string
	var parts []string
	for _, d := range domains {
		all = append(all, d.Properties...)
		parts = append(parts, d.Key)
	}
	sort.Strings(all)
	whole := Domain{Key: "all", Name: "all", Properties: all, Schema: SubSchema(doc, all)}
	if s == ExpertDomains {
		whole.Description = "sections: " + strings.Join(parts, ", ")
		whole.Key = "expert_domains"
		whole.Name = whole.Key
	}
	return []Domain{whole}
}

// Merge joins the parts of one model's answer. Domains own disjoint top-level
// properties, so a later part never overwrites an earlier one's key; a
// duplicate key is an error.
func Merge(parts []map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, p := range parts {
		for k, v := range p {
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("property %q answered by two expertise domains", k)
			}
			out[k] = v
		}
	}
	return out, nil
}

// ParseAnswer extracts the JSON object from a model's text: the whole text, or
// a fenced ```json block, or the outermost {...}.
func ParseAnswer(text string) (map[string]any, error) {
	s := strings.TrimSpace(text)
	if i := strings.Index(s, "```"); i >= 0 {
		rest := s[i+3:]
		rest = strings.TrimPrefix(rest, "json")
		if j := strings.Index(rest, "```"); j >= 0 {
			s = strings.TrimSpace(rest[:j])
		}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(s), &out); err == nil && out != nil {
		return out, nil
	}
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		if err := json.Unmarshal([]byte(s[i:j+1]), &out); err == nil && out != nil {
			return out, nil
		}
	}
	return nil, errors.New("answer is not a JSON object")
}
