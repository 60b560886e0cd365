// Package llm calls language models: it reads provider declarations, keeps
// one client per provider model and credential, lists the models with
// prices, and maps provider failures onto the ports' LLM errors.
//
// Each provider type has one client behind langchaingo's llms.Model, on the
// provider's official SDK: openai-go for OpenAI and every OpenAI-compatible
// server (chat, structured output, content parts, Responses web search,
// embeddings), anthropic-sdk-go for Anthropic (messages, forced-tool
// structured output, documents and images, server web search), and
// langchaingo's own client for Ollama. All of them send through one
// statusDoer, so that failures are classified in one place (classify), and
// report usage under the same GenerationInfo keys (Usage).
//
// Answers are asked for in JSON mode (response_format json_object on
// OpenAI-compatible servers, format json on Ollama) with the schema in the
// prompt; the provider's structured-output channel (json_schema, or
// Anthropic's forced tool) is used only where the request asks for it
// (enable_response_schema) and the catalog says the model has it: strict
// schemas accept only a subset of JSON Schema (every property required, no
// formats, closed objects), which user schemas rarely are, and many
// OpenAI-compatible servers do not implement them. The application
// validates every answer and retries with the validation errors, so JSON
// mode is enough. The sandbox::* models (package sandbox) go through the
// same path without a network.
package llm
