package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestOperatorQuota (issue 27, finding 2): an organization's calls through
// the operator's keys (here the environment's key of provider "paid") stop
// at its daily quota, on every door that spends, with 429, Retry-After and
// a code naming the quota; its own key for the same provider keeps working,
// and another organization is not affected.
func TestOperatorQuota(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres
		}
		t.Run(b.name, func(t *testing.T) { testOperatorQuota(t, b.dsn(t)) })
	}
}

func testOperatorQuota(t *testing.T, dsn string) {
	const envKey, ownKey = "sk-operator-env-key-1111", "sk-organization-own-2222"
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(envKey, ownKey))
	cfg := testConfig(dsn)
	cfg.Providers = []llm.ProviderConfig{{Name: "paid", Type: "openai", BaseURL: fake.URL(), APIKey: envKey, Models: []string{"m"}}}
	cfg.QuotaCallsPerDay = enrich.Quota(3) // one run of companySchema (3 domains)
	cfg.QuotaTokensPerDay = enrich.Quota(0)
	s := start(t, cfg)

	// post answers a route's status, error code and Retry-After.
	post := func(cred, path string, body obj) (int, string, string) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", s.url+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		setCred(req, cred)
		resp, err := s.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e struct{ Code string }
		_ = json.Unmarshal(b, &e)
		return resp.StatusCode, e.Code, resp.Header.Get("Retry-After")
	}
	enrichBody := func(schemaID string) obj {
		return obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"paid::m"}, "strategy": "multi_expertise"}
	}
	ten := s.register("quota@example.com")
	schemaID := s.createSchema(ten.key, "Company", companySchema)

	is := is.New(t)
	evs := s.follow(ten.key, s.startJob(ten.key, enrichBody(schemaID)), "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(fake.Requests(), 3)
	time.Sleep(1100 * time.Millisecond) // the quota's read of the ledger is reused for a second

	// Every door that spends through the operator's key is refused now,
	// and the provider hears nothing more.
	for _, tt := range []struct {
		path string
		body obj
	}{
		{"/api/single/enrich/stream", enrichBody(schemaID)},
		{"/api/single/enrich/sync", enrichBody(schemaID)},
		{"/api/batch/start", obj{"entities": []obj{{"name": "Acme"}, {"name": "Beta"}}, "schema_id": schemaID, "models": []string{"paid::m"}}},
		{"/api/schema/sample/generate/sync", obj{"entity_type": "company", "sample_count": 2, "model": "paid::m"}},
		{"/api/schema/sample/generate/stream", obj{"entity_type": "company", "sample_count": 2, "model": "paid::m"}},
		{"/api/schema/generate/sync", obj{"entity_samples": []obj{{"name": "Acme"}, {"name": "Beta"}}, "model": "paid::m"}},
		{"/api/schema/generate/stream", obj{"entity_samples": []obj{{"name": "Acme"}, {"name": "Beta"}}, "model": "paid::m"}},
		{"/api/schema/analyze-sample", obj{"sample_json": obj{"name": "Acme"}, "model": "paid::m"}},
	} {
		st, code, retry := post(ten.key, tt.path, tt.body)
		if st != 429 || code != "quota_calls_per_day_exceeded" {
			t.Errorf("%s: %d %s, want 429 quota_calls_per_day_exceeded", tt.path, st, code)
			continue
		}
		secs, err := strconv.Atoi(retry)
		now := time.Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		if err != nil || secs < 1 || secs > int(midnight.Sub(now).Seconds())+2 {
			t.Errorf("%s: Retry-After %q, want the seconds until the next UTC midnight", tt.path, retry)
		}
	}
	is.Equal(fake.Requests(), 3)

	// Another organization has its own quota.
	other := s.register("quota-other@example.com")
	otherSchema := s.createSchema(other.key, "Company", companySchema)
	is.Equal(last(s.follow(other.key, s.startJob(other.key, enrichBody(otherSchema)), "")).Name, "completed")
	is.Equal(fake.Requests(), 6)

	// The organization's own key for the same provider is not limited by
	// the operator's quota.
	var k struct{ ID string }
	is.Equal(s.call("POST", "/api/org-keys", ten.key, obj{"provider": "paid", "api_key": ownKey, "name": "own"}, &k), 201)
	for range 2 {
		evs = s.follow(ten.key, s.startJob(ten.key, enrichBody(schemaID)), "")
		is.Equal(last(evs).Name, "completed")
	}
	is.Equal(fake.Requests(), 12)
	for _, r := range fake.AllRequests()[6:] {
		is.Equal(r.Authorization, "Bearer "+ownKey)
	}
	entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
	is.NoErr(err)
	sources := map[string]int{}
	for _, e := range entries {
		sources[e.KeySource]++
	}
	is.Equal(sources, map[string]int{"global": 3, "organization": 6})
}

// TestOperatorQuotaMidRun (issue 27): a job admitted at submit that crosses
// the operator's quota while it runs makes no call past it: the provider
// never hears it, and the job ends (failed, with the quota's code) instead
// of hanging. The organization's own key keeps working afterwards.
func TestOperatorQuotaMidRun(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres
		}
		t.Run(b.name, func(t *testing.T) { testOperatorQuotaMidRun(t, b.dsn(t)) })
	}
}

func testOperatorQuotaMidRun(t *testing.T, dsn string) {
	const envKey, ownKey = "sk-operator-env-key-3333", "sk-organization-own-4444"
	// The finance domain's first answer comes late and is not JSON: its
	// retry, after the other two domains' calls are answered and charged
	// and the quota's one-second reuse of the ledger has passed, is the
	// quota's 3rd call.
	var slow atomic.Bool
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(envKey, ownKey), fakeopenai.WithResponder(func(req fakeopenai.ChatRequest) (string, int) {
		if strings.Contains(fmt.Sprint(req.Schema), "revenue") && slow.CompareAndSwap(false, true) {
			time.Sleep(2500 * time.Millisecond)
			return "Sure! Here is the data you asked for, but not as JSON.", 0
		}
		return fakeopenai.DefaultAnswer(req), 0
	}))
	cfg := testConfig(dsn)
	cfg.Providers = []llm.ProviderConfig{{Name: "paid", Type: "openai", BaseURL: fake.URL(), APIKey: envKey, Models: []string{"m"}}}
	cfg.QuotaCallsPerDay = enrich.Quota(2)
	cfg.QuotaTokensPerDay = enrich.Quota(0)
	s := start(t, cfg)
	ten := s.register("quota-midrun@example.com")
	schemaID := s.createSchema(ten.key, "Company", companySchema)
	body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"paid::m"}, "strategy": "multi_expertise"}

	is := is.New(t)
	// Admitted (nothing spent yet); its 3 domains' first calls are within
	// the quota when they are made, the retry is not.
	jobID := s.startJob(ten.key, body)
	evs := s.follow(ten.key, jobID, "") // the harness's client gives up on a hung stream
	is.Equal(last(evs).Name, "failed")
	is.Equal(last(evs).Data["error_code"], "quota_calls_per_day_exceeded")
	is.Equal(fake.Requests(), 3) // the call past the quota was never made

	// The organization's own key is not limited by the operator's quota.
	var k struct{ ID string }
	is.Equal(s.call("POST", "/api/org-keys", ten.key, obj{"provider": "paid", "api_key": ownKey, "name": "own"}, &k), 201)
	is.Equal(last(s.follow(ten.key, s.startJob(ten.key, body), "")).Name, "completed")
	is.Equal(fake.Requests(), 6)
	for _, r := range fake.AllRequests()[3:] {
		is.Equal(r.Authorization, "Bearer "+ownKey)
	}
}
