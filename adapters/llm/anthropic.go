package llm

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tmc/langchaingo/llms"
)

// anthropicMaxTokens is sent when the call sets no limit: Anthropic's API
// requires max_tokens.
const anthropicMaxTokens = 8192

// searchMaxUses bounds the searches of one Anthropic call (max_uses); each
// is billed by the provider on top of the tokens.
const searchMaxUses = 5

// maxPausedTurns bounds how many times a paused search turn is continued.
const maxPausedTurns = 3

// anthropicClient is one model of Anthropic's Messages API on
// anthropic-sdk-go: structured output as a forced tool whose input is the
// answer, documents and images, and the web_search server tool. It is an
// llms.Model.
type anthropicClient struct {
	messages anthropic.MessageService
	model    string
}

var _ llms.Model = (*anthropicClient)(nil)

// newAnthropicClient builds the client of model m at base with token (""
// for a keyless server). The key goes in x-api-key, as Anthropic documents
// API keys: the SDK's WithAPIKey sends it as a bearer token.
// WithoutEnvironmentDefaults keeps the SDK from reading ANTHROPIC_*
// variables or a profile from disk, and it does not retry: moving to
// another key is rotation's job.
func newAnthropicClient(base, m, token string, doer option.HTTPClient) *anthropicClient {
	// Base URLs are configured ending in /v1, as Anthropic's documentation
	// writes them; the SDK's paths start with v1/.
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	opts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(base), option.WithHTTPClient(doer),
		option.WithMaxRetries(0), option.WithoutOpenTelemetry()}
	if token != "" {
		opts = append(opts, option.WithHeader("x-api-key", token))
	}
	return &anthropicClient{messages: anthropic.NewMessageService(opts...), model: m}
}

// Call implements llms.Model.
func (c *anthropicClient) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, c, prompt, opts...)
}

// GenerateContent implements llms.Model. With a ResponseSchema the model
// must call a tool whose input schema is the answer's, and the tool's
// input is the answer; with MetadataWebSearch it may search first, and
// answers in prompted JSON (a forced tool would forbid the search).
func (c *anthropicClient) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	o := callOptions(opts)
	params := anthropic.MessageNewParams{Model: anthropic.Model(c.model), MaxTokens: anthropicMaxTokens}
	if o.MaxTokens > 0 {
		params.MaxTokens = int64(o.MaxTokens)
	}
	if err := anthropicMessages(&params, msgs); err != nil {
		return nil, err
	}
	search := webSearchOf(o)
	tool := ""
	switch rs := responseSchemaOf(o); {
	case search:
		params.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{
			MaxUses: anthropic.Int(searchMaxUses)}}}
	case rs != nil && rs.Schema["type"] == "object":
		tool = rs.Name
		params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: tool, InputSchema: toolInputSchema(rs.Schema),
			Description: anthropic.String("Records the answer. Its input is the answer, as the schema describes it.")}}}
		if rs.Strict {
			params.Tools[0].OfTool.Strict = anthropic.Bool(true)
		}
		params.ToolChoice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: tool}}
	}
	var u CallUsage
	for turn := 0; ; turn++ {
		msg, err := c.messages.New(ctx, params)
		if err != nil {
			// The turns that went through are spent all the same.
			return partial(u), err
		}
		u.InputTokens += int(msg.Usage.InputTokens)
		u.OutputTokens += int(msg.Usage.OutputTokens)
		u.WebSearchCalls += int(msg.Usage.ServerToolUse.WebSearchRequests)
		// A long search turn may pause (stop_reason pause_turn): it goes on
		// when its content is sent back as the assistant's turn.
		if msg.StopReason == anthropic.StopReasonPauseTurn && turn < maxPausedTurns {
			params.Messages = append(params.Messages, msg.ToParam())
			continue
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: anthropicAnswer(msg.Content, tool),
			StopReason: string(msg.StopReason), GenerationInfo: usageInfo(u)}}}, nil
	}
}

// partial is the response of a call that failed after spending u, nil
// when it spent nothing.
func partial(u CallUsage) *llms.ContentResponse {
	if u == (CallUsage{}) {
		return nil
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{GenerationInfo: usageInfo(u)}}}
}

// toolInputSchema is an object schema as a tool's input_schema: the SDK
// types its properties and required fields, and carries every other
// keyword ($defs, additionalProperties...) as is.
func toolInputSchema(s map[string]any) anthropic.ToolInputSchemaParam {
	in := anthropic.ToolInputSchemaParam{Properties: s["properties"], ExtraFields: map[string]any{}}
	for k, v := range s {
		switch k {
		case "type", "properties":
		case "required":
			if req, ok := stringList(v); ok {
				in.Required = req
				continue
			}
			in.ExtraFields[k] = v
		default:
			in.ExtraFields[k] = v
		}
	}
	return in
}

func stringList(v any) ([]string, bool) {
	switch l := v.(type) {
	case []string:
		return l, true
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// anthropicAnswer is the answer in a message's blocks: the input of tool
// when one was forced; else the text the model wrote after its last search
// (the text blocks between searches narrate them: "I'll look up..."), or all
// of its text when nothing follows the last search.
func anthropicAnswer(blocks []anthropic.ContentBlockUnion, tool string) string {
	if tool != "" {
		for _, b := range blocks {
			if b.Type == "tool_use" && b.Name == tool {
				return string(b.Input)
			}
		}
	}
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

// anthropicMessages maps langchaingo's messages onto params: system text,
// and user and assistant turns.
func anthropicMessages(params *anthropic.MessageNewParams, msgs []llms.MessageContent) error {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			text, ok := textOnly(m.Parts)
			if !ok {
				return fmt.Errorf("%w: a system message carries text only", errPart)
			}
			params.System = append(params.System, anthropic.TextBlockParam{Text: text})
		case llms.ChatMessageTypeAI:
			text, ok := textOnly(m.Parts)
			if !ok {
				return fmt.Errorf("%w: an assistant message carries text only", errPart)
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(text)))
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			blocks := make([]anthropic.ContentBlockParamUnion, 0, len(m.Parts))
			for _, p := range m.Parts {
				b, err := anthropicBlock(p)
				if err != nil {
					return err
				}
				blocks = append(blocks, b)
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		default:
			return fmt.Errorf("%w %q", errRole, m.Role)
		}
	}
	return nil
}

// anthropicBlock maps one part: text; an image by URL, data URL or bytes
// (JPEG, PNG, GIF, WebP); a PDF or a text file as a document.
func anthropicBlock(p llms.ContentPart) (anthropic.ContentBlockParamUnion, error) {
	switch p := p.(type) {
	case llms.TextContent:
		return anthropic.NewTextBlock(p.Text), nil
	case llms.ImageURLContent:
		if mt, b64, ok := parseDataURL(p.URL); ok {
			return anthropicBinary(mt, b64, nil)
		}
		return anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: p.URL}), nil
	case llms.BinaryContent:
		return anthropicBinary(mediaType(p.MIMEType), "", p.Data)
	}
	return anthropic.ContentBlockParamUnion{}, fmt.Errorf("%w %T", errPart, p)
}

// anthropicBinary is a block of type mt holding data (or, when b64 is set,
// the data already base64-encoded).
func anthropicBinary(mt, b64 string, data []byte) (anthropic.ContentBlockParamUnion, error) {
	encoded := func() string {
		if b64 != "" {
			return b64
		}
		return base64.StdEncoding.EncodeToString(data)
	}
	switch mt {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return anthropic.NewImageBlockBase64(mt, encoded()), nil
	case "application/pdf":
		return anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: encoded()}), nil
	case "text/plain":
		if b64 != "" {
			raw, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return anthropic.ContentBlockParamUnion{}, fmt.Errorf("%w: a text document's data URL: %w", errPart, err)
			}
			data = raw
		}
		return anthropic.NewDocumentBlock(anthropic.PlainTextSourceParam{Data: string(data)}), nil
	}
	return anthropic.ContentBlockParamUnion{}, fmt.Errorf("%w: Anthropic takes no %s content", errPart, mt)
}
