package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Formats are the values a string property's format may take (the
// reference's PropertySchema.format).
var Formats = []string{"date", "time", "date-time", "uuid", "email", "uri", "ipv4", "ipv6"}

// jsonTypes are the JSON Schema types a property may name.
var jsonTypes = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// CheckStructure applies the structural rules a generated or AI-edited
// schema must satisfy beyond compiling as JSON Schema, and returns every
// violation (nil when there is none), each naming its property path:
//  1. the document is an object of type "object";
//  2. with at least one property;
//  3. every property names a known type (or a $ref);
//  4. an array says what its items are, and an object property (or object
//     items) lists its properties, unless it is open (additionalProperties)
//     or a $ref;
//  5. a format is one of Formats, on a string;
//  6. a pattern is combined with neither format nor multilingual;
//  7. a property's expertise names a domain of x-expertiseDomains;
//  8. there are no more expertise domains than top-level properties (the
//     property count caps them).
func CheckStructure(doc map[string]any) []string {
	var out []string
	if t, _ := doc["type"].(string); t != "object" {
		out = append(out, `the schema's top-level "type" must be "object"`)
	}
	props, _ := doc["properties"].(map[string]any)
	if len(props) == 0 {
		return append(out, `the schema's "properties" must name at least one property`)
	}
	domains, _ := doc["x-expertiseDomains"].(map[string]any)
	if len(domains) > len(props) {
		out = append(out, fmt.Sprintf("x-expertiseDomains names %d domains but the schema has only %d top-level properties; merge domains", len(domains), len(props)))
	}
	var walk func(props map[string]any, path string)
	walk = func(props map[string]any, path string) {
		for _, name := range sortedKeys(props) {
			p := join(path, name)
			node, ok := props[name].(map[string]any)
			if !ok {
				out = append(out, fmt.Sprintf("%s: a property must be an object", p))
				continue
			}
			out = append(out, checkProperty(node, p, domains)...)
			ts := TypesOf(node)
			if slices.Contains(ts, "object") {
				if sub, ok := node["properties"].(map[string]any); ok && len(sub) > 0 {
					walk(sub, p)
				} else if _, ref := node["$ref"]; !ref && node["additionalProperties"] == nil {
					out = append(out, fmt.Sprintf("%s: an object property must list its properties", p))
				}
			}
			if slices.Contains(ts, "array") {
				items, ok := node["items"].(map[string]any)
				if !ok {
					out = append(out, fmt.Sprintf("%s: an array property must say what its items are (items)", p))
					continue
				}
				out = append(out, checkProperty(items, p+"[]", domains)...)
				if slices.Contains(TypesOf(items), "object") {
					if sub, ok := items["properties"].(map[string]any); ok && len(sub) > 0 {
						walk(sub, p+"[]")
					} else if _, ref := items["$ref"]; !ref && items["additionalProperties"] == nil {
						out = append(out, fmt.Sprintf("%s[]: array items of type object must list their properties", p))
					}
				}
			}
		}
	}
	walk(props, "")
	return out
}

func checkProperty(node map[string]any, p string, domains map[string]any) []string {
	var out []string
	ts := TypesOf(node)
	_, ref := node["$ref"]
	_, anyOf := node["anyOf"]
	_, oneOf := node["oneOf"]
	_, enum := node["enum"]
	if len(ts) == 0 && !ref && !anyOf && !oneOf && !enum {
		out = append(out, fmt.Sprintf("%s: a property must have a type", p))
	}
	for _, t := range ts {
		if !slices.Contains(jsonTypes, t) {
			out = append(out, fmt.Sprintf("%s: unknown type %q", p, t))
		}
	}
	format, hasFormat := node["format"].(string)
	if hasFormat {
		if !slices.Contains(Formats, format) {
			out = append(out, fmt.Sprintf("%s: format %q is not one of %s", p, format, strings.Join(Formats, ", ")))
		}
		if len(ts) > 0 && !slices.Contains(ts, "string") {
			out = append(out, fmt.Sprintf("%s: format applies to strings only", p))
		}
	}
	if _, ok := node["pattern"]; ok {
		if hasFormat {
			out = append(out, fmt.Sprintf("%s: pattern cannot be combined with format", p))
		}
		if m, _ := node["multilingual"].(bool); m {
			out = append(out, fmt.Sprintf("%s: pattern cannot be combined with multilingual", p))
		}
	}
	if e, ok := node["expertise"].(string); ok && e != "" {
		if _, known := domains[e]; !known {
			out = append(out, fmt.Sprintf("%s: expertise %q is not a domain of x-expertiseDomains", p, e))
		}
	}
	return out
}

// TypesOf returns a node's type as a list ("string" or ["string","null"]).
func TypesOf(node map[string]any) []string {
	switch t := node["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// PostProcess completes a generated schema with what the samples show, in
// place:
//   - a property missing or null in some sample (or in every one: the model
//     added it) becomes nullable (its type a list that includes "null", and
//     nullable: true);
//   - the distinct scalar values observed become its examples (when it has
//     none);
//   - a property whose samples were language maps becomes multilingual;
//   - an identifying flag on a property that no sample filled is cleared (an
//     empty search key identifies nothing).
//
// Paths are those of Observe.
func PostProcess(doc map[string]any, obs map[string]*Observation, localizedPaths []string) {
	var walk func(props map[string]any, path string)
	walk = func(props map[string]any, path string) {
		for _, name := range sortedKeys(props) {
			node, ok := props[name].(map[string]any)
			if !ok {
				continue
			}
			p := join(path, name)
			o := obs[p]
			if o == nil || o.Nullable() {
				makeNullable(node) // missing or null somewhere, or in no sample at all
			}
			if slices.Contains(localizedPaths, p) {
				node["multilingual"] = true
				delete(node, "pattern")
			}
			if id, _ := node["identifying"].(bool); id && (o == nil || o.Seen == 0) {
				delete(node, "identifying")
			}
			ts := TypesOf(node)
			if o != nil && len(o.Values) > 0 && node["examples"] == nil && scalar(ts) {
				node["examples"] = examples(o.Values)
			}
			if sub, ok := node["properties"].(map[string]any); ok {
				walk(sub, p)
			}
			if items, ok := node["items"].(map[string]any); ok {
				if sub, ok := items["properties"].(map[string]any); ok {
					walk(sub, p+"[]")
				} else if io := obs[p+"[]"]; io != nil && len(io.Values) > 0 && items["examples"] == nil && scalar(TypesOf(items)) {
					items["examples"] = examples(io.Values)
				}
			}
		}
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		walk(props, "")
	}
}

func scalar(ts []string) bool {
	for _, t := range ts {
		if t == "object" || t == "array" {
			return false
		}
	}
	return len(ts) > 0
}

func examples(vs []any) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if n, ok := v.(json.Number); ok {
			if f, err := n.Float64(); err == nil {
				out[i] = f
				continue
			}
		}
		out[i] = v
	}
	return out
}

func makeNullable(node map[string]any) {
	node["nullable"] = true
	ts := TypesOf(node)
	if len(ts) == 0 || slices.Contains(ts, "null") {
		return
	}
	list := make([]any, 0, len(ts)+1)
	for _, t := range ts {
		list = append(list, t)
	}
	node["type"] = append(list, "null")
}

// PropertyPaths lists a schema's property paths (dotted, [] for array
// items), sorted: what a schema promises, for tests and summaries.
func PropertyPaths(doc map[string]any) []string {
	var out []string
	var walk func(props map[string]any, path string)
	walk = func(props map[string]any, path string) {
		for name, v := range props {
			p := join(path, name)
			out = append(out, p)
			node, _ := v.(map[string]any)
			if sub, ok := node["properties"].(map[string]any); ok {
				walk(sub, p)
			}
			if items, ok := node["items"].(map[string]any); ok {
				if sub, ok := items["properties"].(map[string]any); ok {
					walk(sub, p+"[]")
				}
			}
		}
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		walk(props, "")
	}
	sort.Strings(out)
	return out
}
