// Package jsondoc reads decoded JSON Schema documents (map[string]any), the
// few questions every domain package asks of them: a property's type, and
// what a local $ref points to.
package jsondoc

import "strings"

// maxHops bounds how many $refs Deref follows, so that a cycle of
// references cannot loop forever.
const maxHops = 8

// HasType reports whether schema p allows type want: "type": "object" and
// the nullable form ["object", "null"] both have type object.
func HasType(p map[string]any, want string) bool {
	switch t := p["type"].(type) {
	case string:
		return t == want
	case []any:
		for _, v := range t {
			if v == want {
				return true
			}
		}
	}
	return false
}

// Deref follows p's local $ref (#/$defs/<name> or #/definitions/<name>) in
// doc, a few hops at most, and returns the schema it names; p itself when it
// has no $ref or the reference names nothing here.
func Deref(doc, p map[string]any) map[string]any {
	for range maxHops {
		if p == nil {
			return nil
		}
		ref, _ := p["$ref"].(string)
		if ref == "" {
			return p
		}
		var target map[string]any
		for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
			if name, ok := strings.CutPrefix(ref, prefix); ok {
				defs, _ := doc[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
				target, _ = defs[name].(map[string]any)
			}
		}
		if target == nil {
			return p
		}
		p = target
	}
	return p
}
