package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/schema"
)

// randomSchema builds schemas from the keywords the generator promises to
// satisfy, in combinations no one would write by hand.
func randomSchema(r *rand.Rand, depth int) map[string]any {
	kinds := []string{"string", "integer", "number", "boolean", "null", "enum", "const", "nullable"}
	if depth < 2 { // $defs/shared is built at depth 2: it never refers to itself
		kinds = append(kinds, "ref")
	}
	if depth < 3 {
		kinds = append(kinds, "object", "object", "array", "array", "anyOf", "allOf")
	}
	switch kinds[r.IntN(len(kinds))] {
	case "string":
		s := map[string]any{"type": "string"}
		switch r.IntN(6) {
		case 0:
			s["format"] = []string{"date", "date-time", "email", "uri", "uuid", "ipv4", "hostname", "time"}[r.IntN(8)]
		case 1:
			s["pattern"] = []string{`^[A-Z]{3}$`, `^\d{4}-\d{2}$`, `^(a|bc)+x?$`, `[0-9a-f]{6}`, `^\w+@\w+\.com$`}[r.IntN(5)]
		case 2:
			s["minLength"] = r.IntN(30)
		case 3:
			s["maxLength"] = r.IntN(5) + 1
		case 4:
			lo := r.IntN(10)
			s["minLength"], s["maxLength"] = lo, lo+r.IntN(3)
		}
		return s
	case "integer", "number":
		t := []string{"integer", "number"}[r.IntN(2)]
		s := map[string]any{"type": t}
		if r.IntN(2) == 0 {
			s["minimum"] = float64(r.IntN(200) - 100)
		}
		if r.IntN(2) == 0 {
			s["maximum"] = float64(r.IntN(200) + 100)
		}
		if r.IntN(3) == 0 {
			s["exclusiveMinimum"] = float64(r.IntN(50) - 120)
		}
		if r.IntN(3) == 0 {
			s["multipleOf"] = []float64{0.5, 0.25, 3, 7, 0.1}[r.IntN(5)]
			if t == "integer" {
				s["multipleOf"] = []float64{2, 3, 7}[r.IntN(3)]
			}
		}
		return s
	case "boolean", "null":
		return map[string]any{"type": []string{"boolean", "null"}[r.IntN(2)]}
	case "enum":
		return map[string]any{"enum": []any{"a", 2.0, true, nil, map[string]any{"k": "v"}}[:1+r.IntN(5)]}
	case "const":
		return map[string]any{"const": []any{"x", 1.5, false, []any{1.0}}[r.IntN(4)]}
	case "nullable":
		return map[string]any{"type": []any{[]string{"string", "integer", "number", "boolean", "object", "array"}[r.IntN(6)], "null"}}
	case "ref":
		return map[string]any{"$ref": "#/$defs/shared"}
	case "anyOf":
		return map[string]any{"anyOf": []any{map[string]any{"type": "null"}, randomSchema(r, depth+1)}}
	case "allOf":
		a, b := randomObject(r, depth+1, "a"), randomObject(r, depth+1, "b")
		delete(b, "additionalProperties")
		delete(a, "additionalProperties")
		return map[string]any{"allOf": []any{a, b}}
	case "array":
		s := map[string]any{"type": "array", "items": randomSchema(r, depth+1)}
		if r.IntN(3) == 0 {
			s["minItems"] = r.IntN(4)
		}
		if r.IntN(3) == 0 {
			mi, _ := s["minItems"].(int)
			s["maxItems"] = mi + r.IntN(3)
		}
		return s
	}
	return randomObject(r, depth, "p")
}

// randomObject names properties with prefix, so that the two halves of an
// allOf never constrain one property in contradictory ways.
func randomObject(r *rand.Rand, depth int, prefix string) map[string]any {
	props := map[string]any{}
	var req []any
	for i := range 1 + r.IntN(5) {
		name := fmt.Sprintf("%s%d_%d", prefix, depth, i)
		props[name] = randomSchema(r, depth+1)
		if r.IntN(2) == 0 {
			req = append(req, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if req != nil {
		s["required"] = req
	}
	if r.IntN(2) == 0 {
		s["additionalProperties"] = false
	}
	return s
}

func TestGenerateRandomSchemasValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	c := jsonschema.New(schema.Limits{})
	n := 1500
	if testing.Short() {
		n = 200
	}
	for i := range n {
		root := randomObject(r, 0, "p")
		root["$defs"] = map[string]any{"shared": randomSchema(r, 2)}
		doc, _ := json.Marshal(root)
		v, err := c.Compile(context.Background(), doc)
		if err != nil {
			t.Fatalf("schema %d does not compile: %v\n%s", i, err, doc)
		}
		for _, seed := range []string{"echo", "alt"} {
			text, out := roundTrip(t, sandbox.Generate(root, map[string]any{"p0_0": "known", "p0_1": 3.0}, seed))
			if err := v.Validate(out); err != nil {
				t.Fatalf("schema %d seed %s\n%s\nanswer %s\n%v", i, seed, doc, text, err)
			}
		}
		if err := v.Validate(mustDecode(t, sandbox.Invalid(root))); err == nil && hasTyped(root) {
			t.Errorf("schema %d: Invalid gave a valid object\n%s", i, doc)
		}
	}
}

func mustDecode(t testing.TB, v any) any {
	_, out := roundTrip(t, v)
	return out
}

// hasTyped reports whether Invalid is able to break the schema: some
// property with a type, enum or const, or a required one.
func hasTyped(s map[string]any) bool {
	if _, ok := s["required"]; ok {
		return true
	}
	if ap, ok := s["additionalProperties"].(bool); ok && !ap {
		return true
	}
	props, _ := s["properties"].(map[string]any)
	for _, p := range props {
		pm, _ := p.(map[string]any)
		for _, k := range []string{"type", "enum", "const", "$ref", "anyOf", "allOf"} {
			if _, ok := pm[k]; ok {
				return true
			}
		}
	}
	return false
}
