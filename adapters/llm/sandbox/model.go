package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Keys of llms.CallOptions.Metadata the sandbox reads. The schema travels
// beside the prompt because the prompt's copy is text meant for a model; the
// entity is optional, and read from the prompt when absent.
const (
	MetadataSchema = "enrich:schema"
	MetadataEntity = "enrich:entity"
	// MetadataTask names the call's task (ports.LLMTask); a task in the
	// tasks table is answered by its own function, any other like an
	// enrichment.
	MetadataTask = "enrich:task"
	// MetadataWebSearch is true when the call asks for web search
	// (enable_web_search): a model that searches (Spec.WebSearch) answers
	// as if grounded (search.go); the others refuse.
	MetadataWebSearch = "enrich:web_search"
)

// Markers of the application's prompt (domain/enrichment.Prompt) that
// precede the JSON Schema and the entity's known attributes.
const (
	SchemaMarker = "JSON Schema:"
	EntityMarker = "Known attributes of the entity:"
)

// SlowLatency is what sandbox::slow adds to every answer.
const SlowLatency = 2 * time.Second

// Spec names a sandbox model and says what it is for. WebSearch marks a
// model that declares web search (supports_web_search) and answers
// web-search calls itself, offline.
type Spec struct {
	Name, Purpose string
	WebSearch     bool
}

// Specs lists the sandbox models offered.
func Specs() []Spec {
	return []Spec{
		{Name: "echo", Purpose: "echoes known attributes, fills the rest"},
		{Name: "alt", Purpose: "like echo with another seed, so the two disagree on some fields"},
		{Name: "flaky", Purpose: "first attempt of each conversation is not JSON, retries succeed"},
		{Name: "broken", Purpose: "always answers a parseable object that fails the schema"},
		{Name: "slow", Purpose: "like echo after 2 s"},
		{Name: "contrarian", Purpose: "echo's answer with planned disagreements (half the strings, the numbers, arrays and booleans), to show fusion"},
		{Name: SearchModel, Purpose: "like echo, and with web search on it answers as if grounded: one web search per call, cited sources on .example",
			WebSearch: true},
	}
}

// Model is a deterministic, network-free llms.Model. Its behaviour comes
// from its name (see Specs); any other name behaves like echo with that
// name as the seed.
type Model struct {
	name    string
	latency time.Duration
	// pdfText reads the PDFs it is given (nil: PDFText).
	pdfText PDFTextFunc
}

// Option configures a Model.
type Option func(*Model)

// WithPDFText makes the model read PDFs' text layers with f (the wiring
// gives the service's own PDF reader).
func WithPDFText(f PDFTextFunc) Option { return func(m *Model) { m.pdfText = f } }

var _ llms.Model = (*Model)(nil)

// New returns the sandbox model called name, which waits latency (plus
// SlowLatency for "slow") before each answer.
func New(name string, latency time.Duration, opts ...Option) *Model {
	if name == "slow" {
		latency += SlowLatency
	}
	m := &Model{name: name, latency: latency}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Call implements the deprecated single-prompt form of llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent answers the conversation with one JSON object. The
// output depends only on the model's name, the schema and the entity, so
// the same call gives byte-identical text every time.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	var prompt strings.Builder
	retry := false
	for _, mc := range messages {
		if mc.Role == llms.ChatMessageTypeAI {
			retry = true
		}
		for _, p := range mc.Parts {
			if t, ok := p.(llms.TextContent); ok {
				prompt.WriteString(t.Text)
				prompt.WriteByte('\n')
			}
		}
	}
	schema, entity := fromMetadata(opts.Metadata)
	if schema == nil || entity == nil {
		ps, pe := ParsePrompt(prompt.String())
		if schema == nil {
			schema = ps
		}
		if entity == nil {
			entity = pe
		}
	}
	if m.latency > 0 {
		t := time.NewTimer(m.latency)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	search, _ := opts.Metadata[MetadataWebSearch].(bool)
	if search && m.name != SearchModel {
		return nil, fmt.Errorf("sandbox::%s: %w", m.name, ErrCannotSearch)
	}
	var text string
	// The attachments: read deterministically, and the answer grounded
	// on their "key: value" facts.
	docs := documents(messages, prompt.String(), m.pdfText)
	task, isTask := tasks[taskName(opts.Metadata)]
	switch {
	case isTask:
		text = marshal(task(TaskInput{Prompt: prompt.String(), Schema: schema, Seed: m.name, Retry: retry, Docs: docs}))
	case m.name == "flaky" && !retry:
		text = `{"oops":`
	case m.name == "broken" || failRequested(entity):
		text = marshal(Invalid(orEmptyObject(schema)))
	case m.name == "contrarian":
		text = marshal(ground(orEmptyObject(schema), Contrarian(orEmptyObject(schema), entity), docs))
	default:
		text = marshal(ground(orEmptyObject(schema), Generate(orEmptyObject(schema), entity, m.name), docs))
	}
	in, out := estimate(prompt.String()), estimate(text)
	// The keys langchaingo's openai client uses, so that one usage
	// normaliser reads both.
	info := map[string]any{"PromptTokens": in, "CompletionTokens": out, "TotalTokens": in + out}
	if search {
		grounded(info, entity, prompt.String())
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        text,
		StopReason:     "stop",
		GenerationInfo: info,
	}}}, nil
}

func orEmptyObject(s map[string]any) map[string]any {
	if s == nil {
		return map[string]any{"type": "object"}
	}
	return s
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// estimate counts tokens the way a rule of thumb does: four bytes each.
func estimate(s string) int {
	return max(1, (len(s)+3)/4)
}

func taskName(md map[string]any) string {
	s, _ := md[MetadataTask].(string)
	return s
}

func fromMetadata(md map[string]any) (schema, entity map[string]any) {
	return asObject(md[MetadataSchema]), asObject(md[MetadataEntity])
}

func asObject(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case json.RawMessage:
		return decodeObject([]byte(x))
	case []byte:
		return decodeObject(x)
	case string:
		return decodeObject([]byte(x))
	}
	return nil
}

func decodeObject(b []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// ParsePrompt recovers the JSON Schema and the entity from the text of the
// application's prompt: the JSON object after SchemaMarker, and the one
// after EntityMarker that follows it. Either is nil when absent.
func ParsePrompt(text string) (schema, entity map[string]any) {
	rest := text
	if i := strings.Index(text, SchemaMarker); i >= 0 {
		dec := json.NewDecoder(strings.NewReader(text[i+len(SchemaMarker):]))
		if dec.Decode(&schema) == nil {
			rest = text[i+len(SchemaMarker)+int(dec.InputOffset()):]
		} else {
			schema = nil
		}
	}
	if i := strings.Index(rest, EntityMarker); i >= 0 {
		if json.NewDecoder(strings.NewReader(rest[i+len(EntityMarker):])).Decode(&entity) != nil {
			entity = nil
		}
	}
	return schema, entity
}
