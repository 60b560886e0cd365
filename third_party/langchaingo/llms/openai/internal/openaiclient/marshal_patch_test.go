package openaiclient

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// marshalChat (enrich's patch) writes upstream's bytes, json.Marshal's, for
// the requests it writes itself and for those it leaves to MarshalJSON.
func TestMarshalChatAsUpstream(t *testing.T) {
	schema := &ResponseFormat{Type: "json_schema", JSONSchema: &ResponseFormatJSONSchema{Name: "enrichment", Strict: true,
		Schema: &ResponseFormatJSONSchemaProperty{Type: "object", Required: []string{"name"},
			Properties: map[string]*ResponseFormatJSONSchemaProperty{
				"name": {Type: "string", Description: "the <legal> name & more"},
				"tags": {Type: "array", Items: &ResponseFormatJSONSchemaProperty{Type: "string", Enum: []any{"a", 1.5}}},
			}}}}
	text := func(s string) []llms.ContentPart { return []llms.ContentPart{llms.TextContent{Text: s}} }
	for _, r := range []*ChatRequest{
		{Model: "fast", Messages: []*ChatMessage{{Role: "system", MultiContent: text("You fill \"JSON\".\n\t<ok> & \u2028 日本 \xff")},
			{Role: "user", MultiContent: text("{\"name\": \"Acme\"}")}}, ResponseFormat: schema},
		{Model: "gpt-4o", Temperature: 0.2, TopP: 0.9, N: 2, Seed: -4, FrequencyPenalty: 1e-7, PresencePenalty: 1e21,
			MaxTokens: 10, Stream: true, ReasoningEffort: "low", Messages: []*ChatMessage{{Role: "user", Content: "x", Name: "n",
				ToolCallID: "t", ReasoningContent: "r"}}},
		{Model: "o3-mini", Temperature: 0.3, MaxTokens: 10, MaxCompletionTokens: 20, Messages: []*ChatMessage{}},
		{Model: "gpt-5", MaxCompletionTokens: 7},
		{Model: "m", ResponseFormat: &ResponseFormat{Type: "json_object"}, Messages: []*ChatMessage{{Role: "user"}}},
		// Left to MarshalJSON.
		{Model: "m", StopWords: []string{"x"}, LogProbs: true, TopLogProbs: 2, Messages: []*ChatMessage{{Role: "user", Content: "x"}}},
		{Model: "m", Metadata: map[string]any{"k": "<v>"}, Tools: []Tool{{Type: "function", Function: FunctionDefinition{Name: "f"}}}},
		{Model: "m", Messages: []*ChatMessage{{Role: "user", MultiContent: []llms.ContentPart{llms.TextContent{Text: "a"},
			llms.ImageURLContent{URL: "https://x/y.png"}}}}},
		{Model: "m", Messages: []*ChatMessage{{Role: "assistant", ToolCalls: []ToolCall{{ID: "1", Type: "function"}}}}},
	} {
		same(t, r)
	}
	// Content and MultiContent both set: the same error as MarshalJSON's.
	bad := &ChatRequest{Model: "m", Messages: []*ChatMessage{{Role: "user", Content: "a", MultiContent: text("b")}}}
	if _, err := marshalChat(bad); err == nil {
		t.Error("marshalChat: no error for a message with Content and MultiContent")
	}
}

func FuzzMarshalChat(f *testing.F) {
	f.Add("fast", "system \"prompt\"\n<&>", "user \u2028 \xff", 0.0, 0, "")
	f.Add("o1-mini", "", "x", 1.5e-9, 9, "high")
	f.Fuzz(func(t *testing.T, model, system, user string, temp float64, maxTokens int, effort string) {
		r := &ChatRequest{Model: model, Temperature: temp, MaxTokens: maxTokens, ReasoningEffort: effort,
			Messages: []*ChatMessage{{Role: "system", Content: system}, {Role: "user", MultiContent: []llms.ContentPart{llms.TextContent{Text: user}}}}}
		same(t, r)
	})
}

func same(t *testing.T, r *ChatRequest) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := marshalChat(r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("marshalChat error %v, json.Marshal error %v", err, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("marshalChat:\n%s\njson.Marshal:\n%s", got, want)
	}
}
