package llm_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name         string
		info         map[string]any
		in, out, web int
	}{
		{"openai", map[string]any{"PromptTokens": 12, "CompletionTokens": 34, "TotalTokens": 46, "ReasoningTokens": 0}, 12, 34, 0},
		{"anthropic", map[string]any{"InputTokens": 5, "OutputTokens": 7, "CacheReadInputTokens": 0}, 5, 7, 0},
		{"bedrock", map[string]any{"input_tokens": int32(3), "output_tokens": int64(4)}, 3, 4, 0},
		{"googleai both", map[string]any{"PromptTokens": int32(8), "input_tokens": int32(8), "CompletionTokens": int32(9)}, 8, 9, 0},
		{"floats", map[string]any{"PromptTokens": 10.0, "CompletionTokens": float32(2)}, 10, 2, 0},
		{"json numbers", map[string]any{"prompt_tokens": json.Number("6"), "completion_tokens": json.Number("1")}, 6, 1, 0},
		{"ollama raw", map[string]any{"prompt_eval_count": 20, "eval_count": 30}, 20, 30, 0},
		{"searches", map[string]any{"PromptTokens": 12, "CompletionTokens": 34, "WebSearchCalls": 2}, 12, 34, 2},
		{"searches snake case", map[string]any{"web_search_calls": int64(1)}, 0, 0, 1},
		{"zero first, later key set", map[string]any{"PromptTokens": 0, "InputTokens": 4, "CompletionTokens": 0, "OutputTokens": 2}, 4, 2, 0},
		{"nothing", nil, 0, 0, 0},
		{"junk", map[string]any{"PromptTokens": "12", "CompletionTokens": -3.0}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(llm.Usage(tt.info), llm.CallUsage{InputTokens: tt.in, OutputTokens: tt.out, WebSearchCalls: tt.web})
		})
	}
}
