package llm

import (
	"regexp"

	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/ports"
)

// A call's structured output and web search reach the provider clients
// through llms.CallOptions.Metadata: langchaingo's CallOptions has no field
// for either. The clients of this package read these keys; langchaingo's
// Ollama client ignores them (it gets JSON mode), and the sandbox reads its
// own (sandbox.MetadataSchema, sandbox.MetadataTask).
const (
	// MetadataResponseSchema holds a *ResponseSchema: answer to this schema
	// on the provider's structured-output channel.
	MetadataResponseSchema = "enrich:response_schema"
	// MetadataWebSearch (true) has the model use its provider's web search
	// tool, and count its searches in GenerationInfo[InfoWebSearchCalls].
	// The sandbox reads the same key.
	MetadataWebSearch = sandbox.MetadataWebSearch
)

// ResponseSchema is a call's structured output: OpenAI's response_format
// json_schema (text.format on the Responses API), Anthropic's forced tool.
type ResponseSchema struct {
	// Name is the schema's name on the wire ([a-zA-Z0-9_-], at most 64).
	Name   string
	Schema map[string]any
	// Strict asks for constrained decoding; set only where the model's
	// catalog entry declares it (strict_schema).
	Strict bool
}

// callOptions reads opts as a provider client does.
func callOptions(opts []llms.CallOption) llms.CallOptions {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// responseSchemaOf is o's structured output, nil for none.
func responseSchemaOf(o llms.CallOptions) *ResponseSchema {
	rs, _ := o.Metadata[MetadataResponseSchema].(*ResponseSchema)
	if rs == nil || rs.Schema == nil {
		return nil
	}
	return rs
}

// webSearchOf reports whether o asks for the web search tool.
func webSearchOf(o llms.CallOptions) bool {
	ws, _ := o.Metadata[MetadataWebSearch].(bool)
	return ws
}

// generateOptions are the call options of req to e: JSON answers always,
// with the schema channel where the call asks for it and the model has it,
// the search tool when asked, and the schema and task for the sandbox.
func generateOptions(e *entry, req ports.LLMRequest) []llms.CallOption {
	opts := make([]llms.CallOption, 1, 2)
	opts[0] = llms.WithJSONMode()
	var meta map[string]any
	set := func(k string, v any) {
		if meta == nil {
			meta = make(map[string]any, 3)
		}
		meta[k] = v
	}
	if name, ok := schemaChannel(e, req); ok {
		set(MetadataResponseSchema, &ResponseSchema{Name: name, Schema: req.Schema, Strict: req.Strict && e.info.StrictOutput})
	}
	if req.WebSearch {
		set(MetadataWebSearch, true)
	}
	if e.fixed != nil {
		set(sandbox.MetadataSchema, req.Schema)
		set(sandbox.MetadataTask, string(req.Task))
	}
	if meta != nil {
		opts = append(opts, llms.WithMetadata(meta))
	}
	return opts
}

// schemaNameRE is what OpenAI and Anthropic accept in a schema's or a
// tool's name.
var schemaNameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// schemaChannel says whether a call to e sends its schema on the
// provider's structured-output channel, and under which name: where the
// call asks for it (enable_response_schema), the catalog (or the
// organization) says the model has one, and the provider's protocol has
// one. Otherwise the answer is prompted JSON, validated as always.
func schemaChannel(e *entry, req ports.LLMRequest) (string, bool) {
	if !req.ResponseSchema || req.Schema == nil || !e.info.ResponseSchema || e.prov == nil || !schemaProtocol(e.prov.Type) {
		return "", false
	}
	name := schemaNameRE.ReplaceAllString(req.SchemaName, "_")
	if name == "" {
		name = "enrichment"
	}
	return name[:min(len(name), 64)], true
}

// schemaProtocol reports whether enrich's client of providers of type t
// sends a schema: OpenAI's protocol (json_schema) and Anthropic's (a
// forced tool). Ollama's gets JSON mode.
func schemaProtocol(t string) bool {
	return openAIProtocol(t) || t == TypeAnthropic
}

// openAIProtocol reports whether providers of type t speak OpenAI's
// protocol (openai-go's client).
func openAIProtocol(t string) bool {
	return t == TypeOpenAI || t == TypeGoogleAI || t == TypeMistral
}
