// Package fakeopenai is an in-process OpenAI-compatible server for tests of
// the real client path: chat completions answered with JSON valid against
// the schema in the request (by the sandbox generator), plus knobs that
// inject latency, HTTP failures and bad answers, and counters to assert on.
package fakeopenai
