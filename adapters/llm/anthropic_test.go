package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeanthropic"
)

const anthropicKey = "sk-ant-good-0001"

// anthropicRegistry serves claude::claude-sonnet-4-5 (structured output
// and web search in the catalog) from fake, with no key of its own.
func anthropicRegistry(t *testing.T, fake *fakeanthropic.Server, timeout time.Duration) *llm.Registry {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{Timeout: timeout, Providers: []llm.ProviderConfig{
		{Name: "claude", Type: "anthropic", BaseURL: fake.URL(), Models: []string{"claude-sonnet-4-5"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func anthropicRequest(t *testing.T) ports.LLMRequest {
	req := request(t, "claude::claude-sonnet-4-5", companySchema, acme)
	req.Credential = cred("k1", 1, anthropicKey, nil)
	return req
}

// TestAnthropicMessages: the client pays with the credential's key in
// x-api-key (never Authorization), sends the prompt's system message as
// system and a max_tokens, and returns the text and the usage.
func TestAnthropicMessages(t *testing.T) {
	is := is.New(t)
	fake := fakeanthropic.New(t, fakeanthropic.WithAPIKeys(anthropicKey))
	fake.SetUsage(120, 30)
	r := anthropicRegistry(t, fake, 2*time.Second)
	req := anthropicRequest(t)
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text))
	is.Equal(resp.InputTokens, 120)
	is.Equal(resp.OutputTokens, 30)
	is.Equal(resp.Searches, 0)
	got, _ := fake.LastRequest()
	is.Equal(got.APIKey, anthropicKey)
	is.Equal(got.Authorization, "")
	is.Equal(got.Model, "claude-sonnet-4-5")
	is.True(got.MaxTokens > 0)
	is.Equal(got.System, req.Messages[0].Content)
	is.Equal(got.ForcedTool(), "") // prompted JSON unless asked
	is.Equal(len(got.Tools), 0)

	t.Run("TestKey", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(r.TestKey(context.Background(), "claude", *cred("k9", 1, anthropicKey, nil)))
		got, _ := fake.LastRequest()
		is.Equal(got.MaxTokens, 16)
		err := r.TestKey(context.Background(), "claude", *cred("k9", 2, "sk-ant-wrong-0002", nil))
		is.True(errors.Is(err, ports.ErrLLMAuth))
	})
	t.Run("no key", func(t *testing.T) {
		is := is.New(t)
		n := fake.Requests()
		_, err := r.Generate(context.Background(), request(t, "claude::claude-sonnet-4-5", companySchema, acme))
		is.True(errors.Is(err, rotation.ErrNoUsableKey)) // no key of its own, none given
		is.Equal(fake.Requests(), n)
	})
}

// TestAnthropicStructuredOutput: a call that asks for the schema channel
// forces a tool whose input schema is the request's schema, and the
// tool's input is the answer.
func TestAnthropicStructuredOutput(t *testing.T) {
	is := is.New(t)
	fake := fakeanthropic.New(t, fakeanthropic.WithAPIKeys(anthropicKey))
	r := anthropicRegistry(t, fake, 2*time.Second)
	req := anthropicRequest(t)
	req.ResponseSchema, req.Strict = true, true
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text)) // the tool's input, as the answer
	got, _ := fake.LastRequest()
	is.Equal(got.ForcedTool(), req.SchemaName)
	is.Equal(len(got.Tools), 1)
	tool := got.Tools[0]
	is.Equal(tool["name"], req.SchemaName)
	is.Equal(tool["strict"], nil) // the catalog declares no strict schema for Claude
	// The schema on the wire is the request's, keyword for keyword.
	want, _ := json.Marshal(req.Schema)
	sent, _ := json.Marshal(tool["input_schema"])
	is.Equal(string(sent), string(want))

	t.Run("a text answer instead of the tool", func(t *testing.T) {
		is := is.New(t)
		fake.SetResponder(func(fakeanthropic.Request) (string, int) { return "not JSON at all", 0 })
		defer fake.SetResponder(nil)
		resp, err := r.Generate(context.Background(), req)
		is.NoErr(err) // returned as text: validation and retries are the caller's
		is.Equal(resp.Text, "not JSON at all")
	})
}

// TestAnthropicFailures: failures are classified as on every provider, and
// the SDK does not retry (rotation decides).
func TestAnthropicFailures(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		fail    int
		latency time.Duration
		check   func(is *is.I, err error)
	}{
		{"a refused key is an authentication failure", "sk-ant-wrong-0002", 0, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
			is.True(!strings.Contains(err.Error(), "sk-ant-wrong-0002"))
		}},
		{"a 403 is an authentication failure", anthropicKey, http.StatusForbidden, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
		}},
		{"a 429 carries its Retry-After", anthropicKey, http.StatusTooManyRequests, 0, func(is *is.I, err error) {
			var rl *ports.RateLimitError
			is.True(errors.As(err, &rl))
			is.Equal(rl.RetryAfter, 7*time.Second)
		}},
		{"overloaded is unavailable", anthropicKey, 529, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMUnavailable))
		}},
		{"a slow answer is a timeout", anthropicKey, 0, time.Second, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMTimeout))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeanthropic.New(t, fakeanthropic.WithAPIKeys(anthropicKey), fakeanthropic.WithLatency(tt.latency))
			fake.SetRetryAfter("7")
			r := anthropicRegistry(t, fake, 200*time.Millisecond)
			if tt.fail != 0 {
				fake.FailNext(1, tt.fail)
			}
			req := anthropicRequest(t)
			req.Credential = cred("k1", 1, tt.key, nil)
			_, err := r.Generate(context.Background(), req)
			tt.check(is, err)
			is.Equal(fake.Requests(), 1)
		})
	}
}

// TestAnthropicWebSearch: a call with WebSearch carries Anthropic's
// web_search server tool and forces no tool; the answer is the text after
// the last search, a paused turn is continued, and the searches of every
// turn are counted.
func TestAnthropicWebSearch(t *testing.T) {
	is := is.New(t)
	fake := fakeanthropic.New(t, fakeanthropic.WithAPIKeys(anthropicKey))
	fake.SetUsage(100, 10)
	r := anthropicRegistry(t, fake, 2*time.Second)
	req := anthropicRequest(t)
	req.WebSearch, req.ResponseSchema = true, true
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text)) // not the narration before the search
	is.Equal(resp.InputTokens, 100)
	is.Equal(resp.OutputTokens, 10)
	is.Equal(resp.Searches, 1) // usage.server_tool_use.web_search_requests
	got, _ := fake.LastRequest()
	is.Equal(got.ForcedTool(), "") // a forced tool would forbid the search
	is.Equal(len(got.Tools), 1)
	is.Equal(got.Tools[0]["type"], "web_search_20250305")
	is.Equal(got.Tools[0]["name"], "web_search")
	is.Equal(got.Tools[0]["max_uses"], float64(5))

	t.Run("a paused turn is continued", func(t *testing.T) {
		is := is.New(t)
		fake.PauseNext(1)
		before := fake.Requests()
		resp, err := r.Generate(context.Background(), req)
		is.NoErr(err)
		is.NoErr(validate(t, req.Schema, resp.Text))
		is.Equal(resp.InputTokens, 200) // both turns
		is.Equal(resp.OutputTokens, 20)
		is.Equal(resp.Searches, 2)
		is.Equal(fake.Requests(), before+2)
		got, _ := fake.LastRequest()
		turn := got.Messages[len(got.Messages)-1]
		is.Equal(turn.Role, "assistant") // the paused turn sent back
		is.Equal(len(turn.Blocks), 2)
		is.Equal(turn.Blocks[1]["type"], "server_tool_use")
	})
	t.Run("a failed continuation still reports the first turn's usage", func(t *testing.T) {
		is := is.New(t)
		fake.PauseNext(1)
		fake.SetResponder(func(q fakeanthropic.Request) (string, int) {
			if len(q.Messages) > 1 {
				return "overloaded", 529
			}
			return fakeanthropic.DefaultAnswer(q), 0
		})
		defer fake.SetResponder(nil)
		resp, err := r.Generate(context.Background(), req)
		is.True(errors.Is(err, ports.ErrLLMUnavailable))
		is.Equal(resp.InputTokens, 100) // spent all the same
		is.Equal(resp.Searches, 1)
	})
}

// TestAnthropicKeyless: a keyless Anthropic-protocol server gets no key
// header at all.
func TestAnthropicKeyless(t *testing.T) {
	is := is.New(t)
	fake := fakeanthropic.New(t)
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "claude", Type: "anthropic", BaseURL: fake.URL(), Models: []string{"claude-x"}, Keyless: true}}})
	is.NoErr(err)
	resp, err := r.Generate(context.Background(), request(t, "claude::claude-x", companySchema, acme))
	is.NoErr(err)
	_, err = enrichment.ParseAnswer(resp.Text)
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(got.APIKey, "")
	is.Equal(got.Authorization, "")
}
