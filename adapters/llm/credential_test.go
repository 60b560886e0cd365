package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeanthropic"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// cred is a stored key's credential whose Open counts its calls.
func cred(id string, version int, secret string, opened *atomic.Int64) *ports.Credential {
	return &ports.Credential{KeyID: id, Version: version, Source: rotation.Organization, Open: func() (ports.Secret, error) {
		if opened != nil {
			opened.Add(1)
		}
		return ports.Secret(secret), nil
	}}
}

// keyRegistry serves local::m from fake with no key of its own.
func keyRegistry(t *testing.T, fake *fakeopenai.Server, mod func(*llm.ProviderConfig)) *llm.Registry {
	t.Helper()
	p := llm.ProviderConfig{Name: "local", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}}
	if mod != nil {
		mod(&p)
	}
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{p}, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCredentialPaysTheCall(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys("sk-good-key-0001", "sk-good-key-0002"))
	r := keyRegistry(t, fake, nil)
	var opened atomic.Int64
	req := request(t, "local::m", companySchema, acme)

	req.Credential = cred("k1", 1, "sk-good-key-0001", &opened)
	for range 3 {
		_, err := r.Generate(context.Background(), req)
		is.NoErr(err)
	}
	got, _ := fake.LastRequest()
	is.Equal(got.Authorization, "Bearer sk-good-key-0001")
	is.Equal(opened.Load(), int64(1)) // the client is cached: the key is opened once

	req.Credential = cred("k2", 1, "sk-good-key-0002", &opened)
	_, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ = fake.LastRequest()
	is.Equal(got.Authorization, "Bearer sk-good-key-0002")
	is.Equal(opened.Load(), int64(2))

	// A new version of k1 (its secret replaced) builds a new client.
	req.Credential = cred("k1", 2, "sk-good-key-0002", &opened)
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(opened.Load(), int64(3))
	got, _ = fake.LastRequest()
	is.Equal(got.Authorization, "Bearer sk-good-key-0002")

	// Forget drops a key's clients.
	r.Forget("k1")
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(opened.Load(), int64(4))
}

func TestCredentialRefusedIsAuth(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-good-key-0001"))
	r := keyRegistry(t, fake, nil)
	req := request(t, "local::m", companySchema, acme)
	req.Credential = cred("k1", 1, "sk-wrong-key-9999", nil)
	_, err := r.Generate(context.Background(), req)
	is.True(errors.Is(err, ports.ErrLLMAuth))
	is.True(!strings.Contains(err.Error(), "sk-wrong-key-9999"))
	is.True(!strings.Contains(fmtVerbs(req.Credential), "sk-wrong")) // a Secret prints redacted
}

// fmtVerbs prints a credential's secret the ways a log line might.
func fmtVerbs(c *ports.Credential) string {
	s, _ := c.Open()
	return fmt.Sprint(s, c) + fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s)
}

func TestNoKeyNoCall(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r := keyRegistry(t, fake, nil)
	_, err := r.Generate(context.Background(), request(t, "local::m", companySchema, acme))
	is.True(errors.Is(err, rotation.ErrNoUsableKey))
	var nu *rotation.NoUsableKeyError
	is.True(errors.As(err, &nu))
	is.Equal(nu.Provider, "local")
	is.Equal(fake.Requests(), 0)
	info, ok := r.Provider("local")
	is.True(ok)
	is.True(!info.Keyless && !info.SystemKey)
}

func TestKeylessSendsNoKey(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r := keyRegistry(t, fake, func(p *llm.ProviderConfig) { p.Keyless = true })
	_, err := r.Generate(context.Background(), request(t, "local::m", companySchema, acme))
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(got.Authorization, "") // no placeholder key
	info, _ := r.Provider("local")
	is.True(info.Keyless)
	// An organization's key is still used when given.
	req := request(t, "local::m", companySchema, acme)
	req.Credential = cred("k1", 1, "sk-org-key-00001", nil)
	_, err = r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ = fake.LastRequest()
	is.Equal(got.Authorization, "Bearer sk-org-key-00001")
}

func TestSystemKeyIsTheFallback(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-env-key-00001"))
	r := keyRegistry(t, fake, func(p *llm.ProviderConfig) { p.APIKey = "sk-env-key-00001" })
	_, err := r.Generate(context.Background(), request(t, "local::m", companySchema, acme))
	is.NoErr(err)
	info, _ := r.Provider("local")
	is.True(info.SystemKey)
	_, ok := r.Provider("nobody")
	is.True(!ok)
}

func TestRateLimitCarriesRetryAfter(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t)
	r := keyRegistry(t, fake, func(p *llm.ProviderConfig) { p.Keyless = true })
	fake.FailNext(1, 429)
	_, err := r.Generate(context.Background(), request(t, "local::m", companySchema, acme))
	var rl *ports.RateLimitError
	is.True(errors.As(err, &rl))
	is.Equal(rl.RetryAfter, time.Second)
}

func TestTimeoutClassified(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithLatency(time.Second))
	p := llm.ProviderConfig{Name: "local", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}, Keyless: true}
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{p}, Timeout: 50 * time.Millisecond})
	is.NoErr(err)
	_, err = r.Generate(context.Background(), request(t, "local::m", companySchema, acme))
	is.True(errors.Is(err, ports.ErrLLMTimeout))
}

func TestTestKey(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-good-key-0001"))
	r := keyRegistry(t, fake, nil)
	is.NoErr(r.TestKey(context.Background(), "local", *cred("k", 1, "sk-good-key-0001", nil)))
	got, _ := fake.LastRequest()
	is.Equal(got.Model, "m")
	err := r.TestKey(context.Background(), "local", *cred("k", 1, "sk-bad-key-00001", nil))
	is.True(errors.Is(err, ports.ErrLLMAuth))
	is.True(!strings.Contains(err.Error(), "sk-bad-key-00001"))
	err = r.TestKey(context.Background(), "nobody", *cred("k", 1, "x", nil))
	is.True(err != nil)
}

// TestProviderErrorsScrubTheKey: a provider that echoes the key in its error
// message has it redacted before the error leaves the adapter (errors are
// logged), whichever client made the call.
func TestProviderErrorsScrubTheKey(t *testing.T) {
	const secret = "sk-echoed-key-0001"
	oa := fakeopenai.New(t)
	oa.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		return "Incorrect API key provided: " + strings.TrimPrefix(req.Authorization, "Bearer "), http.StatusUnauthorized
	})
	an := fakeanthropic.New(t)
	an.SetResponder(func(req fakeanthropic.Request) (string, int) {
		return "invalid x-api-key " + req.APIKey, http.StatusForbidden
	})
	r, err := llm.NewRegistry(llm.Config{Providers: []llm.ProviderConfig{
		{Name: "openai", Type: "openai", BaseURL: oa.URL(), Models: []string{"gpt-4o"}},
		{Name: "claude", Type: "anthropic", BaseURL: an.URL(), Models: []string{"claude-sonnet-4-5"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		model     string
		webSearch bool
	}{{"openai chat", "openai::gpt-4o", false}, {"openai responses", "openai::gpt-4o", true}, {"anthropic", "claude::claude-sonnet-4-5", false}} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req := request(t, tt.model, companySchema, acme)
			req.WebSearch = tt.webSearch
			req.Credential = cred("k1", 1, secret, nil)
			_, err := r.Generate(context.Background(), req)
			is.True(errors.Is(err, ports.ErrLLMAuth))
			is.True(strings.Contains(err.Error(), "[redacted]")) // the message is kept, the key is not
			is.True(!strings.Contains(err.Error(), secret))
		})
	}
}
