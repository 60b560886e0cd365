package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// ErrContractUnsatisfied is the kind of an entity refused by its schema's
// input contract (400 input_contract_unsatisfied, before any spend).
var ErrContractUnsatisfied = errors.New("input contract unsatisfied")

// Contract is what an enrichment request must supply for a schema (the
// reference's EnrichmentInputContract): at least one identifying value,
// every preserved value, and an identifying value in each item of a
// supplied array whose items have identifying properties. Paths are dotted
// property paths from the entity's root.
type Contract struct {
	// IdentifyingKeys are the paths of properties flagged identifying
	// (outside arrays); at least one must carry a usable value.
	IdentifyingKeys []string `json:"identifying_keys"`
	// Preserve are the paths of properties flagged preserve (outside
	// arrays); each must carry a usable value, which is copied into the
	// result and never researched.
	Preserve []string `json:"preserve"`
	// ArrayItemKeys maps the path of an array of objects to the paths,
	// relative to an item, of the item type's identifying properties:
	// supplying the array closes it, and each item must carry one.
	ArrayItemKeys map[string][]string `json:"array_item_keys"`

	// segs keeps each path's property names, so that a property whose
	// name holds a dot is still found.
	segs map[string][]string
}

// Empty reports whether the contract asks nothing of an entity.
func (c Contract) Empty() bool {
	return len(c.IdentifyingKeys) == 0 && len(c.Preserve) == 0 && len(c.ArrayItemKeys) == 0
}

// maxContractDepth bounds the walk of nested objects and $refs, so that a
// recursive schema ends.
const maxContractDepth = 16

// ContractOf derives the input contract of a schema document: a JSON Schema
// with top-level properties, or the reference's internal form with a root
// entity definition ({"root": {"properties": ...}, "$defs": ...}). Local
// $refs (#/$defs/X, #/definitions/X) are followed. A document without
// identifying or preserve flags has the empty contract.
func ContractOf(doc map[string]any) Contract {
	c := Contract{IdentifyingKeys: []string{}, Preserve: []string{}, ArrayItemKeys: map[string][]string{}, segs: map[string][]string{}}
	root := doc
	if r, ok := doc["root"].(map[string]any); ok {
		if _, has := doc["properties"]; !has {
			root = r
		}
	}
	w := walker{doc: doc}
	w.object(root, nil, func(path []string, p map[string]any, depth int) {
		key := c.add(path)
		if flag(p, "identifying") {
			c.IdentifyingKeys = append(c.IdentifyingKeys, key)
		}
		if flag(p, "preserve") {
			c.Preserve = append(c.Preserve, key)
		}
		if items := w.arrayItems(p); items != nil {
			var keys []string
			w.object(items, nil, func(ip []string, q map[string]any, _ int) {
				if flag(q, "identifying") || flag(q, "database_key") {
					keys = append(keys, c.add(ip))
				}
			}, depth+1)
			if len(keys) > 0 {
				sort.Strings(keys)
				c.ArrayItemKeys[key] = keys
			}
		}
	}, 0)
	sort.Strings(c.IdentifyingKeys)
	sort.Strings(c.Preserve)
	return c
}

// ContractOfJSON is ContractOf for an encoded document; a document that is
// not a JSON object has the empty contract.
func ContractOfJSON(raw json.RawMessage) Contract {
	var doc map[string]any
	if json.Unmarshal(raw, &doc) != nil {
		return ContractOf(nil)
	}
	return ContractOf(doc)
}

func (c *Contract) add(path []string) string {
	key := strings.Join(path, ".")
	if c.segs == nil {
		c.segs = map[string][]string{}
	}
	c.segs[key] = append([]string(nil), path...)
	return key
}

// Path returns the property names of one of the contract's paths (a
// path the contract does not know is split at its dots).
func (c Contract) Path(key string) []string {
	if s, ok := c.segs[key]; ok {
		return s
	}
	return strings.Split(key, ".")
}

// walker visits the properties of an object schema, descending into nested
// objects (not into arrays), following local $refs.
type walker struct{ doc map[string]any }

func (w walker) object(s map[string]any, prefix []string, visit func(path []string, p map[string]any, depth int), depth int) {
	if depth > maxContractDepth {
		return
	}
	s = w.deref(s)
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, _ := props[name].(map[string]any)
		if raw == nil {
			continue
		}
		path := append(append([]string(nil), prefix...), name)
		// Flags sit on the property itself, even beside a $ref.
		visit(path, raw, depth)
		if p := w.deref(raw); jsondoc.HasType(p, "object") || (p["type"] == nil && p["properties"] != nil) {
			w.object(p, path, visit, depth+1)
		}
	}
}

// arrayItems returns the item schema of an array of objects, nil otherwise.
func (w walker) arrayItems(p map[string]any) map[string]any {
	p = w.deref(p)
	if !jsondoc.HasType(p, "array") {
		return nil
	}
	items, _ := p["items"].(map[string]any)
	items = w.deref(items)
	if items == nil || (!jsondoc.HasType(items, "object") && items["properties"] == nil) {
		return nil
	}
	return items
}

// deref follows a local $ref of the walked document.
func (w walker) deref(p map[string]any) map[string]any { return jsondoc.Deref(w.doc, p) }

func flag(p map[string]any, name string) bool {
	b, _ := p[name].(bool)
	return b
}

// Violation is one reason an entity does not satisfy a contract.
type Violation struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Check returns the contract's violations by entity (none: satisfied), in a
// stable order: the identifying keys when none carries a usable value,
// each preserve path without one, and each item of a supplied array that
// carries no identifying value (path "array.index"). A usable value is
// anything but null, an empty or blank string, an empty array or an empty
// object.
func (c Contract) Check(entity map[string]any) []Violation {
	var out []Violation
	if len(c.IdentifyingKeys) > 0 {
		found := false
		for _, k := range c.IdentifyingKeys {
			if v, ok := lookup(entity, c.Path(k)); ok && Usable(v) {
				found = true
				break
			}
		}
		if !found {
			for _, k := range c.IdentifyingKeys {
				out = append(out, Violation{Path: k, Reason: "no identifying value: supply at least one of " + strings.Join(c.IdentifyingKeys, ", ")})
			}
		}
	}
	for _, k := range c.Preserve {
		if v, ok := lookup(entity, c.Path(k)); !ok || !Usable(v) {
			out = append(out, Violation{Path: k, Reason: "preserved value missing: the caller owns it and it is never researched"})
		}
	}
	arrays := make([]string, 0, len(c.ArrayItemKeys))
	for k := range c.ArrayItemKeys {
		arrays = append(arrays, k)
	}
	sort.Strings(arrays)
	for _, a := range arrays {
		v, ok := lookup(entity, c.Path(a))
		items, isArray := v.([]any)
		if !ok || !isArray {
			continue
		}
		keys := c.ArrayItemKeys[a]
		for i, it := range items {
			m, _ := it.(map[string]any)
			found := false
			for _, k := range keys {
				if v, ok := lookup(m, c.Path(k)); ok && Usable(v) {
					found = true
					break
				}
			}
			if !found {
				out = append(out, Violation{Path: fmt.Sprintf("%s.%d", a, i),
					Reason: "array item without an identifying value: supply one of " + strings.Join(keys, ", ")})
			}
		}
	}
	return out
}

// Paths lists the violations' paths.
func Paths(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Path
	}
	return out
}

// Lookup returns the value at a path of property names in a decoded object.
func Lookup(obj map[string]any, path []string) (any, bool) { return lookup(obj, path) }

func lookup(obj map[string]any, path []string) (any, bool) {
	var cur any = obj
	for _, name := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[name]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Usable reports whether v counts as a supplied value: not null, not a
// blank string, not an empty array or object.
func Usable(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(x) != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}
