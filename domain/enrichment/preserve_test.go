package enrichment_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const preserveDoc = `{"type":"object","required":["name","internal_id"],"properties":{
 "name":{"type":"string"},"internal_id":{"type":"string","preserve":true},
 "hq":{"$ref":"#/$defs/Place"},"home":{"$ref":"#/$defs/Place"}},
 "$defs":{"Place":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"country":{"type":"string"}}}}}`

func TestWithoutPaths(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths [][]string
		check func(is *is.I, out map[string]any)
	}{
		{"none", nil, func(is *is.I, out map[string]any) { is.Equal(encode(out), encode(mustDecode(t, preserveDoc))) }},
		{"top-level property and its required entry", [][]string{{"internal_id"}}, func(is *is.I, out map[string]any) {
			props := out["properties"].(map[string]any)
			is.True(props["internal_id"] == nil)
			is.Equal(out["required"], []any{"name"})
		}},
		{"through a $ref: inlined at that site only", [][]string{{"hq", "city"}}, func(is *is.I, out map[string]any) {
			hq := out["properties"].(map[string]any)["hq"].(map[string]any)
			is.True(hq["$ref"] == nil)
			is.Equal(encode(hq["properties"]), `{"country":{"type":"string"}}`)
			is.True(hq["required"] == nil)
			home := out["properties"].(map[string]any)["home"].(map[string]any)
			is.Equal(home["$ref"], "#/$defs/Place")
			is.True(strings.Contains(encode(out["$defs"]), `"city"`))
		}},
		{"unknown paths change nothing", [][]string{{"nope"}, {"name", "deeper"}, {}}, func(is *is.I, out map[string]any) {
			is.Equal(encode(out), encode(mustDecode(t, preserveDoc)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			doc := mustDecode(t, preserveDoc)
			before := encode(doc)
			out := enrichment.WithoutPaths(doc, tc.paths)
			tc.check(is, out)
			is.Equal(encode(doc), before) // the input is not changed
		})
	}
}

func TestWithoutPathsLeavesPrompt(t *testing.T) {
	is := is.New(t)
	doc := enrichment.WithoutPaths(mustDecode(t, preserveDoc), [][]string{{"internal_id"}})
	domains, err := enrichment.Plan(doc)
	is.NoErr(err)
	for _, d := range enrichment.Calls(enrichment.SinglePass, doc, domains) {
		for _, m := range enrichment.Prompt("Company", json.RawMessage(`{"name":"Acme","internal_id":"X-1"}`), d) {
			if m.Role == "system" {
				continue
			}
			is.True(!strings.Contains(strings.SplitN(m.Content, "Known attributes", 2)[0], "internal_id")) // not asked of the model
		}
	}
}

func TestCopyPaths(t *testing.T) {
	for _, tc := range []struct {
		name, result, entity string
		paths                [][]string
		want                 string
	}{
		{"copied over the model's", `{"name":"Invented","x":1}`, `{"name":"Acme Corp."}`, [][]string{{"name"}}, `{"name":"Acme Corp.","x":1}`},
		{"nested, objects created", `{"x":1}`, `{"hq":{"city":"Paris","zip":"75001"}}`, [][]string{{"hq", "city"}}, `{"hq":{"city":"Paris"},"x":1}`},
		{"nested into the model's object", `{"hq":{"country":"FR"}}`, `{"hq":{"city":"Paris"}}`, [][]string{{"hq", "city"}}, `{"hq":{"city":"Paris","country":"FR"}}`},
		{"exact values: numbers, objects", `{}`, `{"n":1.50,"o":{"a":[1,"b"]}}`, [][]string{{"n"}, {"o"}}, `{"n":1.5,"o":{"a":[1,"b"]}}`},
		{"missing in the entity: left alone", `{"a":"model"}`, `{}`, [][]string{{"a"}}, `{"a":"model"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got := enrichment.CopyPaths(mustDecode(t, tc.result), mustDecode(t, tc.entity), tc.paths)
			is.Equal(encode(got), encode(mustDecode(t, tc.want)))
		})
	}
}

func TestPropertySchema(t *testing.T) {
	is := is.New(t)
	doc := mustDecode(t, preserveDoc)
	p, ok := enrichment.PropertySchema(doc, []string{"hq", "city"})
	is.True(ok)
	is.Equal(p["type"], "string")
	is.True(p["$defs"] != nil) // refs still resolve
	p, ok = enrichment.PropertySchema(doc, []string{"internal_id"})
	is.True(ok)
	is.Equal(p["preserve"], true)
	_, ok = enrichment.PropertySchema(doc, []string{"hq", "nope"})
	is.True(!ok)
	_, ok = enrichment.PropertySchema(doc, nil)
	is.True(!ok)
}
