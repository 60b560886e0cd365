package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/entityenrich/enrich/ports"
)

// The OpenAI protocol's structured output (response_format json_schema)
// carries the schema of each call, but langchaingo's openai client fixes
// its response format when the client is built, and the registry keeps one
// client per credential. So a call that asks for it (the request's
// enable_response_schema, and enable_strict_structured_output for strict)
// puts the response format in its context, and the registry's HTTP clients
// write it into the chat completion's body in place of langchaingo's
// json_object. The answer is validated against the schema as always.

// responseFormatKey is the context key of a call's response_format.
type responseFormatKey struct{}

// schemaNameRE is what OpenAI accepts as a json_schema name.
var schemaNameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// responseFormat is the response_format of a call to e, or nil when the
// call did not ask for the schema channel, or e's model has none (then the
// answer is prompted JSON, json_object). Strict is sent only where the
// model supports it.
func responseFormat(e *entry, req ports.LLMRequest) json.RawMessage {
	name, ok := schemaChannel(e, req)
	if !ok {
		return nil
	}
	rf, err := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{
		"name": name, "strict": req.Strict && e.info.StrictOutput, "schema": req.Schema}})
	if err != nil {
		return nil // a schema that does not encode was refused long before
	}
	return rf
}

// withResponseFormat returns a copy of hc whose requests write a call's
// response format (see responseFormat) into its chat completion.
func withResponseFormat(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = formatTransport{base: base}
	return &c
}

type formatTransport struct{ base http.RoundTripper }

func (t formatTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rf, ok := req.Context().Value(responseFormatKey{}).(json.RawMessage)
	if !ok || req.Body == nil || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	if body, err = setResponseFormat(body, rf); err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(out)
}

// setResponseFormat returns the chat request body with response_format set
// to rf, without decoding the body where it can: langchaingo writes
// "response_format":{"type":"json_object"} (JSON mode), which is replaced,
// and a body without the key gets rf before its closing brace. A key in
// quotes followed by a colon cannot be inside a string, whose quotes are
// escaped. Any other body is decoded and encoded again.
func setResponseFormat(body []byte, rf json.RawMessage) ([]byte, error) {
	if json.Valid(rf) {
		key := []byte(`"response_format":`)
		if at := bytes.Index(body, jsonModeFormat); at >= 0 && bytes.Count(body, key) == 1 {
			out := make([]byte, 0, len(body)+len(rf))
			out = append(append(append(out, body[:at+len(key)]...), rf...), body[at+len(jsonModeFormat):]...)
			return out, nil
		}
		const space = " \t\r\n"
		trimmed := bytes.TrimRight(body, space)
		inner := bytes.TrimRight(bytes.TrimSuffix(trimmed, []byte("}")), space)
		if len(inner) > 1 && inner[0] == '{' && inner[len(inner)-1] != '{' && len(inner) < len(trimmed) && !bytes.Contains(body, key) {
			out := make([]byte, 0, len(inner)+len(rf)+len(key)+2)
			out = append(append(append(append(out, inner...), ','), key...), rf...)
			return append(out, '}'), nil
		}
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	doc["response_format"] = rf
	return json.Marshal(doc)
}

// jsonModeFormat is the response format langchaingo's JSON mode writes.
var jsonModeFormat = []byte(`"response_format":{"type":"json_object"}`)

// withFormat carries a call's response format (nil: none) in ctx.
func withFormat(ctx context.Context, rf json.RawMessage) context.Context {
	if rf == nil {
		return ctx
	}
	return context.WithValue(ctx, responseFormatKey{}, rf)
}

// openAIProtocol reports whether providers of type t speak the OpenAI chat
// completions protocol (through langchaingo's openai client).
func openAIProtocol(t string) bool {
	return t == TypeOpenAI || t == TypeGoogleAI || t == TypeMistral
}
