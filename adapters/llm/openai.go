package llm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"
)

// openAIClient is one model of an OpenAI-compatible server on openai-go:
// chat completions (JSON mode, or json_schema structured output), the
// Responses API with its web_search tool, and embeddings. It is an
// llms.Model and an embeddings.EmbedderClient.
type openAIClient struct {
	chat       openai.ChatCompletionService
	responses  responses.ResponseService
	embeddings openai.EmbeddingService
	model      string
	// reasoning models refuse a temperature other than their default.
	reasoning bool
}

var (
	_ llms.Model                = (*openAIClient)(nil)
	_ embeddings.EmbedderClient = (*openAIClient)(nil)
)

// newOpenAIClient builds the client of model m at base with token ("" for a
// keyless server: no Authorization header at all). The services are built
// alone, not with openai.NewClient, which reads OPENAI_* variables from the
// process environment; nor does the SDK retry: moving to another key is
// rotation's job.
func newOpenAIClient(base, m, token string, reasoning bool, doer option.HTTPClient) *openAIClient {
	opts := []option.RequestOption{option.WithBaseURL(base), option.WithHTTPClient(doer), option.WithMaxRetries(0)}
	if token != "" {
		opts = append(opts, option.WithAPIKey(token))
	}
	return &openAIClient{chat: openai.NewChatCompletionService(opts...), responses: responses.NewResponseService(opts...),
		embeddings: openai.NewEmbeddingService(opts...), model: m, reasoning: reasoning}
}

// Call implements llms.Model.
func (c *openAIClient) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, c, prompt, opts...)
}

// GenerateContent implements llms.Model: a chat completion, or with
// MetadataWebSearch a Responses API call with the web_search tool.
func (c *openAIClient) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	o := callOptions(opts)
	if webSearchOf(o) {
		return c.search(ctx, msgs, o)
	}
	req := chatRequest{Model: c.model, MaxCompletionTokens: o.MaxTokens}
	var err error
	if req.Messages, err = chatMessages(msgs); err != nil {
		return nil, err
	}
	if !c.reasoning {
		// langchaingo's client always sent it, 0 unless asked otherwise:
		// enrichment wants the model's most likely answer.
		req.Temperature = &o.Temperature
	}
	switch rs := responseSchemaOf(o); {
	case rs != nil:
		req.ResponseFormat = shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: rs.Name, Schema: rs.Schema, Strict: param.NewOpt(rs.Strict)}}
	case o.JSONMode:
		req.ResponseFormat = shared.ResponseFormatJSONObjectParam{}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	// The answer is read into chatAnswer, only the fields enrich uses: the
	// SDK's ChatCompletion keeps every field's raw JSON beside its value,
	// and decoding it was the largest cost of a call on the client's side.
	var ans chatAnswer
	if _, err := c.chat.New(ctx, openai.ChatCompletionNewParams{}, option.WithRequestBody("application/json", body),
		option.WithResponseBodyInto(&ans)); err != nil {
		return nil, err
	}
	choices := make([]*llms.ContentChoice, len(ans.Choices))
	for i, ch := range ans.Choices {
		choices[i] = &llms.ContentChoice{Content: ch.Message.Content, StopReason: ch.FinishReason,
			GenerationInfo: usageInfo(CallUsage{InputTokens: ans.Usage.PromptTokens, OutputTokens: ans.Usage.CompletionTokens})}
	}
	return &llms.ContentResponse{Choices: choices}, nil
}

// chatAnswer is the part of a chat completion enrich reads.
type chatAnswer struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// errPart is a content part a provider's protocol cannot carry.
var errPart = errors.New("unsupported content part")

// chatRequest is a chat completion request as enrich sends it. The SDK's
// ChatCompletionNewParams encodes each nested value with a MarshalJSON of
// its own, whose output the encoder then re-reads, so a prompt was copied
// and scanned once for every level it sits under; this envelope is encoded
// with encoding/json in one pass and handed to the SDK as the request's
// body (option.WithRequestBody). Content parts and response formats are
// the SDK's own types.
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	Temperature         *float64      `json:"temperature,omitempty"`
	MaxCompletionTokens int           `json:"max_completion_tokens,omitempty"`
	ResponseFormat      any           `json:"response_format,omitempty"`
}

// chatMessage is a message of a chatRequest. Content is a string, or
// []openai.ChatCompletionContentPartUnionParam.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// chatMessages maps langchaingo's messages onto the chat protocol's: text,
// images (ImageURLContent, or BinaryContent of an image type), audio (wav
// and mp3) and any other file (file_data).
func chatMessages(msgs []llms.MessageContent) ([]chatMessage, error) {
	out := make([]chatMessage, 0, len(msgs))
	for _, m := range msgs {
		var role string
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			role = "system"
		case llms.ChatMessageTypeAI:
			role = "assistant"
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			role = "user"
		default:
			return nil, fmt.Errorf("%w %q", errRole, m.Role)
		}
		if text, ok := textOnly(m.Parts); ok {
			out = append(out, chatMessage{Role: role, Content: text})
			continue
		}
		if role != "user" {
			return nil, fmt.Errorf("%w: only a user message carries images and files", errPart)
		}
		parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(m.Parts))
		for _, p := range m.Parts {
			part, err := openAIPart(p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		}
		out = append(out, chatMessage{Role: role, Content: parts})
	}
	return out, nil
}

func openAIPart(p llms.ContentPart) (openai.ChatCompletionContentPartUnionParam, error) {
	switch p := p.(type) {
	case llms.TextContent:
		return openai.TextContentPart(p.Text), nil
	case llms.ImageURLContent:
		return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.URL, Detail: p.Detail}), nil
	case llms.BinaryContent:
		mt := mediaType(p.MIMEType)
		switch {
		case strings.HasPrefix(mt, "image/"):
			return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: dataURL(mt, p.Data)}), nil
		case audioFormat(mt) != "":
			return openai.InputAudioContentPart(openai.ChatCompletionContentPartInputAudioInputAudioParam{
				Data: base64.StdEncoding.EncodeToString(p.Data), Format: audioFormat(mt)}), nil
		}
		return openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{
			FileData: param.NewOpt(dataURL(mt, p.Data)), Filename: param.NewOpt(fileName(mt))}), nil
	}
	return openai.ChatCompletionContentPartUnionParam{}, fmt.Errorf("%w %T", errPart, p)
}

// audioFormat is the input_audio format of media type mt, "" for none.
func audioFormat(mt string) string {
	switch mt {
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	}
	return ""
}

// search is a Responses API call with the web_search tool. Where the call
// has a schema it goes in text.format; otherwise the answer is prompted
// JSON (the Responses API has no json_object with tools).
func (c *openAIClient) search(ctx context.Context, msgs []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
	input, err := responsesInput(msgs)
	if err != nil {
		return nil, err
	}
	params := responses.ResponseNewParams{
		Model: c.model,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Tools: []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}},
		// enrich keeps no conversation state at the provider.
		Store: param.NewOpt(false),
	}
	if o.MaxTokens > 0 {
		params.MaxOutputTokens = param.NewOpt(int64(o.MaxTokens))
	}
	if rs := responseSchemaOf(o); rs != nil {
		params.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: rs.Name, Schema: rs.Schema,
				Strict: param.NewOpt(rs.Strict)}}}
	}
	resp, err := c.responses.New(ctx, params)
	if err != nil {
		return nil, err
	}
	u := CallUsage{InputTokens: int(resp.Usage.InputTokens), OutputTokens: int(resp.Usage.OutputTokens)}
	for _, item := range resp.Output {
		if item.Type == "web_search_call" {
			u.WebSearchCalls++ // each call of the tool is billed
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: resp.OutputText(), StopReason: string(resp.Status),
		GenerationInfo: usageInfo(u)}}}, nil
}

// responsesInput maps langchaingo's messages onto the Responses API's input.
func responsesInput(msgs []llms.MessageContent) (responses.ResponseInputParam, error) {
	input := make(responses.ResponseInputParam, 0, len(msgs))
	for _, m := range msgs {
		var role responses.EasyInputMessageRole
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			role = responses.EasyInputMessageRoleSystem
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			role = responses.EasyInputMessageRoleUser
		case llms.ChatMessageTypeAI:
			role = responses.EasyInputMessageRoleAssistant
		default:
			return nil, fmt.Errorf("%w %q", errRole, m.Role)
		}
		if text, ok := textOnly(m.Parts); ok {
			input = append(input, responses.ResponseInputItemParamOfMessage(text, role))
			continue
		}
		if role != responses.EasyInputMessageRoleUser {
			return nil, fmt.Errorf("%w: only a user message carries images and files", errPart)
		}
		list := make(responses.ResponseInputMessageContentListParam, 0, len(m.Parts))
		for _, p := range m.Parts {
			part, err := responsesPart(p)
			if err != nil {
				return nil, err
			}
			list = append(list, part)
		}
		input = append(input, responses.ResponseInputItemParamOfMessage(list, role))
	}
	return input, nil
}

func responsesPart(p llms.ContentPart) (responses.ResponseInputContentUnionParam, error) {
	switch p := p.(type) {
	case llms.TextContent:
		return responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: p.Text}}, nil
	case llms.ImageURLContent:
		detail := responses.ResponseInputImageDetail(p.Detail)
		if detail == "" {
			detail = responses.ResponseInputImageDetailAuto
		}
		return responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
			ImageURL: param.NewOpt(p.URL), Detail: detail}}, nil
	case llms.BinaryContent:
		mt := mediaType(p.MIMEType)
		if strings.HasPrefix(mt, "image/") {
			return responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: param.NewOpt(dataURL(mt, p.Data)), Detail: responses.ResponseInputImageDetailAuto}}, nil
		}
		return responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{
			FileData: param.NewOpt(dataURL(mt, p.Data)), Filename: param.NewOpt(fileName(mt))}}, nil
	}
	return responses.ResponseInputContentUnionParam{}, fmt.Errorf("%w %T", errPart, p)
}

// CreateEmbedding implements embeddings.EmbedderClient.
func (c *openAIClient) CreateEmbedding(ctx context.Context, texts []string) ([][]float32, error) {
	v, _, err := c.embed(ctx, texts)
	return v, err
}

// embed returns the vectors of texts, in their order, and the input tokens
// the call spent.
func (c *openAIClient) embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	resp, err := c.embeddings.New(ctx, openai.EmbeddingNewParams{Model: c.model,
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Data) != len(texts) {
		return nil, 0, fmt.Errorf("%w: %d vectors for %d texts", errEmbeddings, len(resp.Data), len(texts))
	}
	data := resp.Data
	sort.SliceStable(data, func(i, j int) bool { return data[i].Index < data[j].Index })
	out := make([][]float32, len(data))
	for i, d := range data {
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		out[i] = v
	}
	return out, int(resp.Usage.PromptTokens), nil
}

// errEmbeddings is an embeddings answer that does not match its request.
var errEmbeddings = errors.New("malformed embeddings answer")
