package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// searchRegistry serves openai::gpt-4o (web search in the catalog) and
// openai::gpt-4.1-nano (none) from the fake, with no key of its own, plus
// compat::gpt-4o: the same model through a googleai-type provider, for
// which enrich calls no search tool.
func searchRegistry(t *testing.T, fake *fakeopenai.Server, timeout time.Duration) *llm.Registry {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{Timeout: timeout, Providers: []llm.ProviderConfig{
		{Name: "openai", Type: "openai", BaseURL: fake.URL(), Models: []string{"gpt-4o", "gpt-4.1-nano"}},
		{Name: "compat", Type: "googleai", BaseURL: fake.URL(), Models: []string{"gpt-4o"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOpenAIWebSearch: a call with WebSearch goes to the Responses API with
// the web_search tool, paid by the credential's key; the answer's text and
// usage come back as on the chat path.
func TestOpenAIWebSearch(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys("sk-search-good-0001"))
	r := searchRegistry(t, fake, 2*time.Second)
	tests := []struct {
		name           string
		responseSchema bool
		strict         bool
		format         string // text.format's type, "" when none
	}{
		{"prompted JSON", false, false, ""},
		{"the schema channel", true, false, "json_schema"},
		{"strict on the schema channel", true, true, "json_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req := request(t, "openai::gpt-4o", companySchema, acme)
			req.WebSearch, req.ResponseSchema, req.Strict = true, tt.responseSchema, tt.strict
			req.Credential = cred("k1", 1, "sk-search-good-0001", nil)
			resp, err := r.Generate(context.Background(), req)
			is.NoErr(err)
			got, _ := fake.LastRequest()
			is.Equal(got.API, "responses")
			is.True(got.WebSearch()) // the tool was sent
			is.Equal(got.Authorization, "Bearer sk-search-good-0001")
			is.Equal(got.Model, "gpt-4o")
			var body map[string]any
			is.NoErr(json.Unmarshal(got.Body, &body))
			is.Equal(body["store"], false) // no state kept at the provider
			if tt.format == "" {
				is.Equal(got.TextFormat, nil)
			} else {
				is.Equal(got.TextFormat["type"], tt.format)
				is.Equal(got.TextFormat["name"], req.SchemaName)
				is.Equal(got.TextFormat["strict"], tt.strict)
				is.True(got.TextFormat["schema"] != nil)
			}
			var roles []string
			for _, m := range got.Messages {
				roles = append(roles, m.Role)
			}
			is.Equal(roles[0], "system") // the prompt's messages, in order
			out, err := enrichment.ParseAnswer(resp.Text)
			is.NoErr(err)
			is.Equal(out["name"], "Acme Corp")
			is.True(resp.InputTokens > 0 && resp.OutputTokens > 0)
			is.Equal(resp.Searches, 1) // the web_search_call item: billed per search
		})
	}
}

// TestOpenAIWebSearchFailures: the Responses API's failures are classified
// like the chat path's, so rotation takes a refused key out and moves a
// rate-limited call on.
func TestOpenAIWebSearchFailures(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		fail    int
		latency time.Duration
		check   func(is *is.I, err error)
	}{
		{"a refused key is an authentication failure", "sk-search-bad-9999", 0, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
			is.True(!strings.Contains(err.Error(), "sk-search-bad-9999"))
		}},
		{"a 429 carries its Retry-After", "sk-search-good-0001", http.StatusTooManyRequests, 0, func(is *is.I, err error) {
			var rl *ports.RateLimitError
			is.True(errors.As(err, &rl))
			is.Equal(rl.RetryAfter, time.Second)
			is.True(errors.Is(err, ports.ErrRateLimited))
		}},
		{"a 403 is an authentication failure", "sk-search-good-0001", http.StatusForbidden, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
		}},
		{"an outage is unavailable", "sk-search-good-0001", http.StatusServiceUnavailable, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMUnavailable))
		}},
		{"a slow answer is a timeout", "sk-search-good-0001", 0, time.Second, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMTimeout))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeopenai.New(t, fakeopenai.WithAPIKeys("sk-search-good-0001"), fakeopenai.WithLatency(tt.latency))
			r := searchRegistry(t, fake, 200*time.Millisecond)
			if tt.fail != 0 {
				fake.FailNext(1, tt.fail)
			}
			req := request(t, "openai::gpt-4o", companySchema, acme)
			req.WebSearch = true
			req.Credential = cred("k1", 1, tt.key, nil)
			_, err := r.Generate(context.Background(), req)
			tt.check(is, err)
			is.Equal(fake.Requests(), 1) // no retry inside the SDK: rotation decides
		})
	}
}

// TestWebSearchClientsPerCredential: search clients are cached per key and
// version like the chat clients, and Forget drops them.
func TestWebSearchClientsPerCredential(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys("sk-search-good-0001", "sk-search-good-0002"))
	r := searchRegistry(t, fake, 2*time.Second)
	var opened atomic.Int64
	req := request(t, "openai::gpt-4o", companySchema, acme)
	req.WebSearch = true
	req.Credential = cred("k1", 1, "sk-search-good-0001", &opened)
	for range 2 {
		_, err := r.Generate(context.Background(), req)
		is.NoErr(err)
	}
	is.Equal(opened.Load(), int64(1))
	req.Credential = cred("k1", 2, "sk-search-good-0002", &opened) // the key replaced
	_, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(got.Authorization, "Bearer sk-search-good-0002")
	is.Equal(opened.Load(), int64(2))
	r.Forget("k1")
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(opened.Load(), int64(3))

	// No key: refused before anything is sent.
	n := fake.Requests()
	noKey := request(t, "openai::gpt-4o", companySchema, acme)
	noKey.WebSearch = true
	_, err = r.Generate(context.Background(), noKey)
	is.True(errors.Is(err, rotation.ErrNoUsableKey))
	is.Equal(fake.Requests(), n)
}

// TestWebSearchRefusedWithoutTool: a model enrich cannot search with is
// refused, never answered without searching.
func TestWebSearchRefusedWithoutTool(t *testing.T) {
	fake := fakeopenai.New(t)
	r, err := llm.NewRegistry(llm.Config{Sandbox: true, Providers: []llm.ProviderConfig{
		{Name: "openai", Type: "openai", BaseURL: fake.URL(), Models: []string{"gpt-4.1-nano"}, Keyless: true},
		{Name: "compat", Type: "googleai", BaseURL: fake.URL(), Models: []string{"gpt-4o"}, Keyless: true},
		{Name: "local", Type: "ollama", BaseURL: fake.URL(), Models: []string{"gpt-4o"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"openai::gpt-4.1-nano", "compat::gpt-4o", "local::gpt-4o", "sandbox::echo"} {
		t.Run(k, func(t *testing.T) {
			is := is.New(t)
			req := request(t, k, companySchema, acme)
			req.WebSearch = true
			_, err := r.Generate(context.Background(), req)
			is.True(errors.Is(err, ports.ErrInvalid))
			is.Equal(fake.Requests(), 0)
		})
	}
}

// anthropicSearchFake speaks Anthropic's Messages API: with the web_search
// server tool in the request, its answer narrates a search, carries the
// server_tool_use and web_search_tool_result blocks, then the JSON answer
// with a citation.
type anthropicSearchFake struct {
	mu      sync.Mutex
	good    string
	status  int
	pauses  int // answer this many requests with stop_reason pause_turn
	latency time.Duration
	bodies  []map[string]any
	keys    []string
	srv     *httptest.Server
}

func newAnthropicSearchFake(t *testing.T, good string) *anthropicSearchFake {
	f := &anthropicSearchFake{good: good}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/messages" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, "not the messages API", http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "API keys go in x-api-key", http.StatusBadRequest)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.keys = append(f.keys, r.Header.Get("x-api-key"))
		status, latency, pause := f.status, f.latency, f.pauses > 0
		if pause {
			f.pauses--
		}
		f.mu.Unlock()
		if !sleep(r, latency) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("x-api-key") != f.good:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
			return
		case status != 0:
			w.Header().Set("retry-after", "4")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`))
			return
		case pause:
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_0", "type": "message", "role": "assistant", "model": body["model"],
				"content": []any{
					map[string]any{"type": "text", "text": "Searching {first}."},
					map[string]any{"type": "server_tool_use", "id": "srvtoolu_0", "name": "web_search", "input": map[string]any{"query": "Acme"}},
				},
				"stop_reason": "pause_turn",
				"usage":       map[string]any{"input_tokens": 100, "output_tokens": 10}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
			"content": []any{
				map[string]any{"type": "text", "text": "I'll search for {Acme Corp}."},
				map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": map[string]any{"query": "Acme Corp"}},
				map[string]any{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []any{map[string]any{
					"type": "web_search_result", "url": "https://acme.example", "title": "Acme", "encrypted_content": "e1", "page_age": "1 day"}}},
				map[string]any{"type": "text", "text": answer, "citations": []any{map[string]any{"type": "web_search_result_location",
					"url": "https://acme.example", "title": "Acme", "encrypted_index": "i1", "cited_text": "Acme Corp"}}},
			},
			"stop_reason": "end_turn",
			"usage":       map[string]any{"input_tokens": 120, "output_tokens": 30, "server_tool_use": map[string]any{"web_search_requests": 1}}})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *anthropicSearchFake) last() (map[string]any, string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		return nil, "", 0
	}
	return f.bodies[len(f.bodies)-1], f.keys[len(f.keys)-1], len(f.bodies)
}

// TestAnthropicWebSearch: a call with WebSearch carries Anthropic's
// web_search server tool; the answer is the text after the last search,
// and failures are classified.
func TestAnthropicWebSearch(t *testing.T) {
	is := is.New(t)
	fake := newAnthropicSearchFake(t, "sk-ant-search-0001")
	r, err := llm.NewRegistry(llm.Config{Timeout: 500 * time.Millisecond, Providers: []llm.ProviderConfig{
		{Name: "claude", Type: "anthropic", BaseURL: fake.srv.URL + "/v1", Models: []string{"claude-sonnet-4-5"}}}})
	is.NoErr(err)
	req := request(t, "claude::claude-sonnet-4-5", companySchema, acme)
	req.WebSearch = true
	req.Credential = cred("k1", 1, "sk-ant-search-0001", nil)
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(resp.Text, answer) // not the narration before the search
	is.Equal(resp.InputTokens, 120)
	is.Equal(resp.OutputTokens, 30)
	is.Equal(resp.Searches, 1) // usage.server_tool_use.web_search_requests
	body, key, _ := fake.last()
	is.Equal(key, "sk-ant-search-0001")
	tools, _ := body["tools"].([]any)
	is.Equal(len(tools), 1)
	tool, _ := tools[0].(map[string]any)
	is.Equal(tool["type"], "web_search_20250305")
	is.Equal(tool["name"], "web_search")
	is.Equal(tool["max_uses"], float64(5))
	is.Equal(body["model"], "claude-sonnet-4-5")
	is.True(body["max_tokens"].(float64) > 0)
	is.True(body["system"] != nil) // the prompt's system message

	t.Run("refused key", func(t *testing.T) {
		is := is.New(t)
		bad := req
		bad.Credential = cred("k2", 1, "sk-ant-wrong-0002", nil)
		_, err := r.Generate(context.Background(), bad)
		is.True(errors.Is(err, ports.ErrLLMAuth))
		is.True(!strings.Contains(err.Error(), "sk-ant-wrong-0002"))
	})
	t.Run("rate limited with retry-after", func(t *testing.T) {
		is := is.New(t)
		fake.mu.Lock()
		fake.status = http.StatusTooManyRequests
		fake.mu.Unlock()
		defer func() { fake.mu.Lock(); fake.status = 0; fake.mu.Unlock() }()
		_, _, before := fake.last()
		_, err := r.Generate(context.Background(), req)
		var rl *ports.RateLimitError
		is.True(errors.As(err, &rl))
		is.Equal(rl.RetryAfter, 4*time.Second)
		_, _, after := fake.last()
		is.Equal(after, before+1) // no retry inside the SDK
	})
	t.Run("timeout", func(t *testing.T) {
		is := is.New(t)
		fake.mu.Lock()
		fake.latency = 2 * time.Second
		fake.mu.Unlock()
		defer func() { fake.mu.Lock(); fake.latency = 0; fake.mu.Unlock() }()
		_, err := r.Generate(context.Background(), req)
		is.True(errors.Is(err, ports.ErrLLMTimeout))
	})
	t.Run("a paused turn is continued", func(t *testing.T) {
		is := is.New(t)
		fake.mu.Lock()
		fake.pauses = 1
		fake.mu.Unlock()
		_, _, before := fake.last()
		resp, err := r.Generate(context.Background(), req)
		is.NoErr(err)
		is.Equal(resp.Text, answer)
		is.Equal(resp.InputTokens, 220) // both turns
		is.Equal(resp.OutputTokens, 40)
		is.Equal(resp.Searches, 1) // the searches of both turns
		body, _, after := fake.last()
		is.Equal(after, before+2)
		msgs, _ := body["messages"].([]any)
		turn, _ := msgs[len(msgs)-1].(map[string]any)
		is.Equal(turn["role"], "assistant") // the paused turn sent back
		content, _ := turn["content"].([]any)
		is.Equal(len(content), 2)
		tool, _ := content[1].(map[string]any)
		is.Equal(tool["type"], "server_tool_use")
	})
}

// TestKeylessWebSearchSendsNoKey: a keyless provider's search requests carry
// no key header, as its chat requests.
func TestKeylessWebSearchSendsNoKey(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "openai", Type: "openai", BaseURL: fake.URL(), Models: []string{"gpt-4o"}, Keyless: true}}})
	is.NoErr(err)
	req := request(t, "openai::gpt-4o", companySchema, acme)
	req.WebSearch = true
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.True(got.WebSearch())
	is.Equal(got.Authorization, "") // no placeholder key
}
