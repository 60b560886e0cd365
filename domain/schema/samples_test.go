package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

func samples(t *testing.T, raw string) []map[string]any {
	t.Helper()
	s, err := schema.ParseSamples(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return s
}

func TestParseSamples(t *testing.T) {
	tests := []struct {
		name, raw, field string
		n                int
	}{
		{"array", `[{"a":1},{"a":2}]`, "", 2},
		{"bare object", `{"a":1}`, "", 1},
		{"null", `null`, "entity_samples", 0},
		{"empty array", `[]`, "entity_samples", 0},
		{"not an object", `[{"a":1}, 3]`, "entity_samples.1", 0},
		{"empty object", `[{}]`, "entity_samples.0", 0},
		{"string", `"x"`, "entity_samples", 0},
		{"too many", "[" + strings.Repeat(`{"a":1},`, schema.MaxSamples) + `{"a":1}]`, "entity_samples", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := schema.ParseSamples(json.RawMessage(tt.raw))
			if tt.field == "" {
				is.NoErr(err)
				is.Equal(len(got), tt.n)
				return
			}
			var fe *schema.FieldError
			is.True(errors.As(err, &fe))
			is.Equal(fe.Field, tt.field)
		})
	}
}

func TestCollapseLocalized(t *testing.T) {
	is := is.New(t)
	in := samples(t, `[{"name":"Acme","industry":{"en":"Anvils","fr":"Enclumes"},"offices":[{"label":{"de":"Haupt","fr":"Siège"}}]},
		{"name":"Globex","industry":"Energy","codes":{"ab":1,"cd":2}}]`)
	c := schema.CollapseLocalized(in)
	is.Equal(c.Samples[0]["industry"], "Anvils")                                    // English wins
	is.Equal(c.Samples[0]["offices"].([]any)[0].(map[string]any)["label"], "Haupt") // else the first code
	is.Equal(c.Localized, []string{"industry", "offices[].label"})
	is.Equal(len(c.Samples[1]["codes"].(map[string]any)), 2) // numbers: not a language map
	_, untouched := in[0]["industry"].(map[string]any)
	is.True(untouched) // the input is not changed
	// A sample whose keys look like language codes is still an entity.
	c = schema.CollapseLocalized(samples(t, `{"en":"x","fr":"y"}`))
	is.Equal(c.Samples[0], map[string]any{"en": "x", "fr": "y"})
	is.Equal(len(c.Localized), 0)
}

func TestCheckSamples(t *testing.T) {
	tests := []struct {
		name      string
		raw       string
		threshold float64
		strict    bool
		wantErr   error
		fatal     []string
	}{
		{"one sample", `[{"name":"Acme"}]`, 0.5, true, nil, nil},
		{"same type", `[{"name":"Acme","industry":"Anvils"},{"name":"Globex","founded":1990}]`, 0.5, true, nil, nil},
		{"mixed types", `[{"name":"Acme","industry":"Anvils","ceo":"W. E. Coyote"},{"title":"Dune","pages":412,"isbn":"x","author":"Herbert"}]`, 0.5, true, schema.ErrSampleCommonality, nil},
		{"threshold zero accepts anything", `[{"a":1},{"b":2}]`, 0, true, nil, nil},
		{"threshold one needs every field", `[{"a":1,"b":2},{"a":1}]`, 1, true, schema.ErrSampleCommonality, nil},
		{"items share a field", `[{"offices":[{"city":"Paris","size":1},{"city":"Rome"}]}]`, 0.5, true, nil, nil},
		{"items share nothing", `[{"offices":[{"city":"Paris"},{"town":"Rome"}]}]`, 0.5, true, schema.ErrSampleConformance, []string{"offices[]"}},
		{"not strict reports only", `[{"offices":[{"city":"Paris"},{"town":"Rome"}]}]`, 0.5, false, nil, []string{"offices[]"}},
		{"items across samples", `[{"n":1,"tags":[{"k":1}]},{"n":2,"tags":[{"v":2}]}]`, 0.5, true, schema.ErrSampleConformance, []string{"tags[]"}},
		{"one item is fine", `[{"offices":[{"city":"Paris"}]}]`, 0.5, true, nil, nil},
		{"nested objects may drift", `[{"n":1,"hq":{"city":"Paris"}},{"n":2,"hq":{"town":"Rome"}}]`, 0.5, true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c := schema.CheckSamples(samples(t, tt.raw), tt.threshold, tt.strict)
			err := c.Err()
			if tt.wantErr == nil {
				is.NoErr(err)
				is.True(c.OK)
			} else {
				is.True(errors.Is(err, tt.wantErr))
				is.True(!c.OK)
			}
			var fatal []string
			for _, s := range c.Sites {
				if s.Fatal {
					fatal = append(fatal, s.Path)
				}
			}
			is.Equal(fatal, tt.fatal)
		})
	}
}

func TestCheckSamplesSites(t *testing.T) {
	is := is.New(t)
	c := schema.CheckSamples(samples(t, `[{"name":"A","offices":[{"city":"P","zip":"1"},{"city":"R"}]},{"name":"B"}]`), 0.5, true)
	is.True(c.OK)
	is.Equal(len(c.Sites), 2)
	root, offices := c.Sites[0], c.Sites[1]
	is.Equal(root.Path, "")
	is.Equal(root.Observations, 2)
	is.Equal(root.AlwaysPresent, []string{"name"})
	is.Equal(root.Drifting, []string{"offices"})
	is.Equal(offices.Path, "offices[]")
	is.True(offices.ArrayItem)
	is.Equal(offices.AlwaysPresent, []string{"city"})
	is.Equal(offices.Shapes, [][]string{{"city", "zip"}, {"city"}})
}

func TestObserveAndPostProcess(t *testing.T) {
	is := is.New(t)
	in := samples(t, `[{"name":"Acme","founded":1990,"ceo":null,"tags":["b2b"],"hq":{"city":"Paris"},"offices":[{"city":"Lyon"}]},
		{"name":"Globex","founded":1990,"tags":["energy"],"hq":{"city":"Rome","zip":"001"},"offices":[{"city":"Milan","floor":2}]}]`)
	obs := schema.Observe(in)
	is.True(!obs["name"].Nullable())
	is.True(obs["ceo"].Nullable())
	is.True(obs["hq.zip"].Nullable())
	is.True(!obs["hq.city"].Nullable())
	is.True(obs["offices[].floor"].Nullable())
	is.Equal(len(obs["founded"].Values), 1) // distinct values only

	var doc map[string]any
	is.NoErr(json.Unmarshal([]byte(`{"type":"object","properties":{
		"name":{"type":"string","identifying":true},
		"founded":{"type":"integer"},
		"ceo":{"type":"string","identifying":true},
		"tags":{"type":"array","items":{"type":"string"}},
		"hq":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}}},
		"offices":{"type":"array","items":{"type":"object","properties":{"city":{"type":"string"},"floor":{"type":"integer"}}}},
		"label":{"type":"string","pattern":"^x"}}}`), &doc))
	schema.PostProcess(doc, obs, []string{"label"})
	p := doc["properties"].(map[string]any)
	prop := func(path ...string) map[string]any {
		n := p[path[0]].(map[string]any)
		for _, s := range path[1:] {
			if s == "[]" {
				n = n["items"].(map[string]any)
				continue
			}
			n = n["properties"].(map[string]any)[s].(map[string]any)
		}
		return n
	}
	is.Equal(prop("name")["type"], "string")
	is.Equal(prop("name")["examples"], []any{"Acme", "Globex"})
	is.Equal(prop("name")["identifying"], true)
	is.Equal(prop("ceo")["type"], []any{"string", "null"})
	is.Equal(prop("ceo")["nullable"], true)
	is.Equal(prop("ceo")["identifying"], nil) // no sample filled it
	is.Equal(prop("founded")["examples"], []any{1990.0})
	is.Equal(prop("hq", "zip")["type"], []any{"string", "null"})
	is.Equal(prop("hq", "city")["type"], "string")
	is.Equal(prop("offices", "[]", "floor")["type"], []any{"integer", "null"})
	is.Equal(prop("tags", "[]")["examples"], []any{"b2b", "energy"})
	is.Equal(prop("label")["multilingual"], true)
	is.Equal(prop("label")["pattern"], nil)
	is.Equal(prop("label")["type"], []any{"string", "null"}) // in no sample
	is.Equal(schema.CheckStructure(doc), []string(nil))
}

func FuzzCheckSamples(f *testing.F) {
	for _, s := range []string{`[{"a":1}]`, `{"a":{"en":"x","fr":"y"}}`, `[{"o":[{"a":1},{"b":2}]},{"o":[]}]`, `[{"a":[[{"b":1}]]}]`, `[]`, `x`} {
		f.Add(s, 0.5, true)
	}
	f.Fuzz(func(t *testing.T, raw string, threshold float64, strict bool) {
		s, err := schema.ParseSamples(json.RawMessage(raw))
		if err != nil {
			return
		}
		c := schema.CollapseLocalized(s)
		v := schema.CheckSamples(c.Samples, threshold, strict)
		if v.OK != (v.Err() == nil) {
			t.Fatalf("ok %v but err %v", v.OK, v.Err())
		}
		schema.Observe(c.Samples)
	})
}
