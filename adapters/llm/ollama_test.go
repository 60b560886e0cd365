package llm_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeollama"
	"github.com/entityenrich/enrich/test/fakeports"
)

func ollamaRegistry(t *testing.T, fake *fakeollama.Server) *llm.Registry {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{Timeout: 200 * time.Millisecond, Providers: []llm.ProviderConfig{
		{Name: "ol", Type: "ollama", BaseURL: fake.URL(), Models: []string{"llama"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOllama: Ollama stays on langchaingo's client. It needs no key and
// sends none, asks for JSON and reports usage.
func TestOllama(t *testing.T) {
	is := is.New(t)
	fake := fakeollama.New(t)
	r := ollamaRegistry(t, fake)
	info, _ := r.Provider("ol")
	is.True(info.Keyless)
	req := request(t, "ol::llama", companySchema, acme)
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text))
	is.True(resp.InputTokens > 0 && resp.OutputTokens > 0)
	got, _ := fake.LastRequest()
	is.Equal(got.Authorization, "")
	is.Equal(string(got.Format), `"json"`) // JSON mode
	is.Equal(got.Messages[0].Role, "system")
}

// TestOllamaFailures: Ollama's failures are classified at the adapter like
// every provider's.
func TestOllamaFailures(t *testing.T) {
	fake := fakeollama.New(t)
	r := ollamaRegistry(t, fake)
	req := request(t, "ol::llama", companySchema, acme)
	tests := []struct {
		name    string
		fail    int
		latency time.Duration
		check   func(is *is.I, err error)
	}{
		{"rate limited with retry-after", http.StatusTooManyRequests, 0, func(is *is.I, err error) {
			var rl *ports.RateLimitError
			is.True(errors.As(err, &rl))
			is.Equal(rl.RetryAfter, 3*time.Second)
		}},
		{"refused by a proxy in front", http.StatusUnauthorized, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
		}},
		{"forbidden by a proxy in front", http.StatusForbidden, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMAuth))
		}},
		{"an outage is unavailable", http.StatusServiceUnavailable, 0, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMUnavailable))
		}},
		{"timeout", 0, time.Second, func(is *is.I, err error) {
			is.True(errors.Is(err, ports.ErrLLMTimeout))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			fake.SetRetryAfter("3")
			fake.SetLatency(tt.latency)
			defer fake.SetLatency(0)
			if tt.fail != 0 {
				fake.FailNext(1, tt.fail)
			}
			_, err := r.Generate(context.Background(), req)
			tt.check(is, err)
		})
	}
}

// TestOllamaEmbeddings: langchaingo's Ollama client embeds too, one text a
// request, in order.
func TestOllamaEmbeddings(t *testing.T) {
	is := is.New(t)
	fake := fakeollama.New(t)
	r := ollamaRegistry(t, fake)
	texts := []string{"Acme Corp", "Globex", "Initech"}
	resp, err := r.Embed(context.Background(), ports.EmbedRequest{Model: model.Key{Provider: "ol", Model: "nomic-embed-text"}, Texts: texts})
	is.NoErr(err)
	is.Equal(len(resp.Vectors), len(texts))
	for i, text := range texts {
		is.Equal(resp.Vectors[i], fake.Vector(text))
	}
	got, _ := fake.LastRequest()
	is.Equal(got.API, "embed")
	is.Equal(got.Model, "nomic-embed-text") // not among the provider's chat models
	is.Equal(fake.Requests(), len(texts))
}

// TestOllamaImages: an image attachment reaches Ollama as the user
// message's images, base64 as its API wants them.
func TestOllamaImages(t *testing.T) {
	is := is.New(t)
	fake := fakeollama.New(t)
	r := ollamaRegistry(t, fake)
	req := request(t, "ol::llama", companySchema, acme)
	img := fakeports.PNG(3, 2)
	req.Messages[1].Files = []enrichment.File{{MediaType: "image/png", Filename: "label.png", Data: img}}
	_, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(got.Messages[1].Role, "user")
	is.Equal(got.Messages[1].Images, []string{base64.StdEncoding.EncodeToString(img)})
}
