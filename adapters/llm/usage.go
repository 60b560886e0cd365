package llm

import (
	"encoding/json"
	"math"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
)

// Keys of llms.ContentChoice.GenerationInfo that carry a call's usage. The
// clients of this package write them whichever SDK answered; they are the
// names langchaingo's own clients (Ollama's) and the sandbox write.
const (
	InfoPromptTokens     = "PromptTokens"
	InfoCompletionTokens = "CompletionTokens"
	// InfoWebSearchCalls counts the searches of the provider's web search
	// tool, each billed (model.Price.PerSearch); sandbox::search writes it
	// too.
	InfoWebSearchCalls = sandbox.InfoWebSearchCalls
)

// CallUsage is what one call spent.
type CallUsage struct {
	InputTokens, OutputTokens, WebSearchCalls int
}

// Usage reads a call's usage from its GenerationInfo: the keys above, or
// the names other langchaingo clients use (InputTokens and OutputTokens,
// and snake_case), so that this stays the one place that knows.
func Usage(info map[string]any) CallUsage {
	return CallUsage{
		InputTokens:    firstCount(info, InfoPromptTokens, "InputTokens", "input_tokens", "prompt_tokens", "prompt_eval_count"),
		OutputTokens:   firstCount(info, InfoCompletionTokens, "OutputTokens", "output_tokens", "completion_tokens", "eval_count"),
		WebSearchCalls: firstCount(info, InfoWebSearchCalls, "web_search_calls"),
	}
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

// usageInfo is the GenerationInfo of a call that spent u.
func usageInfo(u CallUsage) map[string]any {
	return map[string]any{InfoPromptTokens: u.InputTokens, InfoCompletionTokens: u.OutputTokens,
		InfoWebSearchCalls: u.WebSearchCalls}
}
