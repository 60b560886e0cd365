package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

func TestCheckStructure(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // substrings, one per violation
	}{
		{"valid", `{"type":"object","properties":{"name":{"type":"string","format":"email"},"tags":{"type":["array","null"],"items":{"type":"string"}}}}`, nil},
		{"not an object", `{"type":"array","properties":{"a":{"type":"string"}}}`, []string{`"type" must be "object"`}},
		{"no properties", `{"type":"object","properties":{}}`, []string{`at least one property`}},
		{"untyped property", `{"type":"object","properties":{"a":{"description":"x"}}}`, []string{"a: a property must have a type"}},
		{"unknown type", `{"type":"object","properties":{"a":{"type":"text"}}}`, []string{`a: unknown type "text"`}},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`, []string{"a: an array property must say"}},
		{"object without properties", `{"type":"object","properties":{"a":{"type":"object"}}}`, []string{"a: an object property must list"}},
		{"items without properties", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object"}}}}`, []string{"a[]: array items of type object"}},
		{"unknown format", `{"type":"object","properties":{"a":{"type":"string","format":"phone"}}}`, []string{`a: format "phone" is not one of`}},
		{"format on a number", `{"type":"object","properties":{"a":{"type":"number","format":"date"}}}`, []string{"a: format applies to strings only"}},
		{"pattern and format", `{"type":"object","properties":{"a":{"type":"string","format":"date","pattern":"^x"}}}`, []string{"a: pattern cannot be combined with format"}},
		{"pattern and multilingual", `{"type":"object","properties":{"a":{"type":"string","multilingual":true,"pattern":"^x"}}}`, []string{"a: pattern cannot be combined with multilingual"}},
		{"unknown expertise", `{"type":"object","properties":{"a":{"type":"string","expertise":"finance"}}}`, []string{`a: expertise "finance" is not a domain`}},
		{"known expertise", `{"type":"object","x-expertiseDomains":{"finance":{"name":"Finance"}},"properties":{"a":{"type":"string","expertise":"finance"}}}`, nil},
		{"too many domains", `{"type":"object","x-expertiseDomains":{"a":{},"b":{}},"properties":{"x":{"type":"string"}}}`, []string{"names 2 domains but the schema has only 1"}},
		{"nested violation", `{"type":"object","properties":{"hq":{"type":"object","properties":{"zip":{"type":"strin"}}}}}`, []string{`hq.zip: unknown type "strin"`}},
		{"ref is typed enough", `{"type":"object","$defs":{"p":{"type":"object","properties":{"n":{"type":"string"}}}},"properties":{"a":{"$ref":"#/$defs/p"}}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var doc map[string]any
			is.NoErr(json.Unmarshal([]byte(tt.doc), &doc))
			got := schema.CheckStructure(doc)
			is.Equal(len(got), len(tt.want))
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %d: %q does not say %q", i, got[i], w)
				}
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		name, text string
		ok         bool
		props      int
		sugg       int
	}{
		{"wrapped", `{"schema":{"type":"object","properties":{"a":{"type":"string"}}},"suggestions":["add b",""]}`, true, 1, 1},
		{"bare schema", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, true, 2, 0},
		{"code fence", "```json\n{\"type\":\"object\",\"properties\":{}}\n```", true, 0, 0},
		{"not json", `{"oops":`, false, 0, 0},
		{"array", `[1]`, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			a, err := schema.ParseAnswer(tt.text)
			if !tt.ok {
				is.True(err != nil)
				return
			}
			is.NoErr(err)
			props, _ := a.Schema["properties"].(map[string]any)
			is.Equal(len(props), tt.props)
			is.Equal(len(a.Suggestions), tt.sugg)
		})
	}
}

func TestPrompts(t *testing.T) {
	is := is.New(t)
	msgs := schema.GenerationPrompt([]map[string]any{{"name": "Acme"}}, schema.GenerationOptions{Language: "fr", Localized: []string{"industry"}})
	is.Equal(len(msgs), 2)
	is.True(strings.Contains(msgs[1].Content, schema.SamplesMarker+"\n[{\"name\":\"Acme\"}]"))
	is.True(strings.Contains(msgs[1].Content, `"fr"`))
	is.True(strings.Contains(msgs[1].Content, "multilingual: industry"))
	edit := schema.EditPrompt(json.RawMessage(`{"type":"object"}`), " add a field x ")
	is.True(strings.Contains(edit[1].Content, schema.InstructionMarker+" add a field x\n"))
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"schema":{"type":"object","properties":{"a":{"type":"string"}}}}`, `{"type":["object"],"properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{}}}}}}`,
		`{"properties":{"a":1,"b":{"properties":[]}}}`, "```\n{}\n```", `{"x-expertiseDomains":[],"properties":{"a":{"expertise":3,"format":1,"pattern":2}}}`} {
		f.Add(s)
	}
	obs := schema.Observe([]map[string]any{{"a": "x", "b": []any{map[string]any{"c": 1.0}}}})
	f.Fuzz(func(t *testing.T, text string) {
		a, err := schema.ParseAnswer(text)
		if err != nil {
			return
		}
		schema.CheckStructure(a.Schema)
		schema.PostProcess(a.Schema, obs, []string{"a", "b[].c"})
		schema.CheckStructure(a.Schema)
		schema.PropertyPaths(a.Schema)
	})
}
