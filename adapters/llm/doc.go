// Package llm calls language models through langchaingo: it reads provider
// declarations, keeps one llms.Model per provider and model, lists them with
// prices, and maps provider failures onto the ports' LLM errors.
//
// Answers are asked for in JSON mode (response_format json_object on
// OpenAI-compatible servers, format json on Ollama) with the schema in the
// prompt, rather than with a forced strict function tool: strict tools accept
// only a subset of JSON Schema (every property required, no formats, closed
// objects), which user schemas rarely are, and many OpenAI-compatible servers
// do not implement them. The application validates every answer and retries
// with the validation errors, so JSON mode is enough. The sandbox::* models
// (package sandbox) go through the same path without a network.
package llm
