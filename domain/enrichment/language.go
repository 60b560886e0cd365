package enrichment

import (
	"fmt"
	"strings"
)

// Localize returns a copy of a schema document in which every property
// flagged "multilingual": true (at any depth: properties, array items,
// $defs) is answered per language, in the reference product's shape: an
// object with one value of the property's own schema per language code, all
// required. The document itself is left as it is.
func Localize(doc map[string]any, langs []string) map[string]any {
	if len(langs) == 0 {
		return doc
	}
	out, _ := localize(doc, langs).(map[string]any)
	return out
}

func localize(v any, langs []string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			switch k {
			case "properties", "$defs", "definitions":
				props, ok := e.(map[string]any)
				if !ok {
					out[k] = e
					continue
				}
				m := make(map[string]any, len(props))
				for name, p := range props {
					m[name] = localizeProperty(p, langs)
				}
				out[k] = m
			case "items":
				out[k] = localizeProperty(e, langs)
			default:
				out[k] = e
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = localize(e, langs)
		}
		return out
	}
	return v
}

// localizeProperty wraps a multilingual property into its language map.
func localizeProperty(p any, langs []string) any {
	m, ok := p.(map[string]any)
	if !ok {
		return p
	}
	inner, _ := localize(m, langs).(map[string]any)
	if multi, _ := m["multilingual"].(bool); !multi {
		return inner
	}
	delete(inner, "multilingual")
	props := make(map[string]any, len(langs))
	req := make([]any, len(langs))
	for i, l := range langs {
		props[l] = inner
		req[i] = l
	}
	wrapped := map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false,
		"x-multilingual": true}
	if d, ok := inner["description"]; ok {
		wrapped["description"] = d
	}
	return wrapped
}

// WithLanguages tells the model the output languages: the primary one for
// every free text, and one value per language for multilingual properties.
func WithLanguages(msgs []Message, langs []string) []Message {
	if len(langs) == 0 || len(msgs) == 0 {
		return msgs
	}
	out := append([]Message(nil), msgs...)
	note := fmt.Sprintf(" Write free text in the language %q.", langs[0])
	if len(langs) > 1 {
		note += fmt.Sprintf(" A property whose schema is an object keyed by language codes (%s) takes the same value written in each of those languages.",
			strings.Join(langs, ", "))
	}
	out[0].Content += note
	return out
}
