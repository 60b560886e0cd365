package ambiguity

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// Split is an identity-scoping split of one relationship site: the
// entity's own facts (EntityFields) move into a nested object named after
// the entity, the facts about the pairing stay on the item.
type Split struct {
	// Path is the site's dotted path (through arrays without an index).
	Path string
	// Fields are the site's fields as the finding saw them (optional):
	// when given, EntityFields must be among them and at least one other
	// field must stay on the pairing.
	Fields       []string
	EntityFields []string
	// EntityName names the related entity (e.g. "Person"): its snake_case
	// form (EntityKey) is the nested object's key, and the $defs name of a
	// split schema.
	EntityName string
}

// SplitResult is the outcome of a split.
type SplitResult struct {
	Applied bool
	// Samples are the split samples (the input's when not applied; the
	// input itself is never changed).
	Samples []any
	// Schema is the split schema document, when one was given.
	Schema map[string]any
	// Paths are the new dotted paths of the moved fields.
	Paths []string
	// Reason says why the split was not applied.
	Reason string
}

// EntityKey is the key of the nested entity object: name in snake_case.
func EntityKey(name string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range strings.TrimSpace(name) {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			prevLower = false
		}
	}
	return strings.Trim(b.String(), "_")
}

// check validates the split itself; it returns a reason when unusable.
func (sp Split) check() string {
	switch {
	case strings.TrimSpace(sp.Path) == "":
		return "path is required: the relationship site to split"
	case EntityKey(sp.EntityName) == "":
		return "entity_name is required: the related entity's name"
	case len(sp.EntityFields) == 0:
		return "entity_fields is required: the related entity's own facts"
	}
	if len(sp.Fields) > 0 {
		for _, f := range sp.EntityFields {
			if !contains(sp.Fields, f) {
				return fmt.Sprintf("entity field %q is not among the site's fields", f)
			}
		}
		if len(sp.Fields) <= len(within(sp.EntityFields, sp.Fields)) {
			return "every field is the entity's: nothing stays on the pairing, so there is nothing to split"
		}
	}
	if contains(sp.EntityFields, EntityKey(sp.EntityName)) {
		return fmt.Sprintf("entity field %q has the entity object's name", EntityKey(sp.EntityName))
	}
	return ""
}

// SplitSamples applies sp to every sample (copies; the input is not
// changed) and, when doc is not nil, to the schema document too (the
// entity's properties move into $defs/EntityName, referenced from the
// site's items). It is applied only when it moved something and nothing
// was in the way (an item already holding the entity object's key, a
// $defs name taken).
func SplitSamples(samples []any, doc map[string]any, sp Split) SplitResult {
	res := SplitResult{Samples: samples, Schema: doc, Paths: []string{}}
	if r := sp.check(); r != "" {
		res.Reason = r
		return res
	}
	key := EntityKey(sp.EntityName)
	segs := strings.Split(sp.Path, ".")
	out := make([]any, len(samples))
	moved := map[string]bool{}
	found := false
	for i, s := range samples {
		c := deepCopy(s)
		var reason string
		visitSite(c, segs, func(item map[string]any) {
			found = true
			if reason != "" {
				return
			}
			if _, taken := item[key]; taken {
				reason = fmt.Sprintf("an item at %s already has a field %q", sp.Path, key)
				return
			}
			ent := map[string]any{}
			for _, f := range sp.EntityFields {
				if v, ok := item[f]; ok {
					ent[f] = v
					delete(item, f)
					moved[f] = true
				}
			}
			if len(ent) > 0 {
				item[key] = ent
			}
		})
		if reason != "" {
			res.Reason = reason
			return res
		}
		out[i] = c
	}
	var newDoc map[string]any
	if doc != nil {
		var reason string
		var fromSchema []string
		newDoc, fromSchema, reason = splitSchema(doc, segs, sp, key)
		if reason != "" {
			res.Reason = reason
			return res
		}
		for _, f := range fromSchema {
			moved[f] = true
		}
	} else if !found {
		res.Reason = fmt.Sprintf("no sample has a relationship site at %s", sp.Path)
		return res
	}
	if len(moved) == 0 {
		res.Reason = fmt.Sprintf("no item at %s carries any of the entity fields", sp.Path)
		return res
	}
	for f := range moved {
		res.Paths = append(res.Paths, sp.Path+"."+key+"."+f)
	}
	sort.Strings(res.Paths)
	res.Applied, res.Samples, res.Schema = true, out, newDoc
	return res
}

// visitSite calls fn with every object at path in v: through objects by
// key, through arrays item by item; at the end an object, or each object
// of an array.
func visitSite(v any, segs []string, fn func(map[string]any)) {
	switch x := v.(type) {
	case []any:
		for _, it := range x {
			visitSite(it, segs, fn)
		}
	case map[string]any:
		if len(segs) == 0 {
			fn(x)
			return
		}
		if next, ok := x[segs[0]]; ok {
			visitSite(next, segs[1:], fn)
		}
	}
}

// splitSchema moves the entity fields of the object schema at segs into
// $defs/<EntityName> (a copy of doc is changed).
func splitSchema(doc map[string]any, segs []string, sp Split, key string) (map[string]any, []string, string) {
	out, _ := deepCopy(doc).(map[string]any)
	obj := rootOf(out)
	for _, name := range segs {
		props, _ := jsondoc.Deref(out, obj)["properties"].(map[string]any)
		p, _ := props[name].(map[string]any)
		if p == nil {
			return nil, nil, fmt.Sprintf("the schema has no property at %s", sp.Path)
		}
		obj = objectOf(out, p)
		if obj == nil {
			return nil, nil, fmt.Sprintf("the schema's %s is not an object or an array of objects", sp.Path)
		}
	}
	props, _ := obj["properties"].(map[string]any)
	if _, taken := props[key]; taken {
		return nil, nil, fmt.Sprintf("the schema's %s already has a property %q", sp.Path, key)
	}
	defs, _ := out["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
		out["$defs"] = defs
	}
	name := strings.TrimSpace(sp.EntityName)
	if _, taken := defs[name]; taken {
		return nil, nil, fmt.Sprintf("the schema already defines $defs/%s", name)
	}
	entProps := map[string]any{}
	for _, f := range sp.EntityFields {
		if p, ok := props[f]; ok {
			entProps[f] = p
			delete(props, f)
		}
	}
	if len(entProps) == 0 {
		return nil, nil, fmt.Sprintf("the schema's %s has none of the entity fields", sp.Path)
	}
	entity := map[string]any{"type": "object", "title": name, "properties": entProps}
	if req, ok := obj["required"].([]any); ok {
		var keep, moved []any
		for _, r := range req {
			if f, _ := r.(string); contains(sp.EntityFields, f) {
				moved = append(moved, r)
			} else {
				keep = append(keep, r)
			}
		}
		if len(moved) > 0 {
			entity["required"] = moved
			keep = append(keep, key)
		}
		if len(keep) > 0 {
			obj["required"] = keep
		} else {
			delete(obj, "required")
		}
	}
	defs[name] = entity
	props[key] = map[string]any{"$ref": "#/$defs/" + name}
	return out, sortedKeys(entProps), ""
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	}
	return v
}
