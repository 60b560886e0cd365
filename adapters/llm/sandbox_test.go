package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/ports"
)

func sandboxRegistry(t testing.TB, latency time.Duration) *llm.Registry {
	t.Helper()
	r, err := llm.NewRegistry(llm.Config{Sandbox: true, SandboxLatency: latency})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSandboxValidAndDeterministic(t *testing.T) {
	r := sandboxRegistry(t, 0)
	for _, m := range []string{"sandbox::echo", "sandbox::alt", "sandbox::slow"} {
		t.Run(m, func(t *testing.T) {
			if m == "sandbox::slow" && testing.Short() {
				t.Skip("2 s latency")
			}
			is := is.New(t)
			req := request(t, m, companySchema, acme)
			first, err := r.Generate(context.Background(), req)
			is.NoErr(err)
			is.NoErr(validate(t, req.Schema, first.Text))
			is.True(first.InputTokens > 0 && first.OutputTokens > 0)
			if m == "sandbox::slow" {
				return
			}
			for range 5 {
				again, err := r.Generate(context.Background(), request(t, m, companySchema, acme))
				is.NoErr(err)
				is.Equal(again, first) // byte-identical text, same usage
			}
		})
	}
}

func TestSandboxEchoAndAltDisagree(t *testing.T) {
	is := is.New(t)
	r := sandboxRegistry(t, 0)
	echo, err := r.Generate(context.Background(), request(t, "sandbox::echo", companySchema, acme))
	is.NoErr(err)
	alt, err := r.Generate(context.Background(), request(t, "sandbox::alt", companySchema, acme))
	is.NoErr(err)
	a, _ := enrichment.ParseAnswer(echo.Text)
	b, _ := enrichment.ParseAnswer(alt.Text)
	is.Equal(a["name"], "Acme Corp") // known attributes agree
	is.Equal(b["name"], "Acme Corp")
	is.Equal(a["industry"], b["industry"])
	is.True(a["employees"] != b["employees"] || a["revenue"] != b["revenue"]) // generated ones do not
}

func TestSandboxFlaky(t *testing.T) {
	is := is.New(t)
	r := sandboxRegistry(t, 0)
	req := request(t, "sandbox::flaky", companySchema, acme)
	for range 3 { // every new conversation starts with a bad answer
		resp, err := r.Generate(context.Background(), req)
		is.NoErr(err)
		_, perr := enrichment.ParseAnswer(resp.Text)
		is.True(perr != nil)
	}
	first, _ := r.Generate(context.Background(), req)
	req.Messages = enrichment.Retry(req.Messages, first.Text, errors.New("answer is not a JSON object"))
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text)) // the retry succeeds
}

func TestSandboxBroken(t *testing.T) {
	is := is.New(t)
	r := sandboxRegistry(t, 0)
	req := request(t, "sandbox::broken", companySchema, acme)
	for range 3 {
		resp, err := r.Generate(context.Background(), req)
		is.NoErr(err)
		_, perr := enrichment.ParseAnswer(resp.Text)
		is.NoErr(perr) // parseable
		verr := validate(t, req.Schema, resp.Text)
		is.True(verr != nil) // but never valid
		req.Messages = enrichment.Retry(req.Messages, resp.Text, verr)
	}
}

func TestSandboxLatencyHonoursContext(t *testing.T) {
	tests := []struct {
		name    string
		model   string
		latency time.Duration
		ctx     func() (context.Context, context.CancelFunc)
		want    error
	}{
		{"slow past deadline", "sandbox::slow", 0, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		}, ports.ErrLLMTimeout},
		{"configured latency cancelled", "sandbox::echo", time.Minute, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"cancelled before", "sandbox::echo", 0, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := sandboxRegistry(t, tt.latency)
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := r.Generate(ctx, request(t, tt.model, companySchema, acme))
			is.True(errors.Is(err, tt.want))
			is.True(time.Since(start) < time.Second)
		})
	}
}

func TestSandboxLatencyAdded(t *testing.T) {
	is := is.New(t)
	r := sandboxRegistry(t, 80*time.Millisecond)
	start := time.Now()
	_, err := r.Generate(context.Background(), request(t, "sandbox::echo", companySchema, acme))
	is.NoErr(err)
	is.True(time.Since(start) >= 80*time.Millisecond)
}

// TestSandboxSearch: sandbox::search declares web search and answers
// web-search calls offline, valid, with one search per call (priced per
// search); without web search it makes none; a sandbox model that cannot
// search is refused as a real one is.
func TestSandboxSearch(t *testing.T) {
	is := is.New(t)
	r := sandboxRegistry(t, 0)
	info, err := r.Model(key("sandbox::search"))
	is.NoErr(err)
	is.True(info.Sandbox && info.WebSearch && info.WebSearchTool)
	is.Equal(info.Price.PerSearch, llm.SandboxSearchPrice)
	req := request(t, "sandbox::search", companySchema, acme)
	req.WebSearch = true
	resp, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.NoErr(validate(t, req.Schema, resp.Text))
	is.Equal(resp.Searches, 1)
	is.True(resp.InputTokens > 0 && resp.OutputTokens > 0)
	again, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(again, resp) // deterministic

	req.WebSearch = false
	plain, err := r.Generate(context.Background(), req)
	is.NoErr(err)
	is.Equal(plain.Searches, 0)
	is.Equal(plain.Text, resp.Text) // the same answer, without searching

	echo := request(t, "sandbox::echo", companySchema, acme)
	echo.WebSearch = true
	_, err = r.Generate(context.Background(), echo)
	is.True(errors.Is(err, ports.ErrInvalid))
	info, err = r.Model(key("sandbox::echo"))
	is.NoErr(err)
	is.True(!info.WebSearch)
}
