package llm

import (
	"fmt"
	"net/http"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/ollama"
)

// Default base URLs. googleai and mistral are reached through their
// OpenAI-compatible endpoints, with the OpenAI client: both services speak
// the OpenAI protocol, and one client is one set of behaviours to test.
const (
	openAIURL    = "https://api.openai.com/v1"
	googleAIURL  = "https://generativelanguage.googleapis.com/v1beta/openai"
	mistralURL   = "https://api.mistral.ai/v1"
	anthropicURL = "https://api.anthropic.com/v1"
	ollamaURL    = "http://127.0.0.1:11434"
)

// SearchTool reports whether enrich calls the web search tool of providers
// of type t. Whether a model may search is modelsel.CanSearch's rule: its
// catalog entry must say web_search too.
func SearchTool(t string) bool { return t == TypeOpenAI || t == TypeAnthropic }

// newClient builds the client of e's provider and model with token ("" for
// a keyless provider, whose requests then carry no key header at all),
// sending through hc behind a statusDoer, so that every client's failures
// are classified the same way (classify). One client per provider type:
// openai-go for the OpenAI protocol, anthropic-sdk-go for Anthropic's,
// langchaingo's own client for Ollama.
func newClient(e *entry, token string, hc *http.Client) (llms.Model, error) {
	p, m := e.prov, e.info.Key.Model
	doer := statusDoer{hc: hc, keyless: token == ""}
	base := p.BaseURL
	switch p.Type {
	case TypeOpenAI, TypeGoogleAI, TypeMistral:
		if base == "" {
			base = map[string]string{TypeOpenAI: openAIURL, TypeGoogleAI: googleAIURL, TypeMistral: mistralURL}[p.Type]
		}
		return newOpenAIClient(base, m, token, e.info.Reasoning, doer), nil
	case TypeAnthropic:
		if base == "" {
			base = anthropicURL
		}
		return newAnthropicClient(base, m, token, doer), nil
	case TypeOllama:
		if base == "" {
			base = ollamaURL
		}
		return ollama.New(ollama.WithServerURL(base), ollama.WithModel(m), ollama.WithHTTPClient(&http.Client{Transport: doer}))
	}
	return nil, fmt.Errorf("provider type %s not supported yet", p.Type)
}
