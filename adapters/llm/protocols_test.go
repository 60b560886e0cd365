package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// protocolFake is a minimal in-process server of one provider's wire
// protocol (Anthropic's Messages API or Ollama's chat API): it answers a
// fixed JSON object, fails on demand, and records the key each request
// carried.
type protocolFake struct {
	mu       sync.Mutex
	status   int           // answer with this failure status when set
	retry    string        // Retry-After of a 429
	latency  time.Duration // before answering
	goodKeys map[string]bool
	keys     []string
	srv      *httptest.Server
}

const answer = `{"name":"Acme Corp"}`

func newAnthropicFake(t *testing.T, goodKeys ...string) *protocolFake {
	f := &protocolFake{goodKeys: map[string]bool{}}
	for _, k := range goodKeys {
		f.goodKeys[k] = true
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, "not the messages API", http.StatusNotFound)
			return
		}
		key := r.Header.Get("x-api-key")
		status, latency := f.record(key)
		if !sleep(r, latency) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case !f.goodKeys[key]:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
		case status != 0:
			if status == http.StatusTooManyRequests {
				w.Header().Set("retry-after", f.retry)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
				"content": []any{map[string]any{"type": "text", "text": answer}}, "stop_reason": "end_turn",
				"usage": map[string]any{"input_tokens": 12, "output_tokens": 5}})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func newOllamaFake(t *testing.T) *protocolFake {
	f := &protocolFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.Error(w, "not the chat API", http.StatusNotFound)
			return
		}
		status, latency := f.record(r.Header.Get("Authorization"))
		if !sleep(r, latency) {
			return
		}
		if status != 0 {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", f.retry)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":"busy"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"model": "llama", "created_at": "2026-11-23T12:00:00Z",
			"message": map[string]any{"role": "assistant", "content": answer}, "done": true, "prompt_eval_count": 12, "eval_count": 5})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *protocolFake) record(key string) (int, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	return f.status, f.latency
}

func (f *protocolFake) set(status int, retry string, latency time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.retry, f.latency = status, retry, latency
}

func (f *protocolFake) lastKey() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys[len(f.keys)-1]
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// TestAnthropicProtocol: the anthropic client pays with the credential's
// key (x-api-key), and its failures are classified at the adapter.
func TestAnthropicProtocol(t *testing.T) {
	is := is.New(t)
	fake := newAnthropicFake(t, "sk-ant-good-0001")
	r, err := llm.NewRegistry(llm.Config{Timeout: 200 * time.Millisecond, Providers: []llm.ProviderConfig{
		{Name: "claude", Type: "anthropic", BaseURL: fake.srv.URL + "/v1", Models: []string{"claude-x"}}}})
	is.NoErr(err)
	req := request(t, "claude::claude-x", companySchema, acme)
	req.Credential = cred("k1", 1, "sk-ant-good-0001", nil)
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(resp.Text, answer)
	is.Equal(resp.InputTokens, 12)
	is.Equal(fake.lastKey(), "sk-ant-good-0001")

	t.Run("refused key", func(t *testing.T) {
		is := is.New(t)
		bad := req
		bad.Credential = cred("k2", 1, "sk-ant-bad-0002", nil)
		_, err := r.Generate(context.Background(), bad)
		is.True(errors.Is(err, ports.ErrLLMAuth))
		err = r.TestKey(context.Background(), "claude", *bad.Credential)
		is.True(errors.Is(err, ports.ErrLLMAuth))
		is.NoErr(r.TestKey(context.Background(), "claude", *req.Credential))
	})
	t.Run("rate limited with retry-after", func(t *testing.T) {
		is := is.New(t)
		fake.set(http.StatusTooManyRequests, "7", 0)
		defer fake.set(0, "", 0)
		_, err := r.Generate(context.Background(), req)
		var rl *ports.RateLimitError
		is.True(errors.As(err, &rl))
		is.Equal(rl.RetryAfter, 7*time.Second)
	})
	t.Run("timeout", func(t *testing.T) {
		is := is.New(t)
		fake.set(0, "", time.Second)
		defer fake.set(0, "", 0)
		_, err := r.Generate(context.Background(), req)
		is.True(errors.Is(err, ports.ErrLLMTimeout))
	})
	t.Run("no key", func(t *testing.T) {
		is := is.New(t)
		_, err := r.Generate(context.Background(), request(t, "claude::claude-x", companySchema, acme))
		is.True(errors.Is(err, rotation.ErrNoUsableKey)) // no key of its own, none given
		info, _ := r.Provider("claude")
		is.True(!info.Keyless)
	})
}

// TestOllamaProtocol: ollama needs no key and sends none; its failures are
// classified at the adapter.
func TestOllamaProtocol(t *testing.T) {
	is := is.New(t)
	fake := newOllamaFake(t)
	r, err := llm.NewRegistry(llm.Config{Timeout: 200 * time.Millisecond, Providers: []llm.ProviderConfig{
		{Name: "ol", Type: "ollama", BaseURL: fake.srv.URL, Models: []string{"llama"}}}})
	is.NoErr(err)
	info, _ := r.Provider("ol")
	is.True(info.Keyless)
	req := request(t, "ol::llama", companySchema, acme)
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(resp.Text, answer)
	is.Equal(fake.lastKey(), "")

	t.Run("rate limited with retry-after", func(t *testing.T) {
		is := is.New(t)
		fake.set(http.StatusTooManyRequests, "3", 0)
		defer fake.set(0, "", 0)
		_, err := r.Generate(context.Background(), req)
		var rl *ports.RateLimitError
		is.True(errors.As(err, &rl))
		is.Equal(rl.RetryAfter, 3*time.Second)
	})
	t.Run("timeout", func(t *testing.T) {
		is := is.New(t)
		fake.set(0, "", time.Second)
		defer fake.set(0, "", 0)
		_, err := r.Generate(context.Background(), req)
		is.True(errors.Is(err, ports.ErrLLMTimeout))
	})
	t.Run("refused by a proxy in front", func(t *testing.T) {
		is := is.New(t)
		fake.set(http.StatusUnauthorized, "", 0)
		defer fake.set(0, "", 0)
		_, err := r.Generate(context.Background(), req)
		is.True(errors.Is(err, ports.ErrLLMAuth))
	})
}
