package fakeanthropic

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/test/fakefault"
)

// Message is one message of a request.
type Message struct {
	Role string
	// Text is the message's text blocks, joined.
	Text string
	// Blocks are the message's content blocks as sent (a string content
	// is one text block).
	Blocks []map[string]any
}

// Request is a received Messages API request.
type Request struct {
	Model     string
	MaxTokens int
	// System is the system prompt's text.
	System   string
	Messages []Message
	// Tools and ToolChoice are the request's, as sent.
	Tools      []map[string]any
	ToolChoice map[string]any
	// Schema is the schema the answer must satisfy: the forced tool's
	// input_schema, else the one in the prompt after "JSON Schema:".
	Schema map[string]any
	// Entity is the object in the prompt after "Known attributes of the
	// entity:", if any.
	Entity map[string]any
	// Body is the raw request body.
	Body []byte
	// APIKey is the x-api-key header, Authorization the Authorization
	// header ("" when absent).
	APIKey, Authorization string
}

// ForcedTool is the name of the tool tool_choice forces, "" for none.
func (r Request) ForcedTool() string {
	if r.ToolChoice["type"] != "tool" {
		return ""
	}
	name, _ := r.ToolChoice["name"].(string)
	return name
}

// WebSearch reports whether the request carried the web_search server tool.
func (r Request) WebSearch() bool {
	for _, t := range r.Tools {
		if typ, _ := t["type"].(string); strings.HasPrefix(typ, "web_search") {
			return true
		}
	}
	return false
}

// Responder overrides the answer's text (or the forced tool's input, which
// must then be a JSON object). A status other than 0 or 200 makes the
// server fail with it, text being the error message.
type Responder func(req Request) (text string, status int)

// Option configures a Server.
type Option func(*Server)

// WithAPIKeys makes the server answer 401 unless x-api-key is one of keys.
func WithAPIKeys(keys ...string) Option { return func(s *Server) { s.apiKeys = keys } }

// WithLatency delays every answer by d.
func WithLatency(d time.Duration) Option { return func(s *Server) { s.SetLatency(d) } }

// Server is a fake Anthropic Messages API. Its methods are safe for
// concurrent use, also while requests are served.
type Server struct {
	srv *httptest.Server
	// Faults inject latency and failures (SetLatency, FailNext,
	// SetRetryAfter).
	fakefault.Faults

	mu        sync.Mutex
	apiKeys   []string
	responder Responder
	pauseN    int
	usageIn   int
	usageOut  int
	requests  []Request
}

// New starts a server that tb closes at cleanup.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.messages)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure (ENRICH_PROVIDER_<NAME>_BASE_URL): it
// ends in /v1, as Anthropic's documentation writes it.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server before cleanup, to test connection failures.
func (s *Server) Close() { s.srv.Close() }

// SetResponder installs r; nil restores the default answers.
func (s *Server) SetResponder(r Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = r
}

// SetUsage fixes the tokens every answer reports; zero estimates them from
// the request's and the answer's lengths.
func (s *Server) SetUsage(in, out int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usageIn, s.usageOut = in, out
}

// PauseNext makes the next n web search requests end their turn with
// stop_reason pause_turn, as a long search turn does.
func (s *Server) PauseNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pauseN = n
}

// Requests counts the requests received, failed ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// LastRequest returns the latest request.
func (s *Server) LastRequest() (Request, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}, false
	}
	return s.requests[len(s.requests)-1], true
}

// AllRequests returns every request in arrival order.
func (s *Server) AllRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// wireRequest is the part of the Messages API's request the server reads.
type wireRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools      []map[string]any `json:"tools"`
	ToolChoice map[string]any   `json:"tool_choice"`
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		writeError(w, http.StatusBadRequest, "anthropic-version header is required")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "request is not JSON: "+err.Error())
		return
	}
	if wr.Stream {
		writeError(w, http.StatusBadRequest, "fakeanthropic does not stream")
		return
	}
	req := parse(wr, body, r.Header)
	s.answer(w, r, req)
}

// parse reads what tests and the default answer need of a request.
func parse(wr wireRequest, body []byte, h http.Header) Request {
	req := Request{Model: wr.Model, MaxTokens: wr.MaxTokens, Tools: wr.Tools, ToolChoice: wr.ToolChoice, Body: body,
		APIKey: h.Get("x-api-key"), Authorization: h.Get("Authorization")}
	var prompt strings.Builder
	sys := Message{Role: "system", Blocks: blocks(wr.System)}
	req.System = text(sys.Blocks)
	prompt.WriteString(req.System)
	for _, m := range wr.Messages {
		msg := Message{Role: m.Role, Blocks: blocks(m.Content)}
		msg.Text = text(msg.Blocks)
		req.Messages = append(req.Messages, msg)
		prompt.WriteString("\n")
		prompt.WriteString(msg.Text)
	}
	req.Schema, req.Entity = sandbox.ParsePrompt(prompt.String())
	if name := req.ForcedTool(); name != "" {
		for _, t := range req.Tools {
			if t["name"] == name {
				req.Schema, _ = t["input_schema"].(map[string]any)
			}
		}
	}
	return req
}

// blocks reads a content (a string or a list of blocks) as blocks.
func blocks(raw json.RawMessage) []map[string]any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []map[string]any{{"type": "text", "text": s}}
	}
	var out []map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

func text(bs []map[string]any) string {
	var sb strings.Builder
	for _, b := range bs {
		if t, ok := b["text"].(string); ok && b["type"] == "text" {
			sb.WriteString(t)
		}
	}
	return sb.String()
}

// answer records req, applies the knobs and writes the message.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	authorized := len(s.apiKeys) == 0
	for _, k := range s.apiKeys {
		authorized = authorized || req.APIKey == k
	}
	responder := s.responder
	usage := [2]int{s.usageIn, s.usageOut}
	pause := req.WebSearch() && s.pauseN > 0
	if pause {
		s.pauseN--
	}
	s.mu.Unlock()

	fault := s.Take()
	if !fault.Wait(r) {
		return
	}
	switch {
	case req.Authorization != "":
		writeError(w, http.StatusUnauthorized, "API keys go in x-api-key, not Authorization")
		return
	case !authorized:
		writeError(w, http.StatusUnauthorized, "invalid x-api-key")
		return
	case fault.Fail(w, writeError):
		return
	}
	content := DefaultAnswer(req)
	if responder != nil {
		c, status := responder(req)
		if status != 0 && status != http.StatusOK {
			writeError(w, status, c)
			return
		}
		content = c
	}
	writeMessage(w, req, content, pause, usage)
}

// writeMessage answers content as the request asks: the forced tool's
// input, a searched answer, or text.
func writeMessage(w http.ResponseWriter, req Request, content string, pause bool, usage [2]int) {
	in, out, searches := usage[0], usage[1], 0
	if in == 0 {
		in = tokens(req.System)
		for _, m := range req.Messages {
			in += tokens(m.Text)
		}
	}
	if out == 0 {
		out = tokens(content)
	}
	var blocks []any
	stop := "end_turn"
	switch tool := req.ForcedTool(); {
	case tool != "" && json.Valid([]byte(content)):
		stop = "tool_use"
		blocks = []any{map[string]any{"type": "tool_use", "id": "toolu_fake", "name": tool, "input": json.RawMessage(content)}}
	case pause:
		stop, searches = "pause_turn", 1
		blocks = []any{
			map[string]any{"type": "text", "text": "Searching."},
			map[string]any{"type": "server_tool_use", "id": "srvtoolu_0", "name": "web_search", "input": map[string]any{"query": "fake"}},
		}
	case req.WebSearch():
		searches = 1
		blocks = []any{
			map[string]any{"type": "text", "text": "I'll search for it."},
			map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": map[string]any{"query": "fake"}},
			map[string]any{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []any{map[string]any{
				"type": "web_search_result", "url": "https://fake.example", "title": "Fake", "encrypted_content": "e1", "page_age": "1 day"}}},
			map[string]any{"type": "text", "text": content, "citations": []any{map[string]any{"type": "web_search_result_location",
				"url": "https://fake.example", "title": "Fake", "encrypted_index": "i1", "cited_text": "fake"}}},
		}
	default:
		blocks = []any{map[string]any{"type": "text", "text": content}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
		"content": blocks, "stop_reason": stop,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out, "server_tool_use": map[string]any{"web_search_requests": searches}}})
}

// DefaultAnswer is what the server answers req when nothing overrides it: a
// schema-valid object derived from the entity, as JSON.
func DefaultAnswer(req Request) string {
	schema := req.Schema
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	b, err := json.Marshal(sandbox.Generate(schema, req.Entity, req.Model))
	if err != nil {
		return "{}"
	}
	return string(b)
}

// writeError answers Anthropic's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// tokens estimates like a tokenizer would on English: four bytes a token.
func tokens(s string) int { return max(1, (len(s)+3)/4) }
