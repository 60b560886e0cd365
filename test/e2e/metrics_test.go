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
