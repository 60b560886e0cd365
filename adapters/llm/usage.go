package llm

import (
	"encoding/json"
	"math"
)

// Usage reads token counts from a langchaingo GenerationInfo. Every
// provider names them differently (openai and googleai PromptTokens and
// CompletionTokens, anthropic InputTokens and OutputTokens, bedrock
// input_tokens and output_tokens, mistral a "usage" struct), and this is the
// one place that knows.
func Usage(info map[string]any) (input, output int) {
	input = firstCount(info, "PromptTokens", "InputTokens", "input_tokens", "prompt_tokens", "prompt_eval_count")
	output = firstCount(info, "CompletionTokens", "OutputTokens", "output_tokens", "completion_tokens", "eval_count")
	if input == 0 && output == 0 {
		if u, ok := info["usage"]; ok && u != nil {
			// A provider's own usage struct; its JSON tags follow the
			// provider's API, which uses the snake_case names.
			var m map[string]any
			if b, err := json.Marshal(u); err == nil && json.Unmarshal(b, &m) == nil {
				input = firstCount(m, "prompt_tokens", "input_tokens", "PromptTokens")
				output = firstCount(m, "completion_tokens", "output_tokens", "CompletionTokens")
			}
		}
	}
	return input, output
}

func firstCount(m map[string]any, keys ...string) int {
	for _, k := range keys {
		if n, ok := toCount(m[k]); ok && n > 0 {
			return n
		}
	}
	return 0
}

func toCount(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int32:
		return int(x), true
	case int64:
		return int(x), true
	case uint32:
		return int(x), true
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	case float64:
		if x < 0 || x > math.MaxInt32 || math.IsNaN(x) {
			return 0, false
		}
		return int(x), true
	case float32:
		return toCount(float64(x))
	case json.Number:
		n, err := x.Int64()
		return int(n), err == nil
	}
	return 0, false
}
