package enrichment

import "github.com/entityenrich/enrich/domain/jsondoc"

// Preserved values (properties flagged preserve: true) are the caller's:
// they are copied from the entity into the result and never researched.
// WithoutPaths takes them out of what the prompts ask for; CopyPaths puts
// the caller's values into the merged result.

// WithoutPaths returns a copy of the schema document without the
// properties at paths (each a list of property names from the root,
// through nested objects). Each removed property also leaves its parent's
// required list. A path through a local $ref inlines a copy of the
// definition at that site, so that other uses of the definition keep the
// property. The document itself is not changed.
func WithoutPaths(doc map[string]any, paths [][]string) map[string]any {
	if len(paths) == 0 {
		return doc
	}
	out := shallow(doc)
	for _, p := range paths {
		if len(p) > 0 {
			remove(doc, out, p)
		}
	}
	return out
}

// remove deletes path from the object schema obj (already a copy safe to
// change), copying each nested schema it changes.
func remove(doc, obj map[string]any, path []string) {
	props, _ := obj["properties"].(map[string]any)
	if props == nil {
		return
	}
	name := path[0]
	if len(path) == 1 {
		if _, ok := props[name]; !ok {
			return
		}
		np := shallow(props)
		delete(np, name)
		obj["properties"] = np
		if req, ok := obj["required"].([]any); ok {
			var r []any
			for _, v := range req {
				if v != name {
					r = append(r, v)
				}
			}
			if len(r) > 0 {
				obj["required"] = r
			} else {
				delete(obj, "required")
			}
		}
		return
	}
	child, _ := props[name].(map[string]any)
	if child == nil {
		return
	}
	c := shallow(child)
	if _, hasRef := c["$ref"]; hasRef {
		target := jsondoc.Deref(doc, child)
		if _, unresolved := target["$ref"]; target != nil && !unresolved {
			// Inline the definition, keeping the site's own keywords.
			inlined := shallow(target)
			for k, v := range c {
				if k != "$ref" {
					inlined[k] = v
				}
			}
			c = inlined
		}
	}
	np := shallow(props)
	np[name] = c
	obj["properties"] = np
	remove(doc, c, path[1:])
}

// CopyPaths sets, in result, the entity's value at each path (creating the
// objects on the way), and returns result. A path the entity has no value
// at is left as the model answered it.
func CopyPaths(result, entity map[string]any, paths [][]string) map[string]any {
	if result == nil {
		result = map[string]any{}
	}
	for _, p := range paths {
		if len(p) == 0 {
			continue
		}
		v, ok := valueAt(entity, p)
		if !ok {
			continue
		}
		cur := result
		for _, name := range p[:len(p)-1] {
			next, ok := cur[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[name] = next
			}
			cur = next
		}
		cur[p[len(p)-1]] = v
	}
	return result
}

func valueAt(obj map[string]any, path []string) (any, bool) {
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

func shallow(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// PropertySchema returns a standalone schema of the property at path (a
// list of property names through nested objects and local $refs): the
// property's own keywords plus the document's definitions, so that its
// $refs still resolve. false when the document has no such property.
func PropertySchema(doc map[string]any, path []string) (map[string]any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	obj := doc
	var p map[string]any
	for i, name := range path {
		props, _ := jsondoc.Deref(doc, obj)["properties"].(map[string]any)
		p, _ = props[name].(map[string]any)
		if p == nil {
			return nil, false
		}
		if i < len(path)-1 {
			obj = jsondoc.Deref(doc, p)
		}
	}
	out := shallow(p)
	for _, k := range []string{"$schema", "$defs", "definitions", "x-enums", "x-localized"} {
		if v, ok := doc[k]; ok {
			if _, own := out[k]; !own {
				out[k] = v
			}
		}
	}
	return out, true
}
