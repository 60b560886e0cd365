package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

// nestedObjects is a schema of object properties nested n schemas deep:
// its JSON depth is 2n+1.
func nestedObjects(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{"type":"string"}` + strings.Repeat(`}}`, n)
}

// arrays is n arrays nested in each other: JSON depth n.
func arrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// flat is an object schema of n string properties.
func flat(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// allOf is a schema whose allOf holds n empty schemas: n+1 subschemas.
func allOf(n int) string {
	return `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, n), ",") + `]}`
}

func TestLimitsCheck(t *testing.T) {
	small := schema.Limits{MaxDepth: 5, MaxProperties: 3, MaxSubschemas: 4, MaxBytes: 200}
	tests := []struct {
		name string
		lim  schema.Limits
		doc  string
		want schema.Limit // "": within the limits
	}{
		// Depth: the JSON nesting of objects and arrays, the root object 1.
		{"depth at the limit", small, `{"a":{"b":{"c":{"d":{}}}}}`, ""},
		{"depth past the limit", small, `{"a":{"b":{"c":{"d":{"e":{}}}}}}`, schema.LimitDepth},
		{"arrays at the limit", small, arrays(5), ""},
		{"arrays past the limit", small, arrays(6), schema.LimitDepth},
		{"data counts for depth", small, `{"enum":[[[[[]]]]]}`, schema.LimitDepth},
		{"scalar root", small, `true`, ""},
		{"default depth at the limit", schema.Limits{}, `[` + nestedObjects(15) + `]`, ""}, // 32
		{"default depth just past", schema.Limits{}, nestedObjects(16), schema.LimitDepth}, // 33
		{"depth bomb", schema.Limits{}, nestedObjects(3000), schema.LimitDepth},
		{"deeper bomb", schema.Limits{MaxBytes: 1 << 30}, arrays(100_000), schema.LimitDepth},
		{"unterminated bomb", schema.Limits{}, strings.Repeat(`{"a":`, 50), schema.LimitDepth},

		// Properties: names under properties and patternProperties.
		{"properties at the limit", small, `{"properties":{"a":true,"b":true},"patternProperties":{"^x":true}}`, ""},
		{"properties past the limit", small, `{"properties":{"a":{},"b":{}},"patternProperties":{"^x":{},"^y":{}}}`, schema.LimitProperties},
		{"nested properties count", schema.Limits{MaxProperties: 3}, `{"properties":{"a":{"properties":{"b":{"properties":{"c":{},"d":{}}}}}}}`, schema.LimitProperties},
		{"a property named properties", schema.Limits{MaxProperties: 2}, `{"properties":{"properties":{"type":"object","x":1,"y":2}}}`, ""},
		{"properties in data do not count", schema.Limits{MaxProperties: 1}, `{"const":{"properties":{"a":1,"b":2}},"x-y":{"properties":{"a":1,"b":2}}}`, ""},
		{"$defs are not properties", schema.Limits{MaxProperties: 1}, `{"$defs":{"a":{},"b":{}}}`, ""},
		{"default properties at the limit", schema.Limits{}, flat(2000), ""},
		{"default properties just past", schema.Limits{}, flat(2001), schema.LimitProperties},

		// Subschemas: objects and booleans in a schema position.
		{"subschemas at the limit", small, `{"allOf":[{},true,{}]}`, ""},
		{"subschemas past the limit", small, `{"allOf":[{},true,{"not":false}]}`, schema.LimitSubschemas},
		{"$defs count", small, `{"$defs":{"a":{},"b":{},"c":{},"d":{}}}`, schema.LimitSubschemas},
		{"items array counts", small, `{"items":[{},{},{},{}]}`, schema.LimitSubschemas},
		{"data does not count", small, `{"enum":[{},{},{},{},{}],"examples":[true,true,true,true],"x-enums":{"a":{},"b":{},"c":{},"d":{}}}`, ""},
		{"non-schema flags do not count", small, `{"properties":{"a":{"identifying":true,"multilingual":false,"type":"string"}}}`, ""},
		{"default subschemas at the limit", schema.Limits{}, allOf(4999), ""},
		{"default subschemas just past", schema.Limits{}, allOf(5000), schema.LimitSubschemas},

		// Bytes: the document as sent.
		{"bytes at the limit", small, `{"description":"` + strings.Repeat("x", 200-18) + `"}`, ""},
		{"bytes past the limit", small, `{"description":"` + strings.Repeat("x", 200-17) + `"}`, schema.LimitBytes},
		{"default bytes just past", schema.Limits{}, `"` + strings.Repeat("x", schema.DefaultMaxBytes-1) + `"`, schema.LimitBytes},

		// Not JSON: not the checker's to say.
		{"not json", small, `{"a":`, ""},
		{"empty", small, ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := tt.lim.Check([]byte(tt.doc))
			if tt.want == "" {
				is.NoErr(err)
				return
			}
			is.True(errors.Is(err, schema.ErrTooComplex))
			var tc *schema.TooComplexError
			is.True(errors.As(err, &tc))
			is.Equal(tc.Limit, tt.want)
			is.Equal(tc.Max, map[schema.Limit]int{schema.LimitDepth: tt.lim.WithDefaults().MaxDepth,
				schema.LimitProperties: tt.lim.WithDefaults().MaxProperties, schema.LimitSubschemas: tt.lim.WithDefaults().MaxSubschemas,
				schema.LimitBytes: tt.lim.WithDefaults().MaxBytes}[tt.want])
		})
	}
}

func TestTooComplexMessage(t *testing.T) {
	is := is.New(t)
	err := schema.Limits{}.Check([]byte(nestedObjects(3000)))
	is.Equal(err.Error(), "schema nesting depth exceeds 32 (ENRICH_SCHEMA_MAX_DEPTH)")
	for _, l := range []schema.Limit{schema.LimitDepth, schema.LimitProperties, schema.LimitSubschemas, schema.LimitBytes} {
		msg := (&schema.TooComplexError{Limit: l, Max: 7}).Error()
		is.True(strings.Contains(msg, "exceeds 7")) // names the value
		is.True(strings.Contains(msg, l.Setting())) // names the setting
		is.True(strings.HasPrefix(l.Setting(), "ENRICH_SCHEMA_MAX_"))
	}
}

func TestLimitsDefaults(t *testing.T) {
	is := is.New(t)
	is.Equal(schema.Limits{}.WithDefaults(), schema.DefaultLimits())
	is.Equal(schema.Limits{MaxDepth: -1, MaxBytes: 9}.WithDefaults(),
		schema.Limits{MaxDepth: schema.DefaultMaxDepth, MaxProperties: schema.DefaultMaxProperties,
			MaxSubschemas: schema.DefaultMaxSubschemas, MaxBytes: 9})
}

// FuzzCheckLimits: the checker never panics, agrees with a reference
// measure of the decoded tree on every JSON document, and refuses what is
// past a limit.
func FuzzCheckLimits(f *testing.F) {
	for _, s := range []string{`{}`, `true`, `[]`, `{"properties":{"a":{"type":"string"}}}`, nestedObjects(3),
		`{"allOf":[{},true]}`, `{"items":[{}]}`, `{"$defs":{"a":{"properties":{"b":{}}}}}`, `{"enum":[{"properties":{"a":1}}]}`,
		`{"a":`, `]`, `{"properties":[1]}`, `{"items":{"items":[true,{"not":{}}]}}`, `{"properties":{"properties":{"properties":{}}}}`,
		`{"dependencies":{"a":["b"],"c":{}}}`, `"\u0000"`, arrays(8), `{"x":1} {"y":2}`} {
		f.Add([]byte(s))
	}
	lim := schema.Limits{MaxDepth: 6, MaxProperties: 4, MaxSubschemas: 6, MaxBytes: 4096}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if err := lim.Check(doc); len(doc) > lim.MaxBytes && !errors.Is(err, schema.ErrTooComplex) {
			t.Fatalf("%d bytes passed", len(doc))
		}
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return // not one JSON document: only "does not panic"
		}
		// The decoded document, written again: one member per name, as the
		// reference counts them.
		canon, _ := json.Marshal(v)
		err := lim.Check(canon)
		depth, props, subs := measure(v, true)
		var tc *schema.TooComplexError
		switch {
		case len(canon) > lim.MaxBytes, depth > lim.MaxDepth, props > lim.MaxProperties, subs > lim.MaxSubschemas:
			if !errors.As(err, &tc) {
				t.Fatalf("%s: depth %d, props %d, subs %d, passed", doc, depth, props, subs)
			}
		default:
			if err != nil {
				t.Fatalf("%s: depth %d, props %d, subs %d, refused: %v", doc, depth, props, subs, err)
			}
		}
	})
}

// measure is the reference: the limits' measures of a decoded document
// (isSchema: v is in a schema position).
func measure(v any, isSchema bool) (depth, props, subs int) {
	add := func(d, p, s int) {
		depth, props, subs = max(depth, d+1), props+p, subs+s
	}
	switch x := v.(type) {
	case bool:
		if isSchema {
			subs = 1
		}
	case []any:
		depth = 1
		for _, e := range x {
			add(measure(e, false))
		}
	case map[string]any:
		depth = 1
		if isSchema {
			subs = 1
		}
		for k, e := range x {
			add(measureMember(k, e, isSchema))
		}
	}
	return depth, props, subs
}

func measureMember(k string, e any, inSchema bool) (depth, props, subs int) {
	maps := map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependencies": true}
	valued := map[string]bool{"items": true, "additionalItems": true, "prefixItems": true, "contains": true,
		"additionalProperties": true, "propertyNames": true, "not": true, "if": true, "then": true, "else": true,
		"allOf": true, "anyOf": true, "oneOf": true, "unevaluatedItems": true, "unevaluatedProperties": true,
		"contentSchema": true}
	m, isMap := e.(map[string]any)
	arr, isArr := e.([]any)
	switch {
	case inSchema && maps[k] && isMap:
		depth = 1
		for _, s := range m {
			d, p, n := measure(s, true)
			depth, props, subs = max(depth, d+1), props+p, subs+n
		}
		if k == "properties" || k == "patternProperties" {
			props += len(m)
		}
		return depth, props, subs
	case inSchema && valued[k] && isArr:
		depth = 1
		for _, s := range arr {
			d, p, n := measure(s, true)
			depth, props, subs = max(depth, d+1), props+p, subs+n
		}
		return depth, props, subs
	case inSchema && valued[k]:
		return measure(e, true)
	}
	return measure(e, false)
}

// BenchmarkCheckLimits: the checker on the depth bomb (refused at
// depth 33, whatever follows), on a document 100,000 arrays deep, and on a
// 2,000-property schema that passes (the whole document read).
func BenchmarkCheckLimits(b *testing.B) {
	for _, bc := range []struct {
		name string
		doc  []byte
		lim  schema.Limits
	}{
		{"depth-bomb-3000", []byte(nestedObjects(3000)), schema.Limits{}},
		{"arrays-100000", []byte(arrays(100_000)), schema.Limits{MaxBytes: 1 << 20}},
		{"flat-2000", []byte(flat(2000)), schema.Limits{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.doc)))
			for b.Loop() {
				_ = bc.lim.Check(bc.doc)
			}
		})
	}
}
