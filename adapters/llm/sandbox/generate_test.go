package sandbox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/schema"
)

func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

// roundTrip gives the value as the application sees it: text decoded by
// encoding/json.
func roundTrip(t testing.TB, v any) (string, any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return string(b), out
}

const companySchema = `{
	"type":"object",
	"x-expertiseDomains":{"finance":{"name":"Finance"}},
	"required":["name","industry"],
	"additionalProperties":false,
	"properties":{
		"name":{"type":"string","identifying":true},
		"industry":{"type":"string","enum":["software","retail","energy"]},
		"website":{"type":["string","null"],"format":"uri"},
		"contact":{"type":"string","format":"email"},
		"founded":{"type":"string","format":"date"},
		"updated_at":{"type":"string","format":"date-time"},
		"employees":{"type":"integer","minimum":1,"maximum":500000},
		"revenue":{"type":["number","null"],"minimum":0,"expertise":"finance"},
		"margin":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},
		"public":{"type":"boolean"},
		"ticker":{"type":"string","pattern":"^[A-Z]{2,5}$"},
		"iso":{"type":"string","minLength":2,"maxLength":2},
		"kind":{"const":"company"},
		"nothing":{"type":"null"},
		"hq":{"$ref":"#/$defs/address"},
		"offices":{"type":"array","items":{"$ref":"#/$defs/address"},"minItems":1,"maxItems":3},
		"tags":{"type":"array","items":{"type":"string","enum":["b2b","b2c","saas"]},"uniqueItems":true},
		"ceo":{"anyOf":[{"type":"null"},{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"since":{"type":"integer","minimum":1900,"maximum":2030}}}]},
		"score":{"type":"number","multipleOf":0.1,"minimum":0,"maximum":5},
		"lots":{"type":"integer","multipleOf":25}
	},
	"$defs":{"address":{"type":"object","required":["city","country"],"properties":{
		"city":{"type":"string"},
		"country":{"type":"string","minLength":2},
		"zip":{"type":["string","null"],"maxLength":10}}}}
}`

const acme = `{"name":"Acme Corp","industry":"retail","Website":"https://acme.example","employees":"many","founded":"1999-05-01","hq":{"city":"Lyon","country":"FR"},"tags":["b2b"],"ceo":{"name":"Ada"}}`

var schemas = []struct{ name, schema string }{
	{"company", companySchema},
	{"empty", `{}`},
	{"object only", `{"type":"object"}`},
	{"nested required", `{"type":"object","required":["a"],"properties":{"a":{"type":"object","required":["b"],"properties":{"b":{"type":"array","minItems":2,"items":{"type":"integer"}}}}}}`},
	{"required without properties", `{"type":"object","required":["x","y"],"additionalProperties":{"type":"integer"}}`},
	{"pattern properties", `{"type":"object","required":["id_1"],"patternProperties":{"^id_":{"type":"integer","minimum":5}},"additionalProperties":false}`},
	{"min properties", `{"type":"object","minProperties":3,"additionalProperties":{"type":"boolean"}}`},
	{"max properties", `{"type":"object","maxProperties":1,"required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}}}`},
	{"prefix items", `{"type":"object","properties":{"p":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,"minItems":2}}}`},
	{"draft-07 tuple", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"type":"array","items":[{"type":"string"},{"type":"boolean"}],"additionalItems":false}},"definitions":{"x":{"type":"integer"}}}`},
	{"definitions ref", `{"type":"object","properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"type":"integer","minimum":10,"maximum":10}}}`},
	{"allOf", `{"type":"object","properties":{"a":{"allOf":[{"type":"object","required":["x"],"properties":{"x":{"type":"string"}}},{"required":["y"],"properties":{"y":{"type":"integer"}}}]}}}`},
	{"oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string","maxLength":3},{"type":"integer"}]}}}`},
	{"recursive", `{"type":"object","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"properties":{"root":{"$ref":"#/$defs/node"}}}`},
	{"contains", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"contains":{"const":7},"minItems":2}}}`},
	{"unique booleans", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"boolean"},"uniqueItems":true,"minItems":2}}}`},
	{"type array", `{"type":"object","properties":{"a":{"type":["null","integer"]},"b":{"type":["boolean","string"]},"c":{"type":"null"}}}`},
	{"long strings", `{"type":"object","properties":{"a":{"type":"string","minLength":40},"b":{"type":"string","maxLength":1},"c":{"type":"string","format":"email","maxLength":8}}}`},
	{"patterns", `{"type":"object","properties":{"zip":{"type":"string","pattern":"^\\d{5}(-\\d{4})?$"},"code":{"type":"string","pattern":"^(FR|DE)-[0-9a-f]{8}$"},"word":{"type":"string","pattern":"\\bfoo\\b"},"plus":{"type":"string","pattern":"^a+b*$","minLength":4}}}`},
	{"exclusive", `{"type":"object","properties":{"a":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":2},"b":{"type":"number","minimum":-5,"maximum":-5},"c":{"type":"number","maximum":-100}}}`},
	{"multiples", `{"type":"object","properties":{"a":{"type":"number","multipleOf":0.01,"minimum":1,"maximum":2},"b":{"type":"integer","multipleOf":7,"minimum":100},"c":{"type":"number","multipleOf":0.3}}}`},
	{"year", `{"type":"object","properties":{"founding_year":{"type":"integer"}}}`},
	{"extensions", `{"type":"object","x-enums":{"size":["s","m"]},"properties":{"size":{"type":"string","x-enum":"size","multilingual":true}}}`},
	{"formats", `{"type":"object","properties":{"t":{"type":"string","format":"time"},"h":{"type":"string","format":"hostname"},"i4":{"type":"string","format":"ipv4"},"i6":{"type":"string","format":"ipv6"},"u":{"type":"string","format":"uuid"},"d":{"type":"string","format":"duration"}}}`},
	{"dependent required", `{"type":"object","properties":{"card":{"type":"string"}},"dependentRequired":{"card":["billing"],"absent":["never"]},"additionalProperties":{"type":"integer"}}`},
	{"ref with siblings", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":3}}}`},
}

func TestGenerateValid(t *testing.T) {
	entities := []string{`null`, `{}`, acme, `{"name":42,"a":"x","size":"m","zip":"75001"}`}
	for _, tt := range schemas {
		t.Run(tt.name, func(t *testing.T) {
			v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), json.RawMessage(tt.schema))
			if err != nil {
				t.Fatalf("test schema does not compile: %v", err)
			}
			for _, e := range entities {
				for _, seed := range []string{"echo", "alt", "flaky"} {
					var known map[string]any
					_ = json.Unmarshal([]byte(e), &known)
					text, out := roundTrip(t, sandbox.Generate(obj(t, tt.schema), known, seed))
					if err := v.Validate(out); err != nil {
						t.Errorf("seed %s entity %s: %s\ninvalid: %v", seed, e, text, err)
					}
				}
			}
		})
	}
}

// TestGenerateObjectKeywords pins which properties an object gets beyond
// what validity alone demands.
func TestGenerateObjectKeywords(t *testing.T) {
	// chain is n objects nested through the required "a", each with an
	// optional "opt".
	chain := func(n int) string {
		s := `{"type":"string"}`
		for range n {
			s = `{"type":"object","required":["a"],"properties":{"a":` + s + `,"opt":{"type":"integer"}}}`
		}
		return s
	}
	tests := []struct {
		name, schema string
		check        func(is *is.I, v map[string]any)
	}{
		{"past softDepth only required properties", chain(8), func(is *is.I, v map[string]any) {
			for depth := 0; depth < 8; depth++ {
				_, hasOpt := v["opt"]
				is.Equal(hasOpt, depth < 6) // optional properties stop at softDepth
				next, ok := v["a"].(map[string]any)
				if depth < 7 {
					is.True(ok) // required properties go on
					v = next
				}
			}
		}},
		{"dependent required follows a present property", `{"type":"object","properties":{"card":{"type":"string"}},"dependentRequired":{"card":["billing"],"absent":["never"]}}`,
			func(is *is.I, v map[string]any) {
				_, billing := v["billing"]
				_, never := v["never"]
				is.True(billing)
				is.True(!never)
			}},
		{"required with nothing declared", `{"type":"object","required":["x"]}`, func(is *is.I, v map[string]any) {
			_, ok := v["x"]
			is.True(ok)
		}},
		{"max properties already met", `{"type":"object","maxProperties":3,"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
			func(is *is.I, v map[string]any) { is.Equal(len(v), 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, ok := sandbox.Generate(obj(t, tt.schema), nil, "echo").(map[string]any)
			is.True(ok)
			tt.check(is, v)
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	is := is.New(t)
	s, e := obj(t, companySchema), obj(t, acme)
	first, _ := roundTrip(t, sandbox.Generate(s, e, "echo"))
	for range 10 {
		again, _ := roundTrip(t, sandbox.Generate(obj(t, companySchema), obj(t, acme), "echo"))
		is.Equal(again, first) // byte-identical
	}
	other, _ := roundTrip(t, sandbox.Generate(s, obj(t, `{"name":"Other Inc"}`), "echo"))
	is.True(other != first) // the entity seeds the output
}

func TestGenerateEchoesAndSeeds(t *testing.T) {
	is := is.New(t)
	s, e := obj(t, companySchema), obj(t, acme)
	_, a := roundTrip(t, sandbox.Generate(s, e, "echo"))
	_, b := roundTrip(t, sandbox.Generate(s, e, "alt"))
	echo, alt := a.(map[string]any), b.(map[string]any)

	// Known attributes that fit come back in both.
	for _, m := range []map[string]any{echo, alt} {
		is.Equal(m["name"], "Acme Corp")
		is.Equal(m["industry"], "retail")
		is.Equal(m["website"], "https://acme.example") // matched ignoring case
		is.Equal(m["founded"], "1999-05-01")
		is.Equal(m["hq"].(map[string]any)["city"], "Lyon")
		is.Equal(m["ceo"].(map[string]any)["name"], "Ada")
		is.Equal(m["tags"], []any{"b2b"})
		is.Equal(m["kind"], "company")
	}
	// "many" is not an integer: generated, not echoed.
	_, isNum := echo["employees"].(float64)
	is.True(isNum)

	// The seeds disagree on some generated fields, not on everything.
	differ := 0
	for k := range echo {
		if ja, jb := mustJSON(t, echo[k]), mustJSON(t, alt[k]); ja != jb {
			differ++
		}
	}
	is.True(differ >= 3)
	is.True(differ < len(echo))
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInvalid(t *testing.T) {
	tests := []struct{ name, schema string }{
		{"company", companySchema},
		{"untyped required", `{"type":"object","required":["a"],"properties":{"a":{}}}`},
		{"closed", `{"type":"object","additionalProperties":false}`},
		{"enum only", `{"type":"object","properties":{"a":{"enum":["x","y"]}}}`},
		{"const only", `{"type":"object","properties":{"a":{"const":"x"}}}`},
		{"ref", `{"type":"object","$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`},
		{"nullable string", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`},
		{"any type but one", `{"type":"object","properties":{"a":{"type":["string","number","boolean","array","object"]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), json.RawMessage(tt.schema))
			is.NoErr(err)
			text, out := roundTrip(t, sandbox.Invalid(obj(t, tt.schema)))
			is.True(strings.HasPrefix(text, "{"))                           // parseable object
			is.True(v.Validate(out) != nil)                                 // but invalid
			is.Equal(text, mustJSON(t, sandbox.Invalid(obj(t, tt.schema)))) // deterministic
		})
	}
}

func TestParsePrompt(t *testing.T) {
	is := is.New(t)
	text := "Schema \"c\", properties a.\nJSON Schema:\n{\"type\":\"object\",\"description\":\"Known attributes of the entity: {}\"}\n" +
		"Known attributes of the entity:\n{\n  \"name\": \"Acme\"\n}\n"
	s, e := sandbox.ParsePrompt(text)
	is.Equal(s["type"], "object")
	is.Equal(e, map[string]any{"name": "Acme"})

	s, e = sandbox.ParsePrompt("no markers here")
	is.Equal(s, nil)
	is.Equal(e, nil)

	s, e = sandbox.ParsePrompt("JSON Schema:\n{broken\nKnown attributes of the entity:\n[1]")
	is.Equal(s, nil)
	is.Equal(e, nil)
}

func FuzzGenerate(f *testing.F) {
	for _, s := range schemas {
		f.Add(s.schema, acme, "echo")
	}
	for _, s := range []string{
		`{"$ref":"#"}`, `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`,
		`{"properties":{"a":{"$ref":"#/properties/a"}}}`, `{"$ref":"#/properties/0/x"}`,
		`{"type":"array","minItems":1e308}`, `{"type":"string","minLength":1e18}`,
		`{"type":"integer","minimum":1e308,"maximum":-1e308}`, `{"type":"number","multipleOf":1e-320}`,
		`{"type":"number","multipleOf":-1,"minimum":"x"}`, `{"type":"string","pattern":"(((("}`,
		`{"type":"string","pattern":"[^\\x00-\\x{10FFFF}]"}`, `{"type":"string","pattern":"a{1000}{1000}"}`,
		`{"type":[],"enum":[]}`, `{"type":7,"properties":[],"required":{},"items":"x"}`,
		`{"allOf":[false]}`, `{"anyOf":[]}`, `{"oneOf":[{"type":"null"}]}`, `false`, `true`,
	} {
		f.Add(s, `{}`, "alt")
	}
	f.Fuzz(func(t *testing.T, schema, entity, seed string) {
		var s map[string]any
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		var e map[string]any
		_ = json.Unmarshal([]byte(entity), &e)
		a, err := json.Marshal(sandbox.Generate(s, e, seed))
		if err != nil {
			t.Fatalf("output does not marshal: %v", err)
		}
		b, _ := json.Marshal(sandbox.Generate(s, e, seed))
		if string(a) != string(b) {
			t.Fatalf("not deterministic: %s vs %s", a, b)
		}
		if _, err := json.Marshal(sandbox.Invalid(s)); err != nil {
			t.Fatalf("invalid output does not marshal: %v", err)
		}
	})
}
