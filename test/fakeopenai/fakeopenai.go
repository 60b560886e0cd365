package fakeopenai

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
)

// ChatMessage is one message of a request, its content flattened to text.
type ChatMessage struct {
	Role    string
	Content string
	// Parts are the content's parts as sent, when it is a list of parts
	// (text, image_url, input_audio, file; input_text, input_image and
	// input_file on the Responses API).
	Parts []map[string]any
}

// ChatRequest is a received chat completion request.
type ChatRequest struct {
	Model    string
	Messages []ChatMessage
	// ResponseFormat is the request's response_format, if any.
	ResponseFormat map[string]any
	// Schema is the JSON Schema the answer must satisfy: response_format's
	// json_schema, else the one in the prompt after "JSON Schema:".
	Schema map[string]any
	// Entity is the object in the prompt after "Known attributes of the
	// entity:", if any.
	Entity map[string]any
	// Body is the raw request body.
	Body []byte
	// Authorization is the request's Authorization header ("" when none),
	// to check which key paid for a call and that keyless calls send none.
	Authorization string
	// API is "chat" for POST /chat/completions, "responses" for the
	// Responses API (POST /responses) and "embeddings" for POST
	// /embeddings.
	API string
	// Tools are the Responses API request's tools ({"type":"web_search"}).
	Tools []map[string]any
	// TextFormat is the Responses API request's text.format, if any.
	TextFormat map[string]any
	// Input is an embeddings request's texts (API "embeddings").
	Input []string
}

// WebSearch reports whether the request carried the web_search tool.
func (r ChatRequest) WebSearch() bool {
	for _, t := range r.Tools {
		if t["type"] == "web_search" {
			return true
		}
	}
	return false
}

// Responder overrides the answer. A status other than 0 or 200 makes the
// server fail with it, content being the error message.
type Responder func(req ChatRequest) (content string, status int)

// Option configures a Server.
type Option func(*Server)

// WithLatency delays every answer by d (see SetLatency).
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency = d } }

// WithResponder installs r (see SetResponder).
func WithResponder(r Responder) Option { return func(s *Server) { s.responder = r } }

// WithAPIKey makes the server answer 401 unless the request carries
// "Authorization: Bearer key".
func WithAPIKey(key string) Option { return func(s *Server) { s.apiKeys = []string{key} } }

// WithAPIKeys is WithAPIKey for several valid keys.
func WithAPIKeys(keys ...string) Option { return func(s *Server) { s.apiKeys = keys } }

// WithModels sets the ids GET /v1/models lists (default "fake-model").
func WithModels(ids ...string) Option { return func(s *Server) { s.models = ids } }

// WithHistory keeps only the latest n requests for LastRequest and
// AllRequests; Requests still counts every one. By default every request
// is kept, which a load test cannot afford: the parsed bodies of every
// request grew its heap without bound, and collecting them slowed every
// server measured from the same process.
func WithHistory(n int) Option { return func(s *Server) { s.history = n } }

// WithSerialTokens makes each successful answer's prompt (input) token count
// its serial number among the answers (1, 2, ...), so that a test can tell
// which answered call a ledger entry bills; Answered lists them.
func WithSerialTokens() Option { return func(s *Server) { s.serials = true } }

// Answer is one successful answer of a server WithSerialTokens.
type Answer struct {
	Serial int
	// At is when the answer was flushed to the client.
	At time.Time
}

// Answered lists the successful answers flushed to their clients (with
// WithSerialTokens), in the order they were flushed.
func (s *Server) Answered() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Answer(nil), s.answered...)
}

// Server is a fake OpenAI-compatible API. Its methods are safe for
// concurrent use, also while requests are served.
type Server struct {
	srv *httptest.Server

	mu             sync.Mutex
	latency        time.Duration
	responder      Responder
	apiKeys        []string
	models         []string
	failN          int
	failStatus     int
	invalidN       int
	schemaInvalidN int
	requests       []ChatRequest // the latest history, or all
	history        int
	received       int
	inFlight       int
	serials        bool
	answered       []Answer
	nextSerial     int
}

// InFlight is how many requests are being answered right now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// New starts a server that tb closes at cleanup.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{models: []string{"fake-model"}}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/chat/completions", s.chat)
	mux.HandleFunc("/v1/responses", s.responses)
	mux.HandleFunc("/responses", s.responses)
	mux.HandleFunc("/v1/embeddings", s.embeddings)
	mux.HandleFunc("/embeddings", s.embeddings)
	mux.HandleFunc("/v1/models", s.listModels)
	mux.HandleFunc("/models", s.listModels)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to give a client (openai.WithBaseURL): it ends in
// /v1, because OpenAI clients append only "/chat/completions".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server before cleanup, to test connection failures.
func (s *Server) Close() { s.srv.Close() }

// SetLatency delays every answer by d. A request cancelled while it waits
// gets no answer.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetResponder installs r; nil restores the default answers.
func (s *Server) SetResponder(r Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = r
}

// FailNext makes the next n requests fail with HTTP status (500, 429...).
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failN, s.failStatus = n, status
}

// InvalidNext makes the next n answers text that is not JSON.
func (s *Server) InvalidNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalidN = n
}

// SchemaInvalidNext makes the next n answers JSON objects that do not
// satisfy the request's schema.
func (s *Server) SchemaInvalidNext(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.schemaInvalidN = n
}

// Requests counts the chat and Responses API requests received, failed ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received
}

// LastRequest returns the latest chat request.
func (s *Server) LastRequest() (ChatRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return ChatRequest{}, false
	}
	return s.requests[len(s.requests)-1], true
}

// AllRequests returns every chat request in arrival order (the latest n
// with WithHistory).
func (s *Server) AllRequests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// wireRequest is the part of OpenAI's request the server reads. Content is
// a string or a list of parts.
type wireRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	ResponseFormat map[string]any `json:"response_format"`
}

// decodePost reads a POST's JSON body into v; false when it answered an
// error instead.
func decodePost(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return nil, false
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "request is not JSON: "+err.Error())
		return nil, false
	}
	return body, true
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var wr wireRequest
	body, ok := decodePost(w, r, &wr)
	if !ok {
		return
	}
	req := ChatRequest{API: "chat", Model: wr.Model, ResponseFormat: wr.ResponseFormat, Body: body, Authorization: r.Header.Get("Authorization")}
	var prompt strings.Builder
	for _, m := range wr.Messages {
		c := flatten(m.Content)
		req.Messages = append(req.Messages, ChatMessage{Role: m.Role, Content: c, Parts: parts(m.Content)})
		prompt.WriteString(c)
		prompt.WriteByte('\n')
	}
	req.Schema, req.Entity = sandbox.ParsePrompt(prompt.String())
	if js, ok := wr.ResponseFormat["json_schema"].(map[string]any); ok {
		if sch, ok := js["schema"].(map[string]any); ok {
			req.Schema = sch
		}
	}
	if wr.Stream {
		writeError(w, http.StatusBadRequest, "fakeopenai does not stream")
		return
	}
	s.answer(w, r, req, prompt.String(), func(content string, in, out int) any {
		return map[string]any{
			"id":      fmt.Sprintf("chatcmpl-fake-%d", s.Requests()),
			"object":  "chat.completion",
			"created": 1700000000,
			"model":   req.Model,
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": content},
				"finish_reason": "stop",
			}},
			"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
		}
	})
}

// responsesRequest is the part of the Responses API's request the server
// reads. Input is a string or a list of messages.
type responsesRequest struct {
	Model        string           `json:"model"`
	Stream       bool             `json:"stream"`
	Instructions string           `json:"instructions"`
	Input        json.RawMessage  `json:"input"`
	Tools        []map[string]any `json:"tools"`
	Text         struct {
		Format map[string]any `json:"format"`
	} `json:"text"`
}

// responses serves OpenAI's Responses API (POST /responses). When the
// request carries the web_search tool, the answer's output starts with a
// web_search_call item, as OpenAI's does.
func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var rr responsesRequest
	body, ok := decodePost(w, r, &rr)
	if !ok {
		return
	}
	req := ChatRequest{API: "responses", Model: rr.Model, Tools: rr.Tools, TextFormat: rr.Text.Format, Body: body,
		Authorization: r.Header.Get("Authorization")}
	var prompt strings.Builder
	add := func(role, c string, ps []map[string]any) {
		req.Messages = append(req.Messages, ChatMessage{Role: role, Content: c, Parts: ps})
		prompt.WriteString(c)
		prompt.WriteByte('\n')
	}
	if rr.Instructions != "" {
		add("system", rr.Instructions, nil)
	}
	var input []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	var one string
	switch {
	case json.Unmarshal(rr.Input, &one) == nil:
		add("user", one, nil)
	case json.Unmarshal(rr.Input, &input) == nil:
		for _, m := range input {
			add(m.Role, flatten(m.Content), parts(m.Content))
		}
	default:
		writeError(w, http.StatusBadRequest, "input is neither a string nor a list of messages")
		return
	}
	req.Schema, req.Entity = sandbox.ParsePrompt(prompt.String())
	if rr.Text.Format["type"] == "json_schema" {
		if sch, ok := rr.Text.Format["schema"].(map[string]any); ok {
			req.Schema = sch
		}
	}
	if rr.Stream {
		writeError(w, http.StatusBadRequest, "fakeopenai does not stream")
		return
	}
	s.answer(w, r, req, prompt.String(), func(content string, in, out int) any {
		n := s.Requests()
		var output []any
		if req.WebSearch() {
			output = append(output, map[string]any{"type": "web_search_call", "id": fmt.Sprintf("ws_fake_%d", n), "status": "completed",
				"action": map[string]any{"type": "search", "query": "fakeopenai search"}})
		}
		output = append(output, map[string]any{"type": "message", "id": fmt.Sprintf("msg_fake_%d", n), "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": content, "annotations": []any{}}}})
		return map[string]any{
			"id": fmt.Sprintf("resp_fake_%d", n), "object": "response", "created_at": 1700000000, "status": "completed",
			"model": req.Model, "output": output, "tools": req.Tools,
			"usage": map[string]any{"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": out, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": in + out},
		}
	})
}

// answer records req, applies the knobs (keys, injected failures, latency,
// responder) and writes the answer body wrap makes of the content and its
// token counts.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req ChatRequest, prompt string, wrap func(content string, in, out int) any) {
	s.mu.Lock()
	s.inFlight++
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	s.received++
	if s.history > 0 && len(s.requests) >= s.history {
		s.requests = append(s.requests[:0], s.requests[len(s.requests)-s.history+1:]...)
	}
	s.requests = append(s.requests, req)
	latency, responder := s.latency, s.responder
	authorized := len(s.apiKeys) == 0
	for _, k := range s.apiKeys {
		authorized = authorized || r.Header.Get("Authorization") == "Bearer "+k
	}
	mode := ""
	switch {
	case !authorized:
		mode = "unauthorized"
	case s.failN > 0:
		s.failN--
		mode = "fail"
	case responder != nil:
		mode = "responder"
	case req.API == "embeddings":
	case s.invalidN > 0:
		s.invalidN--
		mode = "invalid"
	case s.schemaInvalidN > 0:
		s.schemaInvalidN--
		mode = "schema-invalid"
	}
	failStatus := s.failStatus
	s.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
	var content string
	switch mode {
	case "unauthorized":
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided")
		return
	case "fail":
		if failStatus == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, failStatus, fmt.Sprintf("injected failure %d", failStatus))
		return
	case "responder":
		c, status := responder(req)
		if status != 0 && status != http.StatusOK {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			writeError(w, status, c)
			return
		}
		content = c
	case "invalid":
		content = "Sure! Here is the data you asked for, but not as JSON."
	case "schema-invalid":
		content = marshal(sandbox.Invalid(orObject(req.Schema)))
	default:
		content = marshal(sandbox.Generate(orObject(req.Schema), req.Entity, req.Model))
	}
	in, out := tokens(prompt), tokens(content)
	w.Header().Set("Content-Type", "application/json")
	if !s.serial() {
		_ = json.NewEncoder(w).Encode(wrap(content, in, out))
		return
	}
	s.mu.Lock()
	s.nextSerial++
	n := s.nextSerial
	s.mu.Unlock()
	err := json.NewEncoder(w).Encode(wrap(content, n, out))
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	if err == nil && r.Context().Err() == nil {
		s.mu.Lock()
		s.answered = append(s.answered, Answer{Serial: n, At: time.Now()})
		s.mu.Unlock()
	}
}

func (s *Server) serial() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serials
}

// embeddings serves POST /embeddings: one deterministic vector per input
// (Vector), usage counted like the chat's.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var er struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	body, ok := decodePost(w, r, &er)
	if !ok {
		return
	}
	req := ChatRequest{API: "embeddings", Model: er.Model, Body: body, Authorization: r.Header.Get("Authorization")}
	var one string
	if json.Unmarshal(er.Input, &one) == nil {
		req.Input = []string{one}
	} else if json.Unmarshal(er.Input, &req.Input) != nil {
		writeError(w, http.StatusBadRequest, "input is neither a string nor a list of strings")
		return
	}
	s.answer(w, r, req, "", func(string, int, int) any {
		data := make([]any, len(req.Input))
		in := 0
		for i, t := range req.Input {
			// Listed last first: clients must order the vectors by index.
			data[len(req.Input)-1-i] = map[string]any{"object": "embedding", "index": i, "embedding": Vector(t, EmbeddingDims)}
			in += tokens(t)
		}
		return map[string]any{"object": "list", "model": req.Model, "data": data,
			"usage": map[string]any{"prompt_tokens": in, "total_tokens": in}}
	})
}

// EmbeddingDims is the length of the fake's vectors.
const EmbeddingDims = 8

// Vector is the fake's deterministic vector of n dimensions for text.
func Vector(text string, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		h := fnv.New32a()
		_, _ = fmt.Fprintf(h, "%d:%s", i, text)
		v[i] = float32(h.Sum32()%2000)/1000 - 1
	}
	return v
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	s.mu.Unlock()
	data := make([]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "fakeopenai"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func readBody(r *http.Request) ([]byte, error) {
	defer r.Body.Close()
	const limit = 16 << 20
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("request body over 16 MiB")
	}
	return b, nil
}

// parts is a content's parts, nil when it is a string.
func parts(raw json.RawMessage) []map[string]any {
	var ps []map[string]any
	if json.Unmarshal(raw, &ps) != nil {
		return nil
	}
	return ps
}

// flatten turns a message content (a string, or parts of which the text
// ones count) into text.
func flatten(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "input_text" {
				sb.WriteString(p.Text)
			}
		}
		return sb.String()
	}
	return ""
}

func writeError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": nil}})
}

func orObject(s map[string]any) map[string]any {
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

// tokens estimates like a tokenizer would on English: four bytes a token.
func tokens(s string) int { return max(1, (len(s)+3)/4) }

// DefaultAnswer is what the server answers req when nothing overrides it: a
// schema-valid object derived from the entity (a Responder can wrap it).
func DefaultAnswer(req ChatRequest) string {
	return marshal(sandbox.Generate(orObject(req.Schema), req.Entity, req.Model))
}
