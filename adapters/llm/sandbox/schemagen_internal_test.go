package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

func schemaOf(t *testing.T, answer any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(answer)
	a, err := schema.ParseAnswer(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return a.Schema
}

func TestGenerateSchemaTask(t *testing.T) {
	is := is.New(t)
	samples := []map[string]any{
		{"name": "Acme", "founded": 1947.0, "revenue": 1.5, "public": true, "since": "2001-02-03", "contact": "a@acme.example",
			"hq": map[string]any{"city": "Paris"}, "tags": []any{"b2b"}, "offices": []any{map[string]any{"city": "Lyon"}}},
	}
	prompt := schema.GenerationPrompt(samples, schema.GenerationOptions{})[1].Content
	doc := schemaOf(t, generateSchema(TaskInput{Prompt: prompt, Seed: "echo"}))
	is.Equal(schema.CheckStructure(doc), []string(nil))
	props := doc["properties"].(map[string]any)
	typ := func(k string) any { return props[k].(map[string]any)["type"] }
	is.Equal(typ("name"), "string")
	is.Equal(typ("founded"), "integer")
	is.Equal(typ("revenue"), "number")
	is.Equal(typ("public"), "boolean")
	is.Equal(props["since"].(map[string]any)["format"], "date")
	is.Equal(props["contact"].(map[string]any)["format"], "email")
	is.Equal(typ("hq"), "object")
	is.Equal(typ("tags"), "array")
	is.Equal(props["name"].(map[string]any)["identifying"], true)
	is.Equal(doc["title"], "Company")
	// generate_semantic_ids: on the root and on objects with an identifying property.
	withIDs := schema.GenerationPrompt(samples, schema.GenerationOptions{GenerateSemanticIDs: true})[1].Content
	sem := schemaOf(t, generateSchema(TaskInput{Prompt: withIDs, Seed: "echo"}))
	is.Equal(sem["properties"].(map[string]any)["semantic_id"].(map[string]any)["semantic_id"], true)
	is.True(sem["properties"].(map[string]any)["hq"].(map[string]any)["properties"].(map[string]any)["semantic_id"] != nil)
	is.True(props["semantic_id"] == nil)
	is.Equal(schema.CheckStructure(sem), []string(nil))
	// Deterministic.
	b1, _ := json.Marshal(generateSchema(TaskInput{Prompt: prompt, Seed: "echo"}))
	b2, _ := json.Marshal(generateSchema(TaskInput{Prompt: prompt, Seed: "echo"}))
	is.Equal(string(b1), string(b2))
	// flaky's first answer breaks the rules, its retry does not; broken always breaks them.
	is.True(len(schema.CheckStructure(schemaOf(t, generateSchema(TaskInput{Prompt: prompt, Seed: "flaky"})))) > 0)
	is.Equal(schema.CheckStructure(schemaOf(t, generateSchema(TaskInput{Prompt: prompt, Seed: "flaky", Retry: true}))), []string(nil))
	is.True(len(schema.CheckStructure(schemaOf(t, generateSchema(TaskInput{Prompt: prompt, Seed: "broken", Retry: true})))) > 0)
}

func TestEditSchemaTask(t *testing.T) {
	current := json.RawMessage(`{"type":"object","required":["name","industry"],"properties":{"name":{"type":"string"},"industry":{"type":"string"},"ceo":{"type":"string"}}}`)
	tests := []struct {
		instruction string
		want        []string // property names after
		typ         map[string]string
		suggestions int
	}{
		{"add a field founded_year of type number", []string{"ceo", "founded_year", "industry", "name"}, map[string]string{"founded_year": "number"}, 0},
		{"Add the property listed as boolean.", []string{"ceo", "industry", "listed", "name"}, map[string]string{"listed": "boolean"}, 0},
		{"add field ticker", []string{"ceo", "industry", "name", "ticker"}, map[string]string{"ticker": "string"}, 0},
		{"remove ceo", []string{"industry", "name"}, nil, 0},
		{"delete the field ceo", []string{"industry", "name"}, nil, 0},
		{"rename industry to sector", []string{"ceo", "name", "sector"}, nil, 0},
		{"rename industry to sector; remove ceo and then add a field hq_city", []string{"hq_city", "name", "sector"}, nil, 0},
		{"remove nothing_here", []string{"ceo", "industry", "name"}, nil, 1},
		{"make it better", []string{"ceo", "industry", "name"}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.instruction, func(t *testing.T) {
			is := is.New(t)
			prompt := schema.EditPrompt(current, tt.instruction)[1].Content
			ans := editSchema(TaskInput{Prompt: prompt, Seed: "echo"}).(map[string]any)
			doc := schemaOf(t, ans)
			props := doc["properties"].(map[string]any)
			is.Equal(sortedKeys(props), tt.want)
			for k, ty := range tt.typ {
				is.Equal(props[k].(map[string]any)["type"], ty)
			}
			is.Equal(len(ans["suggestions"].([]any)), tt.suggestions)
			for _, r := range doc["required"].([]any) {
				is.True(props[r.(string)] != nil) // required follows renames and removals
			}
		})
	}
}

// FuzzGenerateSchema: from any valid samples the sandbox's schema passes
// the structural rules (after post-processing), so sandbox::echo never
// fails a generation.
func FuzzGenerateSchema(f *testing.F) {
	for _, s := range []string{`[{"a":1},{"a":"x"}]`, `{"a":{}}`, `{"a":[[1],[2]],"b":[{}],"c":null}`, `{"en":"x","fr":"y"}`, `{"":{"":[{"":1}]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		samples, err := schema.ParseSamples(json.RawMessage(raw))
		if err != nil {
			return
		}
		c := schema.CollapseLocalized(samples)
		prompt := schema.GenerationPrompt(c.Samples, schema.GenerationOptions{})[1].Content
		b, _ := json.Marshal(generateSchema(TaskInput{Prompt: prompt, Seed: "echo"}))
		a, err := schema.ParseAnswer(string(b))
		if err != nil {
			t.Fatal(err)
		}
		schema.PostProcess(a.Schema, schema.Observe(c.Samples), c.Localized)
		if v := schema.CheckStructure(a.Schema); len(v) > 0 {
			t.Fatalf("samples %s: %v", raw, v)
		}
	})
}
