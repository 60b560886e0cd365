package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
)

func TestUsage(t *testing.T) {
	type mistralUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	tests := []struct {
		name    string
		info    map[string]any
		in, out int
	}{
		{"openai", map[string]any{"PromptTokens": 12, "CompletionTokens": 34, "TotalTokens": 46, "ReasoningTokens": 0}, 12, 34},
		{"anthropic", map[string]any{"InputTokens": 5, "OutputTokens": 7, "CacheReadInputTokens": 0}, 5, 7},
		{"bedrock", map[string]any{"input_tokens": int32(3), "output_tokens": int64(4)}, 3, 4},
		{"googleai both", map[string]any{"PromptTokens": int32(8), "input_tokens": int32(8), "CompletionTokens": int32(9)}, 8, 9},
		{"floats", map[string]any{"PromptTokens": 10.0, "CompletionTokens": float32(2)}, 10, 2},
		{"json numbers", map[string]any{"prompt_tokens": json.Number("6"), "completion_tokens": json.Number("1")}, 6, 1},
		{"ollama raw", map[string]any{"prompt_eval_count": 20, "eval_count": 30}, 20, 30},
		{"mistral struct", map[string]any{"usage": mistralUsage{PromptTokens: 11, CompletionTokens: 22}}, 11, 22},
		{"zero first, later key set", map[string]any{"PromptTokens": 0, "InputTokens": 4, "CompletionTokens": 0, "OutputTokens": 2}, 4, 2},
		{"nothing", nil, 0, 0},
		{"junk", map[string]any{"PromptTokens": "12", "CompletionTokens": -3.0}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			in, out := llm.Usage(tt.info)
			is.Equal(in, tt.in)
			is.Equal(out, tt.out)
		})
	}
}
