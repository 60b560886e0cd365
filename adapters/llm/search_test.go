package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
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

// TestWebSearchClientsPerCredential: one client per model, key and version
// serves chat and search calls alike, and Forget drops it.
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
	chat := req
	chat.WebSearch = false
	_, err := r.Generate(context.Background(), chat) // the same client serves chat and search
	is.NoErr(err)
	is.Equal(opened.Load(), int64(1))
	req.Credential = cred("k1", 2, "sk-search-good-0002", &opened) // the key replaced
	_, err = r.Generate(context.Background(), req)
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
