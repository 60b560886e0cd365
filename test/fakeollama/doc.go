// Package fakeollama is an in-process server of Ollama's chat and embed
// APIs for tests of the real client path: chat answers valid against the
// schema in the prompt (by the sandbox generator), deterministic vectors,
// and knobs that inject latency and HTTP failures, with the requests kept
// to assert on.
package fakeollama
