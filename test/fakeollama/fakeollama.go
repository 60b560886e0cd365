package fakeollama

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

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/test/fakefault"
)

// Message is one message of a chat request.
type Message struct {
	Role, Content string
	// Images are the message's images, base64 as sent.
	Images []string
}

// Request is a received request: a chat (API "chat") or an embedding
// ("embed").
type Request struct {
	API      string
	Model    string
	Messages []Message
	// Format is the chat's format ("json" in JSON mode).
	Format json.RawMessage
	// Input is an embed request's text.
	Input string
	// Authorization is the request's Authorization header: Ollama takes
	// none, so a client must send none.
	Authorization string
}

// Server is a fake Ollama server. Its methods are safe for concurrent use,
// also while requests are served.
type Server struct {
	srv *httptest.Server

	// Faults inject latency and failures (SetLatency, FailNext,
	// SetRetryAfter).
	fakefault.Faults

	mu       sync.Mutex
	dims     int
	requests []Request
}

// New starts a server that tb closes at cleanup.
func New(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{dims: 8}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/chat", s.chat)
	mux.HandleFunc("/api/embed", s.embed)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure (no /v1: Ollama's paths start /api).
func (s *Server) URL() string { return s.srv.URL }

// LastRequest returns the latest request.
func (s *Server) LastRequest() (Request, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return Request{}, false
	}
	return s.requests[len(s.requests)-1], true
}

// Requests counts the requests received, failed ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Vector is the vector the server answers for text: deterministic, so
// that tests can compare.
func (s *Server) Vector(text string) []float32 {
	s.mu.Lock()
	n := s.dims
	s.mu.Unlock()
	return Vector(text, n)
}

// Vector is a deterministic vector of n dimensions for text.
func Vector(text string, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		h := fnv.New32a()
		_, _ = fmt.Fprintf(h, "%d:%s", i, text)
		v[i] = float32(h.Sum32()%2000)/1000 - 1
	}
	return v
}

// admit records req and applies the knobs; false when it answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, req Request) bool {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	fault := s.Take()
	return fault.Wait(r) && !fault.Fail(w, writeError)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var wr struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		Format   json.RawMessage `json:"format"`
		Messages []Message       `json:"messages"`
	}
	if !decode(w, r, &wr) {
		return
	}
	req := Request{API: "chat", Model: wr.Model, Messages: wr.Messages, Format: wr.Format, Authorization: r.Header.Get("Authorization")}
	if !s.admit(w, r, req) {
		return
	}
	var prompt strings.Builder
	for _, m := range wr.Messages {
		prompt.WriteString(m.Content)
		prompt.WriteByte('\n')
	}
	schema, entity := sandbox.ParsePrompt(prompt.String())
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	content, _ := json.Marshal(sandbox.Generate(schema, entity, wr.Model))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"model": wr.Model, "created_at": "2026-11-23T12:00:00Z",
		"message": map[string]any{"role": "assistant", "content": string(content)}, "done": true, "done_reason": "stop",
		"prompt_eval_count": tokens(prompt.String()), "eval_count": tokens(string(content))})
}

func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var wr struct {
		Model string `json:"model"`
		Input string `json:"input"`
	}
	if !decode(w, r, &wr) {
		return
	}
	req := Request{API: "embed", Model: wr.Model, Input: wr.Input, Authorization: r.Header.Get("Authorization")}
	if !s.admit(w, r, req) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"model": wr.Model, "embeddings": [][]float32{s.Vector(wr.Input)}})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "request is not JSON")
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": msg})
}

// tokens estimates like a tokenizer would on English: four bytes a token.
func tokens(s string) int { return max(1, (len(s)+3)/4) }
