// Package fakeanthropic is an in-process server of Anthropic's Messages API
// for tests of the real client path: answers valid against the schema of
// the request (a forced tool's input schema, else the one in the prompt, by
// the sandbox generator), the web_search server tool with its blocks and
// usage, and knobs that inject latency, HTTP failures and paused turns,
// with the requests kept to assert on.
package fakeanthropic
