package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/entityenrich/enrich/ports"
)

// Web search (enable_web_search) goes through the providers' official Go
// SDKs: langchaingo v0.1.14 exposes neither OpenAI's Responses API with its
// web_search tool nor Anthropic's web_search server tool. A call that asks
// for it is sent with OpenAI's Responses API (POST {base}/responses, tool
// {"type":"web_search"}) or Anthropic's Messages API (server tool
// web_search_20250305); everything else about the call is as on the
// langchaingo path: the client is built per credential and cached, it sends
// through the registry's HTTP client (the SSRF-safe one for a customer's
// provider) behind the statusDoer, so that failures are classified the same
// way, and the answer's text and token usage come back alike.

// SearchTool reports whether enrich calls the web search tool of providers
// of type t. Whether a model may search is modelsel.CanSearch's rule: its
// catalog entry must say web_search too.
func SearchTool(t string) bool { return t == TypeOpenAI || t == TypeAnthropic }

// searchMaxUses bounds the searches of one Anthropic call (max_uses); each
// is billed by the provider on top of the tokens.
const searchMaxUses = 5

// errCannotSearch is a call that asks a model to search when enrich calls no
// search tool for it.
var errCannotSearch = errors.New("the model cannot search the web")

// searcher makes one call with the provider's web search tool.
type searcher interface {
	search(ctx context.Context, e *entry, req ports.LLMRequest) (ports.LLMResponse, error)
}

// newSearcher builds the SDK client of one provider and model with token
// ("" for a keyless provider: the doer then removes the placeholder's
// header). Neither SDK reads the process environment here, nor retries:
// moving to another key is rotation's job.
func newSearcher(p ProviderConfig, m, token string, hc *http.Client) (searcher, error) {
	doer := statusDoer{hc: hc, keyless: token == ""}
	if token == "" {
		token = "keyless"
	}
	base := p.BaseURL
	switch p.Type {
	case TypeOpenAI:
		if base == "" {
			base = openAIURL
		}
		// The service alone, not openai.NewClient, which reads OPENAI_*
		// variables from the environment.
		svc := responses.NewResponseService(option.WithBaseURL(base), option.WithAPIKey(token),
			option.WithHTTPClient(doer), option.WithMaxRetries(0))
		return openAISearcher{svc: svc, model: m}, nil
	case TypeAnthropic:
		if base == "" {
			base = anthropicURL
		}
		// The base URL is configured as for langchaingo (ending in /v1);
		// the SDK's paths start with v1/.
		base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
		// The key goes in x-api-key, as Anthropic documents API keys and
		// as the langchaingo path sends it: this SDK's WithAPIKey sends
		// it as a bearer token. WithoutEnvironmentDefaults keeps the SDK
		// from reading ANTHROPIC_* variables or a profile from disk.
		c := anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(base),
			anthropicoption.WithHeader("x-api-key", token), anthropicoption.WithHTTPClient(doer),
			anthropicoption.WithMaxRetries(0), anthropicoption.WithoutOpenTelemetry())
		return anthropicSearcher{svc: c.Messages, model: m}, nil
	}
	return nil, fmt.Errorf("provider type %s: %w", p.Type, errCannotSearch)
}

// openAISearcher calls OpenAI's Responses API with the web_search tool.
type openAISearcher struct {
	svc   responses.ResponseService
	model string
}

func (s openAISearcher) search(ctx context.Context, e *entry, req ports.LLMRequest) (ports.LLMResponse, error) {
	input := make(responses.ResponseInputParam, 0, len(req.Messages))
	for _, m := range req.Messages {
		role, err := openAIRole(m.Role)
		if err != nil {
			return ports.LLMResponse{}, err
		}
		input = append(input, responses.ResponseInputItemParamOfMessage(m.Content, role))
	}
	params := responses.ResponseNewParams{
		Model: s.model,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}},
		// enrich keeps no conversation state at the provider.
		Store: param.NewOpt(false),
	}
	// The schema channel where the call asks for it and the model has it;
	// otherwise the answer is prompted JSON (no json_object: the prompt
	// asks for JSON and the answer is validated as always).
	if name, ok := schemaChannel(e, req); ok {
		params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: name, Schema: req.Schema,
				Strict: param.NewOpt(req.Strict && e.info.StrictOutput)}}}
	}
	resp, err := s.svc.New(ctx, params)
	if err != nil {
		return ports.LLMResponse{}, err
	}
	out := ports.LLMResponse{Text: resp.OutputText(), InputTokens: int(resp.Usage.InputTokens),
		OutputTokens: int(resp.Usage.OutputTokens)}
	for _, item := range resp.Output {
		if item.Type == "web_search_call" {
			out.Searches++ // each call of the tool is billed
		}
	}
	return out, nil
}

func openAIRole(role string) (responses.EasyInputMessageRole, error) {
	switch role {
	case "system":
		return responses.EasyInputMessageRoleSystem, nil
	case "user", "human":
		return responses.EasyInputMessageRoleUser, nil
	case "assistant", "ai":
		return responses.EasyInputMessageRoleAssistant, nil
	}
	return "", fmt.Errorf("%w %q: %w", errRole, role, ports.ErrInvalid)
}

// anthropicSearcher calls Anthropic's Messages API with the web_search
// server tool. Anthropic has no schema channel here: the answer is
// prompted JSON, validated as always.
type anthropicSearcher struct {
	svc   anthropic.MessageService
	model string
}

func (s anthropicSearcher) search(ctx context.Context, _ *entry, req ports.LLMRequest) (ports.LLMResponse, error) {
	params := anthropic.MessageNewParams{
		Model:     s.model,
		MaxTokens: anthropicMaxTokens,
		Tools: []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{
			MaxUses: anthropic.Int(searchMaxUses)}}},
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
		case "user", "human":
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		case "assistant", "ai":
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
		default:
			return ports.LLMResponse{}, fmt.Errorf("%w %q: %w", errRole, m.Role, ports.ErrInvalid)
		}
	}
	var out ports.LLMResponse
	for turn := 0; ; turn++ {
		msg, err := s.svc.New(ctx, params)
		if err != nil {
			return out, err
		}
		out.InputTokens += int(msg.Usage.InputTokens)
		out.OutputTokens += int(msg.Usage.OutputTokens)
		out.Searches += int(msg.Usage.ServerToolUse.WebSearchRequests)
		// A long search turn may pause (stop_reason pause_turn): it goes
		// on when its content is sent back as the assistant's turn.
		if msg.StopReason != anthropic.StopReasonPauseTurn || turn >= maxPausedTurns {
			out.Text = anthropicAnswer(msg.Content)
			return out, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
	}
}

// maxPausedTurns bounds how many times a paused search turn is continued.
const maxPausedTurns = 3

// anthropicAnswer is the text the model wrote after its last search (the
// text blocks between searches narrate them: "I'll look up..."), or all of
// its text when nothing follows the last search.
func anthropicAnswer(blocks []anthropic.ContentBlockUnion) string {
	var all, last strings.Builder
	for _, b := range blocks {
		if b.Type != "text" {
			last.Reset()
			continue
		}
		all.WriteString(b.Text)
		last.WriteString(b.Text)
	}
	if strings.TrimSpace(last.String()) != "" {
		return last.String()
	}
	return all.String()
}

// search makes req's call with the provider's web search tool.
func (r *Registry) search(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	if c := req.Credential; c != nil && c.Endpoint != nil {
		// An organization's own endpoint offers no search tool.
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errCannotSearch)
	}
	e, err := r.entry(req.Model)
	if err != nil {
		return ports.LLMResponse{}, err
	}
	if e.prov == nil || !SearchTool(e.prov.Type) || !e.info.WebSearch {
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errCannotSearch)
	}
	s, err := r.searcher(e, req.Credential)
	if err != nil {
		return ports.LLMResponse{}, err
	}
	for _, m := range req.Messages {
		if _, err := openAIRole(m.Role); err != nil {
			return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w", req.Model, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, err := s.search(ctx, e, req)
	if err != nil {
		// The usage of the turns that went through, if any, is still spent.
		return resp, classify(ctx, req.Model, err)
	}
	if strings.TrimSpace(resp.Text) == "" {
		return resp, fmt.Errorf("llm: %s: %w: empty response", req.Model, ports.ErrLLMUnavailable)
	}
	return resp, nil
}

// searcher returns the search client of e for credential c, building and
// caching it on first use, like client.
func (r *Registry) searcher(e *entry, c *ports.Credential) (searcher, error) {
	return cached(r, r.searchers, e, c, newSearcher)
}

// schemaChannel says whether a call to e sends its schema on the
// provider's JSON-schema channel, and under which name.
func schemaChannel(e *entry, req ports.LLMRequest) (string, bool) {
	if !req.ResponseSchema || req.Schema == nil || !e.info.ResponseSchema || e.prov == nil || !openAIProtocol(e.prov.Type) {
		return "", false
	}
	name := schemaNameRE.ReplaceAllString(req.SchemaName, "_")
	if name == "" {
		name = "enrichment"
	}
	return name[:min(len(name), 64)], true
}
