package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/metrics"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// catalog is the server's configured models.
type catalog []model.Info

func (c catalog) Models() []model.Info { return c }
func (c catalog) Model(k model.Key) (model.Info, error) {
	for _, m := range c {
		if m.Key == k {
			return m, nil
		}
	}
	return model.Info{}, ports.ErrUnknownModel
}

// answer answers every call, failing those of unknown models.
type answer struct{ known catalog }

func (a answer) Generate(_ context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	if req.Credential == nil || req.Credential.Endpoint == nil {
		if _, err := a.known.Model(req.Model); err != nil {
			return ports.LLMResponse{}, err
		}
	}
	return ports.LLMResponse{Text: "{}", InputTokens: 3, OutputTokens: 2}, nil
}

func scrape(t *testing.T, h http.Handler, auth string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("GET", "/metrics", nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b)
}

// series counts the lines of a metric family's samples.
func series(body, name string) int {
	n := 0
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") {
			n++
		}
	}
	return n
}

// TestLabelsNoTenantChooses: calls to organizations' own providers are
// labelled by the provider's type, never by the names the organization
// gave it or its models, and names the configuration does not declare
// are "other": many distinct names add no series. HTTP methods outside
// the standard set are "other" too.
func TestLabelsNoTenantChooses(t *testing.T) {
	is := is.New(t)
	cat := catalog{{Key: model.Key{Provider: "sandbox", Model: "echo"}}}
	m := metrics.New()
	llm := m.InstrumentLLM(answer{cat}, cat)
	ctx := context.Background()
	org := func(name, mod string) ports.LLMRequest {
		return ports.LLMRequest{Model: model.Key{Provider: name, Model: mod}, OrgID: "org-1",
			Credential: &ports.Credential{KeyID: "p1", Endpoint: &ports.Endpoint{ProviderID: "p1", Type: "openai_compatible"}}}
	}
	call := func(req ports.LLMRequest) {
		_, _ = llm.Generate(ctx, req)
	}
	call(ports.LLMRequest{Model: model.Key{Provider: "sandbox", Model: "echo"}})
	call(org("acme-secret-provider", "acme-secret-model"))
	call(ports.LLMRequest{Model: model.Key{Provider: "tenant-chosen", Model: "x"}}) // reached the registry unresolved
	call(ports.LLMRequest{Model: model.Key{Provider: "sandbox", Model: "tenant-typo"}})
	m.ObserveRequest("GET", "/api/records/{id}", 200, time.Millisecond)
	m.ObserveRequest("FOO-tenant-method", "unmatched", 405, time.Millisecond)
	_, body := scrape(t, m.Handler(""), "")
	for _, secret := range []string{"acme-secret", "tenant-chosen", "tenant-typo", "FOO-tenant-method"} {
		is.True(!strings.Contains(body, secret)) // a tenant's name in a label
	}
	for _, want := range []string{
		`enrich_llm_call_duration_seconds_count{model="echo",provider="sandbox"} 1`,
		`enrich_llm_call_duration_seconds_count{model="other",provider="org:openai_compatible"} 1`,
		`enrich_llm_call_duration_seconds_count{model="other",provider="other"} 1`,
		`enrich_llm_call_duration_seconds_count{model="other",provider="sandbox"} 1`,
		`enrich_llm_errors_total{kind="unknown_model",model="other",provider="other"} 1`,
		`enrich_http_request_duration_seconds_count{method="other",route="unmatched",status="405"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// Many more names: the same series, more counts.
	before := map[string]int{}
	families := []string{"enrich_llm_call_duration_seconds_count", "enrich_llm_tokens_total", "enrich_llm_errors_total",
		"enrich_http_request_duration_seconds_count"}
	for _, f := range families {
		before[f] = series(body, f)
	}
	for i := range 200 {
		call(org(fmt.Sprintf("name-%d", i), fmt.Sprintf("model-%d", i)))
		call(ports.LLMRequest{Model: model.Key{Provider: fmt.Sprintf("p%d", i), Model: "m"}})
		m.ObserveRequest(fmt.Sprintf("M%d", i), "unmatched", 405, time.Millisecond)
	}
	_, body = scrape(t, m.Handler(""), "")
	for _, f := range families {
		is.Equal(series(body, f), before[f]) // new names added series
	}
	is.True(strings.Contains(body, `enrich_llm_call_duration_seconds_count{model="other",provider="org:openai_compatible"} 201`))
}

// TestMetricsToken: with a token, /metrics answers 401 to a request
// without the bearer token or with another one; without a token it is
// open.
func TestMetricsToken(t *testing.T) {
	m := metrics.New()
	for _, tt := range []struct {
		name, token, auth string
		status            int
	}{
		{"open without a token", "", "", 200},
		{"open without a token, whatever is sent", "", "Bearer anything", 200},
		{"no header", "s3cret-metrics-token", "", 401},
		{"wrong token", "s3cret-metrics-token", "Bearer s3cret-metrics-tokeN", 401},
		{"a prefix of the token", "s3cret-metrics-token", "Bearer s3cret", 401},
		{"not bearer", "s3cret-metrics-token", "Basic s3cret-metrics-token", 401},
		{"empty bearer", "s3cret-metrics-token", "Bearer ", 401},
		{"the token", "s3cret-metrics-token", "Bearer s3cret-metrics-token", 200},
		{"the token, scheme in lower case", "s3cret-metrics-token", "bearer s3cret-metrics-token", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			st, body := scrape(t, m.Handler(tt.token), tt.auth)
			is.Equal(st, tt.status)
			if st == 401 {
				is.True(!strings.Contains(body, "go_goroutines"))
			} else {
				is.True(strings.Contains(body, "go_goroutines"))
			}
		})
	}
}
