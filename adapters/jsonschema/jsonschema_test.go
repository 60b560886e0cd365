package jsonschema_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

func decode(t testing.TB, s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestCompileRejects(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"not json", `{"type":"object"`, "not valid JSON"},
		{"trailing data", `{"type":"object"} {}`, "not valid JSON"},
		{"array", `[1,2]`, "JSON object or boolean"},
		{"string", `"object"`, "JSON object or boolean"},
		{"bad type", `{"type":"object","properties":{"age":{"type":"integr"}}}`, "/properties/age/type"},
		{"negative minLength", `{"properties":{"a":{"minLength":-1}}}`, "/properties/a/minLength"},
		{"bad regex", `{"properties":{"a":{"type":"string","pattern":"(("}}}`, "/properties/a/pattern"},
		{"missing def", `{"properties":{"a":{"$ref":"#/$defs/missing"}}}`, "#/$defs/missing"},
		{"remote ref", `{"$ref":"https://example.com/x.json"}`, "external reference https://example.com/x.json"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "external reference file:///etc/passwd"},
		{"relative ref", `{"$ref":"other.json"}`, "external reference other.json"},
		{"unknown meta-schema", `{"$schema":"https://evil.example/s","type":"object"}`, "external reference"},
		{"ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, "reference cycle"},
		{"self ref", `{"$ref":"#"}`, "reference cycle"},
		{"property ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, "reference cycle"},
	}
	c := jsonschema.New(schema.Limits{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, err := c.Compile(context.Background(), json.RawMessage(tt.doc))
			is.True(err != nil)
			is.Equal(v, nil)
			is.True(errors.Is(err, ports.ErrInvalid))
			is.True(strings.Contains(err.Error(), tt.want))   // message names the problem
			is.True(!strings.Contains(err.Error(), "mem://")) // internal resource name leaked
		})
	}
}

func TestCompileAccepts(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"empty", `{}`},
		{"true", `true`},
		{"extension keywords", `{
			"type":"object",
			"x-expertiseDomains":{"finance":{"name":"Finance","description":"money"}},
			"x-enums":{"size":["small","large"]},
			"properties":{
				"revenue":{"type":"number","expertise":"finance","identifying":false,"multilingual":false},
				"name":{"type":"string","identifying":true,"multilingual":true,"x-expertise":"general"}
			}}`},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/a"}}}`},
		{"recursive through data", `{"type":"object","properties":{"parent":{"$ref":"#"}}}`},
		{"local ids", `{"$id":"https://example.com/s.json","$defs":{"a":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/a"}}}`},
	}
	c := jsonschema.New(schema.Limits{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			v, err := c.Compile(context.Background(), json.RawMessage(tt.doc))
			is.NoErr(err)
			is.True(v != nil)
		})
	}
}

const company = `{
	"type":"object",
	"required":["name","tags"],
	"additionalProperties":false,
	"properties":{
		"name":{"type":"string"},
		"revenue":{"type":["number","null"]},
		"employees":{"type":"integer","minimum":0},
		"founded":{"type":"string","format":"date"},
		"address":{"$ref":"#/$defs/address"},
		"tags":{"type":"array","items":{"enum":["b2b","b2c"]}},
		"ticker":{"anyOf":[{"type":"string","maxLength":5},{"type":"null"}]}
	},
	"$defs":{"address":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"zip":{"type":"string","maxLength":5}}}}
}`

func TestValidate(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string // nil: valid
	}{
		{"valid", `{"name":"Acme","tags":["b2b"],"revenue":null,"employees":10,"address":{"city":"Paris"}}`, nil},
		{"valid nullable number", `{"name":"Acme","tags":[],"revenue":12.5}`, nil},
		{"wrong type", `{"name":"Acme","tags":[],"revenue":"lots"}`, []string{"/revenue: got string, want null or number"}},
		{"integer", `{"name":"Acme","tags":[],"employees":1.5}`, []string{"/employees: got number, want integer"}},
		{"minimum", `{"name":"Acme","tags":[],"employees":-1}`, []string{"/employees: minimum: got -1, want 0"}},
		{"missing required", `{"tags":[]}`, []string{"/: missing property 'name'"}},
		{"nested", `{"name":"A","tags":[],"address":{"zip":"1234567"}}`, []string{
			"/address/zip: maxLength: got 7, want 5",
			"/address: missing property 'city'",
		}},
		{"enum in array", `{"name":"A","tags":["b2x"]}`, []string{"/tags/0: value must be one of 'b2b', 'b2c'"}},
		{"additional", `{"name":"A","tags":[],"extra":1}`, []string{"/: additional properties 'extra' not allowed"}},
		{"not an object", `[1]`, []string{"/: got array, want object"}},
		{"several", `{"name":3,"tags":"x"}`, []string{"/name: got number, want string", "/tags: got string, want array"}},
		// Formats are annotations in 2020-12; a model's "2001" is kept.
		{"format not asserted", `{"name":"A","tags":[],"founded":"2001"}`, nil},
	}
	v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), json.RawMessage(company))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := v.Validate(decode(t, tt.value))
			if tt.want == nil {
				is.NoErr(err)
				return
			}
			var ve *jsonschema.ValidationError
			is.True(errors.As(err, &ve))
			for _, w := range tt.want {
				is.True(strings.Contains(err.Error(), w)) // want line
			}
			is.Equal(len(ve.Problems), len(strings.Split(err.Error(), "\n"))) // one line per problem
			is.True(!errors.Is(err, ports.ErrInvalid))                        // a bad answer is not bad input
		})
	}
}

func TestValidateStableAndBounded(t *testing.T) {
	is := is.New(t)
	props := map[string]any{}
	value := map[string]any{}
	for _, k := range strings.Split("abcdefghijklmnopqrstuvwxyz", "") {
		props[k] = map[string]any{"type": "integer"}
		value[k] = "x"
	}
	doc, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
	v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), doc)
	is.NoErr(err)
	first := v.Validate(value).Error()
	for range 20 {
		is.Equal(v.Validate(value).Error(), first) // same message every time
	}
	lines := strings.Split(first, "\n")
	is.Equal(len(lines), 21)
	is.Equal(lines[20], "... and 6 more")
}

func TestValidatorConcurrent(t *testing.T) {
	is := is.New(t)
	v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), json.RawMessage(company))
	is.NoErr(err)
	good := decode(t, `{"name":"Acme","tags":["b2b"]}`)
	bad := decode(t, `{"name":1,"tags":["b2b"]}`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				is.NoErr(v.Validate(good))
			} else {
				is.True(v.Validate(bad) != nil)
			}
		}()
	}
	wg.Wait()
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `false`, `[]`, `null`, `{"type":"object"`, company,
		`{"$ref":"#"}`, `{"$ref":"file:///etc/passwd"}`, `{"$ref":"http://127.0.0.1/"}`,
		`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"type":["string","null"],"pattern":"^a+$","minLength":2}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer","exclusiveMinimum":true,"minimum":1}`,
		`{"properties":{"a":{"x-enums":1,"expertise":"f","identifying":true}}}`,
		`{"$id":"urn:x","$anchor":"a","$dynamicRef":"#a"}`,
	} {
		f.Add([]byte(s))
	}
	c := jsonschema.New(schema.Limits{})
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, err := c.Compile(context.Background(), doc)
		if err != nil {
			if !errors.Is(err, ports.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		for _, in := range []any{nil, map[string]any{"a": 1.5}, []any{"x"}, "s", true} {
			_ = v.Validate(in)
		}
	})
}

// TestCompileLimits: a document past the limits is refused with the
// domain's error before it is parsed (this one is not even JSON past the
// depth limit: the compiler's own "not valid JSON" would say so); the
// limits are the ones given, their zero fields at the defaults.
func TestCompileLimits(t *testing.T) {
	is := is.New(t)
	c := jsonschema.New(schema.Limits{MaxDepth: 4})
	is.Equal(c.Limits(), schema.Limits{MaxDepth: 4, MaxProperties: schema.DefaultMaxProperties,
		MaxSubschemas: schema.DefaultMaxSubschemas, MaxBytes: schema.DefaultMaxBytes})
	v, err := c.Compile(context.Background(), json.RawMessage(`{"properties":{"a":{"properties":{"b":{"not JSON`))
	is.Equal(v, nil)
	var tc *schema.TooComplexError
	is.True(errors.As(err, &tc))
	is.Equal(tc.Limit, schema.LimitDepth)
	is.True(!errors.Is(err, ports.ErrInvalid)) // not the compiler's refusal
	_, err = c.Compile(context.Background(), json.RawMessage(`{"properties":{"a":{"type":"string"}}}`))
	is.NoErr(err) // depth 3
}

// TestCompileCancelled: a request that ended gets its context's error, not
// a schema error, and no validator.
func TestCompileCancelled(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := jsonschema.New(schema.Limits{}).Compile(ctx, json.RawMessage(`{"type":"object"}`))
	is.Equal(v, nil)
	is.True(errors.Is(err, context.Canceled))
	is.True(!errors.Is(err, ports.ErrInvalid))
}
