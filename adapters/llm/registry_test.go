package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

const companySchema = `{
	"type":"object",
	"required":["name"],
	"properties":{
		"name":{"type":"string"},
		"industry":{"type":"string","enum":["software","retail","energy"]},
		"employees":{"type":"integer","minimum":1},
		"revenue":{"type":["number","null"]},
		"website":{"type":"string","format":"uri"},
		"hq":{"type":"object","required":["city"],"properties":{"city":{"type":"string"},"country":{"type":"string"}}},
		"products":{"type":"array","items":{"$ref":"#/$defs/product"}}
	},
	"$defs":{"product":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"launched":{"type":"string","format":"date"}}}}
}`

const acme = `{"name":"Acme Corp","industry":"retail","hq":{"city":"Lyon"}}`

func key(s string) model.Key {
	k, err := model.ParseKey(s)
	if err != nil {
		panic(err)
	}
	return k
}

// request builds what the application sends for one single-pass call.
func request(t testing.TB, k, schema, entity string) ports.LLMRequest {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(schema), &doc); err != nil {
		t.Fatal(err)
	}
	domains, err := enrichment.Plan(doc)
	if err != nil {
		t.Fatal(err)
	}
	d := enrichment.Calls(enrichment.SinglePass, doc, domains)[0]
	return ports.LLMRequest{Model: key(k), Messages: enrichment.Prompt("company", json.RawMessage(entity), d), Schema: d.Schema, SchemaName: d.Key}
}

func validate(t testing.TB, answer any, text string) error {
	t.Helper()
	doc, _ := json.Marshal(answer)
	v, err := jsonschema.New(schema.Limits{}).Compile(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := enrichment.ParseAnswer(text)
	if err != nil {
		return err
	}
	return v.Validate(ans)
}

func newRegistry(t testing.TB, fake *fakeopenai.Server, mod func(*llm.Config)) *llm.Registry {
	t.Helper()
	cfg := llm.Config{
		Providers: []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: fake.URL(), APIKey: "sk-test", Models: []string{"qwen3", "llama"}}},
		Sandbox:   true,
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := llm.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGenerateOpenAICompatible(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-test"))
	r := newRegistry(t, fake, nil)
	req := request(t, "local::qwen3", companySchema, acme)

	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text)) // the fake answers valid JSON
	is.True(strings.Contains(resp.Text, `"name":"Acme Corp"`))
	is.True(resp.InputTokens > 100)                   // usage recorded
	is.Equal(resp.OutputTokens, (len(resp.Text)+3)/4) // as the fake counted

	is.Equal(fake.Requests(), 1)
	got, _ := fake.LastRequest()
	is.Equal(got.Model, "qwen3")
	is.Equal(got.ResponseFormat["type"], "json_object") // JSON mode
	is.Equal(len(got.Messages), 2)
	is.Equal(got.Messages[0].Role, "system")
	is.Equal(got.Messages[1].Role, "user")
	is.Equal(got.Entity["name"], "Acme Corp")
	is.True(!strings.Contains(string(got.Body), "enrich:schema")) // sandbox metadata never leaves the process
}

func TestGenerateRetryConversation(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r := newRegistry(t, fake, func(c *llm.Config) { c.Providers[0].APIKey, c.Providers[0].Keyless = "", true }) // self-hosted, keyless
	req := request(t, "local::llama", companySchema, acme)
	req.Messages = enrichment.Retry(req.Messages, `{"oops":`, errors.New("answer is not a JSON object"))
	_, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(len(got.Messages), 4)
	is.Equal(got.Messages[2].Role, "assistant")
	is.Equal(got.Messages[2].Content, `{"oops":`)
}

func TestGenerateFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*fakeopenai.Server)
		model   string
		ctx     func() (context.Context, context.CancelFunc)
		want    error
		alsoIs  error
		wantMsg string
	}{
		{name: "500", setup: func(f *fakeopenai.Server) { f.FailNext(1, 500) }, want: ports.ErrLLMUnavailable, wantMsg: "http 500"},
		{name: "503", setup: func(f *fakeopenai.Server) { f.FailNext(3, 503) }, want: ports.ErrLLMUnavailable, wantMsg: "injected failure 503"},
		{name: "429", setup: func(f *fakeopenai.Server) { f.FailNext(1, 429) }, want: ports.ErrRateLimited, wantMsg: "http 429"},
		{name: "504", setup: func(f *fakeopenai.Server) { f.FailNext(1, 504) }, want: ports.ErrLLMTimeout},
		{name: "400", setup: func(f *fakeopenai.Server) { f.FailNext(1, 400) }, want: ports.ErrLLMUnavailable},
		{name: "401", setup: func(f *fakeopenai.Server) { f.FailNext(1, 401) }, want: ports.ErrLLMAuth},
		{name: "403", setup: func(f *fakeopenai.Server) { f.FailNext(1, 403) }, want: ports.ErrLLMAuth},
		{name: "context length", setup: func(f *fakeopenai.Server) {
			f.SetResponder(func(fakeopenai.ChatRequest) (string, int) {
				return "This model's maximum context length is 8192 tokens (context_length_exceeded)", 400
			})
		}, want: ports.ErrContextLength},
		{name: "model retired", setup: func(f *fakeopenai.Server) {
			f.SetResponder(func(fakeopenai.ChatRequest) (string, int) { return "The model `qwen3` has been deprecated", 404 })
		}, want: ports.ErrModelRetired},
		{name: "responder status", setup: func(f *fakeopenai.Server) {
			f.SetResponder(func(fakeopenai.ChatRequest) (string, int) { return "slow down", 429 })
		}, want: ports.ErrRateLimited, wantMsg: "slow down"},
		{name: "connection refused", setup: func(f *fakeopenai.Server) { f.Close() }, want: ports.ErrLLMUnavailable},
		{name: "deadline", setup: func(f *fakeopenai.Server) { f.SetLatency(2 * time.Second) },
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			}, want: ports.ErrLLMTimeout, alsoIs: context.DeadlineExceeded},
		{name: "cancelled before", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, want: context.Canceled},
		{name: "cancelled while waiting", setup: func(f *fakeopenai.Server) { f.SetLatency(2 * time.Second) },
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
				return ctx, cancel
			}, want: context.Canceled},
		{name: "unknown model of a provider", model: "local::gpt-9", want: ports.ErrUnknownModel, wantMsg: `no model "gpt-9"`},
		{name: "unknown provider", model: "nope::qwen3", want: ports.ErrUnknownModel, wantMsg: `no provider "nope"`},
		{name: "unknown sandbox model", model: "sandbox::nope", want: ports.ErrUnknownModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeopenai.New(t)
			r := newRegistry(t, fake, nil)
			if tt.setup != nil {
				tt.setup(fake)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			m := tt.model
			if m == "" {
				m = "local::qwen3"
			}
			start := time.Now()
			resp, err := r.Generate(ctx, request(t, m, companySchema, acme))
			is.True(errors.Is(err, tt.want)) // sentinel
			if tt.alsoIs != nil {
				is.True(errors.Is(err, tt.alsoIs))
			}
			if tt.wantMsg != "" {
				is.True(strings.Contains(err.Error(), tt.wantMsg)) // detail kept
			}
			is.True(strings.Contains(err.Error(), m)) // names the model
			is.Equal(resp, ports.LLMResponse{})
			is.True(time.Since(start) < time.Second) // honours the context, does not wait out the latency
		})
	}
}

func TestGenerateTimeoutConfig(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithLatency(2*time.Second))
	r := newRegistry(t, fake, func(c *llm.Config) { c.Timeout = 50 * time.Millisecond })
	_, err := r.Generate(context.Background(), request(t, "local::qwen3", companySchema, acme))
	is.True(errors.Is(err, ports.ErrLLMTimeout))
}

func TestGenerateReturnsBadAnswersAsText(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(*fakeopenai.Server)
		isJSON  bool
		isValid bool
	}{
		{"not JSON", func(f *fakeopenai.Server) { f.InvalidNext(1) }, false, false},
		{"wrong shape", func(f *fakeopenai.Server) { f.SchemaInvalidNext(1) }, true, false},
		{"responder", func(f *fakeopenai.Server) {
			f.SetResponder(func(fakeopenai.ChatRequest) (string, int) { return "```json\n{\"name\":\"X\"}\n```", 0 })
		}, true, true},
		{"then valid again", func(f *fakeopenai.Server) {}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeopenai.New(t)
			tt.setup(fake)
			r := newRegistry(t, fake, nil)
			req := request(t, "local::qwen3", companySchema, acme)
			resp, err := r.Generate(context.Background(), req)
			is.NoErr(err) // validation is the application's job
			_, perr := enrichment.ParseAnswer(resp.Text)
			is.Equal(perr == nil, tt.isJSON)
			is.Equal(validate(t, req.Schema, resp.Text) == nil, tt.isValid)
			is.True(resp.OutputTokens > 0)
		})
	}
}

func TestGenerateConcurrent(t *testing.T) {
	fake := fakeopenai.New(t)
	r := newRegistry(t, fake, nil)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := []string{"local::qwen3", "local::llama", "sandbox::echo", "sandbox::alt"}[i%4]
			if _, err := r.Generate(context.Background(), request(t, m, companySchema, acme)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := fake.Requests(); n != 12 {
		t.Fatalf("fake got %d requests, want 12", n)
	}
}

func TestCatalog(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r := newRegistry(t, fake, func(c *llm.Config) {
		c.Providers = append(c.Providers, llm.ProviderConfig{Name: "openai", Type: "openai", APIKey: "sk", Models: []string{"gpt-4o-mini", "gpt-x"}})
		c.Prices = map[string]model.Price{"local::llama": {InputPerMTok: 1, OutputPerMTok: 2}, "gpt-x": {InputPerMTok: 3, OutputPerMTok: 4}}
	})
	var keys []string
	for _, m := range r.Models() {
		keys = append(keys, m.Key.String())
	}
	is.Equal(keys, []string{"local::llama", "local::qwen3", "openai::gpt-4o-mini", "openai::gpt-x",
		"sandbox::alt", "sandbox::broken", "sandbox::contrarian", "sandbox::echo", "sandbox::flaky", "sandbox::search", "sandbox::slow"})

	tests := []struct {
		key     string
		price   model.Price
		sandbox bool
	}{
		{"local::qwen3", llm.DefaultModelPrice, false},
		{"local::llama", model.Price{InputPerMTok: 1, OutputPerMTok: 2}, false},
		{"openai::gpt-x", model.Price{InputPerMTok: 3, OutputPerMTok: 4}, false},
		{"openai::gpt-4o-mini", model.Price{InputPerMTok: 150_000, OutputPerMTok: 600_000, PerSearch: 10_000}, false},
		{"sandbox::echo", llm.SandboxPrice, true},
		{"sandbox::flaky", llm.SandboxPrice, true},
	}
	for _, tt := range tests {
		m, err := r.Model(key(tt.key))
		is.NoErr(err)
		is.Equal(m.Key.String(), tt.key)
		is.Equal(m.Price, tt.price)
		is.Equal(m.Sandbox, tt.sandbox)
		is.True(m.Price.Cost(1000, 1000) > 0) // no model is free
		if tt.sandbox {
			is.True(strings.HasPrefix(m.DisplayName, "Sandbox (deterministic, no network)"))
		}
	}
	_, err := r.Model(key("local::nope"))
	is.True(errors.Is(err, ports.ErrUnknownModel))

	// Without the sandbox flag there are no sandbox models.
	r2, err := llm.NewRegistry(llm.Config{})
	is.NoErr(err)
	is.Equal(len(r2.Models()), 0)
	_, err = r2.Model(key("sandbox::echo"))
	is.True(errors.Is(err, ports.ErrUnknownModel))
}

func TestNewRegistryProviders(t *testing.T) {
	tests := []struct {
		name string
		p    llm.ProviderConfig
		want string // "" means success
	}{
		{"openai compatible", llm.ProviderConfig{Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:8000/v1", Models: []string{"qwen3"}}, ""},
		// Without a key of its own a provider takes organization and global keys.
		{"openai without key", llm.ProviderConfig{Name: "oa", Type: "openai", Models: []string{"gpt-4o"}}, ""},
		{"anthropic", llm.ProviderConfig{Name: "claude", Type: "anthropic", APIKey: "k", Models: []string{"claude-sonnet-4-5"}}, ""},
		{"anthropic without key", llm.ProviderConfig{Name: "claude", Type: "anthropic", Models: []string{"x"}}, ""},
		{"keyless with key", llm.ProviderConfig{Name: "x", Type: "openai", APIKey: "k", Keyless: true, Models: []string{"m"}}, "both set"},
		{"googleai", llm.ProviderConfig{Name: "gemini", Type: "googleai", APIKey: "k", Models: []string{"gemini-2.0-flash"}}, ""},
		{"mistral", llm.ProviderConfig{Name: "mistral", Type: "mistral", APIKey: "k", Models: []string{"mistral-small-latest"}}, ""},
		{"ollama", llm.ProviderConfig{Name: "ol", Type: "ollama", Models: []string{"llama3.2:3b"}}, ""},
		{"unknown type", llm.ProviderConfig{Name: "x", Type: "bedrock", Models: []string{"m"}}, `unknown provider type "bedrock"`},
		{"reserved name", llm.ProviderConfig{Name: "sandbox", Type: "openai", APIKey: "k", Models: []string{"m"}}, "reserved"},
		{"no models", llm.ProviderConfig{Name: "x", Type: "openai", APIKey: "k"}, "lists no model"},
		{"bad url", llm.ProviderConfig{Name: "x", Type: "openai", BaseURL: "localhost:8000", Models: []string{"m"}}, "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{tt.p}})
			if tt.want == "" {
				is.NoErr(err)
				_, err = r.Model(model.Key{Provider: tt.p.Name, Model: tt.p.Models[0]})
				is.NoErr(err)
				return
			}
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want)) // names the problem
		})
	}
	_, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "a", Type: "ollama", Models: []string{"m"}}, {Name: "a", Type: "ollama", Models: []string{"m"}}}})
	if err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Fatalf("duplicate model: %v", err)
	}
}

func TestHTTPClientUsed(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	var n int
	var mu sync.Mutex
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		n++
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})}
	r := newRegistry(t, fake, func(c *llm.Config) { c.HTTPClient = hc })
	_, err := r.Generate(context.Background(), request(t, "local::qwen3", companySchema, acme))
	is.NoErr(err)
	is.Equal(n, 1)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
