package openai

import (
	"regexp"
	"testing"
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
