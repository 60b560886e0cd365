package openai

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/entityenrich/enrich/third_party/langchaingo/llms/openai/internal/openaiclient"
)

// upstreamCapabilities is getModelCapabilities as langchaingo v0.1.14
// wrote it: every pattern compiled on every call.
func upstreamCapabilities(model string) ModelCapability {
	for _, cap := range modelCapabilities {
		if matched, _ := regexp.MatchString(cap.Pattern, model); matched {
			return cap
		}
	}
	return ModelCapability{SupportsSystem: true}
}

func TestModelCapabilitiesAsUpstream(t *testing.T) {
	models := []string{
		"o1", "o1-mini", "o1-preview", "o3", "o3-mini", "O1-MINI", "o1-pro", "o2", "o3-mini-2025",
		"gpt-4", "gpt-4o-mini", "GPT-4-turbo", "gpt-3.5-turbo", "gpt-35-turbo", "gpt-5",
		"fast", "", "mistral-large-latest", "gemini-2.0-flash", "xgpt-4",
	}
	for _, m := range models {
		got, want := getModelCapabilities(m), upstreamCapabilities(m)
		if got != want {
			t.Errorf("getModelCapabilities(%q) = %+v, upstream %+v", m, got, want)
		}
	}
}

// The point of the patch: a call compiles nothing, so it allocates nothing.
func TestModelCapabilitiesAllocateNothing(t *testing.T) {
	for _, m := range []string{"o1-mini", "gpt-3.5-turbo", "fast"} {
		if n := testing.AllocsPerRun(100, func() { getModelCapabilities(m) }); n != 0 {
			t.Errorf("getModelCapabilities(%q): %.0f allocations per call, want 0", m, n)
		}
	}
}

// TestChatRequestBytesAsUpstream holds the patch in createChat (MarshalJSON
// called directly) to upstream's json.Marshal(payload): the same bytes,
// HTML characters escaped, for requests with and without a response
// format, tools, metadata and token limits.
func TestChatRequestBytesAsUpstream(t *testing.T) {
	strict := true
	for _, r := range []*openaiclient.ChatRequest{
		{Model: "gpt-4o", Messages: []*openaiclient.ChatMessage{{Role: "user", Content: "a <b> & \"c\"\u2028"}}},
		{Model: "o3-mini", Temperature: 0.3, MaxTokens: 10, Messages: []*openaiclient.ChatMessage{
			{Role: "system", Content: "s"}, {Role: "user", MultiContent: nil, Content: "日本"}}},
		{Model: "gpt-5", MaxCompletionTokens: 7, MaxTokens: 3, Seed: 4, Metadata: map[string]any{"k": "<v>", "n": 1.5},
			ResponseFormat: &openaiclient.ResponseFormat{Type: "json_schema", JSONSchema: &openaiclient.ResponseFormatJSONSchema{Name: "x", Strict: strict,
				Schema: &openaiclient.ResponseFormatJSONSchemaProperty{Type: "object"}}},
			Tools:    []openaiclient.Tool{{Type: "function", Function: openaiclient.FunctionDefinition{Name: "f", Parameters: map[string]any{"a": "&"}}}},
			Messages: []*openaiclient.ChatMessage{{Role: "user", Content: "x"}}},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("MarshalJSON:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
}
