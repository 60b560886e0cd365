package e2e_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/fakeopenai"
)

// llmCallsEnded is how many calls of a model the service has seen end, from
// its metrics.
func (s *service) llmCallsEnded(provider, model string) int {
	s.t.Helper()
	_, body := scrape(s.t, s.url+"/metrics")
	prefix := fmt.Sprintf("enrich_llm_call_duration_seconds_count{model=%q,provider=%q} ", model, provider)
	for _, line := range strings.Split(body, "\n") {
		if n, ok := strings.CutPrefix(line, prefix); ok {
			v, err := strconv.Atoi(n)
			if err != nil {
				s.t.Fatalf("metrics: %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetrics: /metrics needs no credential and shows HTTP latency by route
// template and status, jobs by state, and LLM calls by provider and model.
func TestMetrics(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("metrics@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}}), "")
	is.Equal(last(evs).Name, "completed")
	s.call("GET", "/api/records/nope", ten.key, nil, nil)
	s.call("GET", "/api/no-such-route", ten.key, nil, nil)

	st, body := scrape(t, s.url+"/metrics")
	is.Equal(st, 200)
	for _, want := range []string{
		`enrich_http_request_duration_seconds_count{method="POST",route="/api/single/enrich/stream",status="200"} 1`,
		`enrich_http_request_duration_seconds_count{method="GET",route="/api/records/{id}",status="404"} 1`,
		`enrich_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 1`,
		`enrich_jobs_ended_total{code="",state="completed",type="enrichment"} 1`,
		`enrich_jobs_running 0`,
		`enrich_llm_call_duration_seconds_count{model="echo",provider="sandbox"}`,
		`enrich_llm_tokens_total{direction="input",model="echo",provider="sandbox"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	is.True(!strings.Contains(body, "/api/records/nope")) // routes by template: bounded labels

	// On its own address, /metrics leaves the API.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig("")
	cfg.MetricsAddr = addr
	s2 := start(t, cfg)
	st, _ = scrape(t, s2.url+"/metrics")
	is.Equal(st, 404)
	st, body = scrape(t, "http://"+addr+"/metrics")
	is.Equal(st, 200)
	is.True(strings.Contains(body, "enrich_jobs_running"))
}

func scrapeWith(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsNamesNoTenant: an organization's own provider, with a name and
// a model it chose, is called in enrichment; /metrics never shows either
// name (the calls are labelled org:openai_compatible, model other), and
// more providers with other names add no series. With ENRICH_METRICS_TOKEN
// set, /metrics answers 401 without the bearer token, on the API's address
// and on its own.
func TestMetricsNamesNoTenant(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithModels("acme-private-model"))
	const token = "metrics-e2e-token-5e1f"
	cfg := testConfig("")
	cfg.OrgProviderAllowLoopbackPorts = []uint16{loopbackPort(t, fake.URL())}
	cfg.MetricsToken = token
	s := start(t, cfg)
	ten := s.register("metrics-names@example.com")
	schemaID := s.createSchema(ten.key, "Company", companySchema)
	enrichWith := func(name string) {
		t.Helper()
		if st := s.call("POST", "/api/providers", ten.key, obj{"name": name, "base_url": fake.URL(),
			"models": []obj{{"name": "acme-private-model"}}}, nil); st != 201 {
			t.Fatalf("provider %s: %d", name, st)
		}
		var res struct {
			Success bool `json:"success"`
		}
		st := s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{name + "::acme-private-model"}}, &res)
		if st != 200 || !res.Success {
			t.Fatalf("enrich with %s: %d %v", name, st, res.Success)
		}
	}
	enrichWith("acme-secret-llm")

	// The token gate.
	st, body := scrapeWith(t, s.url+"/metrics", "")
	is.Equal(st, 401)
	is.True(!strings.Contains(body, "enrich_"))
	st, _ = scrapeWith(t, s.url+"/metrics", "Bearer not-"+token)
	is.Equal(st, 401)
	st, body = scrapeWith(t, s.url+"/metrics", "Bearer "+token)
	is.Equal(st, 200)
	is.True(strings.Contains(body, `enrich_llm_call_duration_seconds_count{model="other",provider="org:openai_compatible"}`))
	for _, name := range []string{"acme-secret-llm", "acme-private-model"} {
		is.True(!strings.Contains(body, name)) // a tenant's name in /metrics
	}
	count := func(body string) int {
		n := 0
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, "enrich_llm_") {
				n++
			}
		}
		return n
	}
	before := count(body)

	// More names, the same series.
	for i := range 5 {
		enrichWith(fmt.Sprintf("tenant-name-%d", i))
	}
	_, body = scrapeWith(t, s.url+"/metrics", "Bearer "+token)
	is.Equal(count(body), before)
	is.True(!strings.Contains(body, "tenant-name-"))

	// On its own address, the same gate.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	addr := ln.Addr().String()
	ln.Close()
	cfg2 := testConfig("")
	cfg2.MetricsAddr = addr
	cfg2.MetricsToken = token
	s2 := start(t, cfg2)
	st, _ = scrapeWith(t, s2.url+"/metrics", "Bearer "+token) // the API answers once the metrics listen
	is.Equal(st, 404)
	st, _ = scrapeWith(t, "http://"+addr+"/metrics", "")
	is.Equal(st, 401)
	st, _ = scrapeWith(t, "http://"+addr+"/metrics", "Bearer "+token)
	is.Equal(st, 200)
}
