package e2e_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// syncBuffer is a log sink that tests read while the service writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The secrets of TestProviderKeys. The fake accepts the good ones only.
const (
	goodA = "sk-e2e-good-key-aaaa-1111"
	goodB = "sk-e2e-good-key-bbbb-2222"
	goodC = "sk-e2e-good-key-cccc-3333"
	goodD = "sk-e2e-good-key-dddd-4444"
	badX  = "sk-e2e-refused-key-xxxx-9999"
)

var secrets = []string{goodA, goodB, goodC, goodD, badX}

// TestProviderKeys runs organizations' and global provider keys through the
// HTTP API against a fake OpenAI-compatible provider that has no key of its
// own: a run with no key is refused before it starts; keys are tested; a
// refused key leaves rotation and the job moves on; a 429 moves the job to
// the next key without spending its attempts; a job sticks to its key;
// global keys are the fallback; and no plaintext key ever shows in a
// response, the logs or the database.
func TestProviderKeys(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres; its runs are slow
		}
		t.Run(b.name, func(t *testing.T) { testProviderKeys(t, b.dsn(t)) })
	}
}

func testProviderKeys(t *testing.T, dsn string) {
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(goodA, goodB, goodC, goodD))
	limited := "Bearer " + goodC
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		if req.Authorization == limited {
			return "slow down", http.StatusTooManyRequests
		}
		return fakeopenai.DefaultAnswer(req), 0
	})
	logs := &syncBuffer{}
	cfg := testConfig(dsn)
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Providers = []llm.ProviderConfig{{Name: "paid", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}}}
	s := start(t, cfg)

	// Every response body, to grep for secrets at the end.
	var bodies []string
	call := func(method, path, cred string, body any, out any) int {
		t.Helper()
		var raw json.RawMessage
		st := s.call(method, path, cred, body, &raw)
		bodies = append(bodies, string(raw))
		if out != nil && len(raw) > 0 {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
		}
		return st
	}
	type keyJSON struct {
		ID                string    `json:"id"`
		KeySuffix         *string   `json:"key_suffix"`
		Source            string    `json:"source"`
		IsEnabled         bool      `json:"is_enabled"`
		DisabledReason    *string   `json:"disabled_reason"`
		HealthCheckStatus string    `json:"health_check_status"`
		RateLimitedUntil  *string   `json:"rate_limited_until"`
		TotalRequests     int       `json:"total_requests"`
		TotalCostUSD      float64   `json:"total_cost_usd"`
		CreatedAt         time.Time `json:"created_at"`
	}
	addKey := func(cred, path, secret string) keyJSON {
		t.Helper()
		var k keyJSON
		if st := call("POST", path, cred, obj{"provider": "paid", "api_key": secret, "name": "k"}, &k); st != 201 {
			t.Fatalf("add key: %d", st)
		}
		clockPast(k.CreatedAt) // creation order decides among never-used keys
		return k
	}
	listKeys := func(cred string) map[string]keyJSON {
		t.Helper()
		var ks []keyJSON
		if st := call("GET", "/api/org-keys", cred, nil, &ks); st != 200 {
			t.Fatalf("list keys: %d", st)
		}
		out := map[string]keyJSON{}
		for _, k := range ks {
			out[k.ID] = k
		}
		return out
	}
	// run starts a job on paid::m, follows it, and returns its events and
	// the Authorization of each request the fake got meanwhile.
	run := func(ten tenant, schemaID string) ([]event, []string) {
		t.Helper()
		before := fake.Requests()
		var out struct {
			JobID string `json:"job_id"`
		}
		if st := call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{"paid::m"}, "strategy": "multi_expertise"}, &out); st != 200 {
			t.Fatalf("start: %d", st)
		}
		evs := s.follow(ten.key, out.JobID, "")
		var auths []string
		for _, r := range fake.AllRequests()[before:] {
			auths = append(auths, r.Authorization)
		}
		return evs, auths
	}
	newTenant := func(name string) (tenant, string) {
		ten := s.register(name + "@example.com")
		return ten, s.createSchema(ten.key, "Company", companySchema)
	}

	t.Run("a run with no usable key is refused before it starts", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("nokey")
		var e struct{ Detail, Code string }
		st := call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{"paid::m"}}, &e)
		is.Equal(st, 400)
		is.Equal(e.Code, "no_usable_provider_key")
		is.True(strings.Contains(e.Detail, "paid")) // names the provider
		is.Equal(fake.Requests(), 0)
		// The sandbox needs no key and still runs.
		evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}}), "")
		is.Equal(last(evs).Name, "completed")
	})

	t.Run("keys are shown by their last 4 characters and tested", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("tested")
		bad := addKey(ten.key, "/api/org-keys", badX)
		good := addKey(ten.key, "/api/org-keys", goodA)
		is.Equal(*bad.KeySuffix, "9999")
		is.Equal(bad.Source, "organization")
		is.Equal(bad.HealthCheckStatus, "unchecked")
		is.True(bad.IsEnabled)

		var c struct {
			Status  string
			IsValid bool `json:"is_valid"`
			Key     keyJSON
		}
		is.Equal(call("POST", "/api/org-keys/"+bad.ID+"/health-check", ten.key, nil, &c), 200)
		is.Equal(c.Status, "invalid")
		is.True(!c.IsValid)
		is.True(!c.Key.IsEnabled)
		is.Equal(*c.Key.DisabledReason, "invalid_key")
		is.Equal(call("POST", "/api/org-keys/"+good.ID+"/health-check", ten.key, nil, &c), 200)
		is.Equal(c.Status, "valid")

		// Re-enable does not bring a refused key back; a new secret does.
		is.Equal(call("POST", "/api/org-keys/"+bad.ID+"/enable", ten.key, nil, &c.Key), 200)
		is.True(!c.Key.IsEnabled)
		evs, auths := run(ten, schemaID)
		is.Equal(last(evs).Name, "completed")
		for _, a := range auths {
			is.Equal(a, "Bearer "+goodA) // the refused key is out of rotation
		}
		for _, ev := range find(evs, "expertise_completed") {
			is.Equal(ev.Data["api_key_source"], "organization")
		}
		// What each key's calls cost, from the ledger: all of it on the
		// good key, the organization's whole spend.
		ks := listKeys(ten.key)
		is.True(ks[good.ID].TotalCostUSD > 0)
		is.Equal(ks[bad.ID].TotalCostUSD, 0.0)
		var spend struct {
			TotalCost float64 `json:"total_cost"`
		}
		is.Equal(call("GET", "/api/costs/summary", ten.key, nil, &spend), 200)
		is.True(math.Abs(ks[good.ID].TotalCostUSD-spend.TotalCost) < 1e-9)
		var k keyJSON
		is.Equal(call("PATCH", "/api/org-keys/"+bad.ID, ten.key, obj{"api_key": goodB, "name": "replaced"}, &k), 200)
		is.Equal(*k.KeySuffix, "2222")
		is.True(k.IsEnabled)
		is.Equal(k.HealthCheckStatus, "unchecked")
		// Delete removes the key for good: a second delete finds nothing.
		is.Equal(call("DELETE", "/api/org-keys/"+bad.ID, ten.key, nil, nil), 204)
		is.Equal(call("DELETE", "/api/org-keys/"+bad.ID, ten.key, nil, nil), 404)
		is.Equal(len(listKeys(ten.key)), 1)
		// The reference's provider_id: a provider's name is accepted; a
		// numeric id is a 400 naming the field, never "unknown field".
		var byID keyJSON
		is.Equal(call("POST", "/api/org-keys", ten.key, obj{"provider_id": "paid", "api_key": "sk-by-provider-id-3333"}, &byID), 201)
		is.Equal(*byID.KeySuffix, "3333")
		is.Equal(call("DELETE", "/api/org-keys/"+byID.ID, ten.key, nil, nil), 204)
		var e struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		}
		is.Equal(call("POST", "/api/org-keys", ten.key, obj{"provider_id": 7, "api_key": "sk-numeric-4444"}, &e), 400)
		is.Equal(e.Field, "provider_id")
		// Another organization cannot see or touch the key.
		other, _ := newTenant("stranger")
		is.Equal(call("POST", "/api/org-keys/"+good.ID+"/health-check", other.key, nil, nil), 404)
		// Deleting another organization's key answers 404, word for word as
		// a key that never existed, and the key stays.
		var foreign, never json.RawMessage
		is.Equal(call("DELETE", "/api/org-keys/"+good.ID, other.key, nil, &foreign), 404)
		is.Equal(call("DELETE", "/api/org-keys/"+"00000000-0000-0000-0000-000000000000", other.key, nil, &never), 404)
		is.Equal(strings.Replace(string(foreign), good.ID, "ID", 1), strings.Replace(string(never), "00000000-0000-0000-0000-000000000000", "ID", 1))
		is.Equal(len(listKeys(ten.key)), 1)
	})

	t.Run("an authentication failure takes the key out of rotation and the job moves on", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("refused")
		x := addKey(ten.key, "/api/org-keys", badX) // first in rotation: never used, oldest
		addKey(ten.key, "/api/org-keys", goodB)
		evs, auths := run(ten, schemaID)
		is.Equal(last(evs).Name, "completed")
		is.Equal(len(find(evs, "attempt")), 3) // one per expertise: the switch spent no attempt
		is.Equal(auths[0], "Bearer "+badX)
		is.Equal(auths[len(auths)-1], "Bearer "+goodB)
		k := listKeys(ten.key)[x.ID]
		is.Equal(k.HealthCheckStatus, "invalid")
		is.Equal(*k.DisabledReason, "invalid_key")
		// The ledger has every call of the job, the refused ones too.
		entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
		is.NoErr(err)
		refused, ok := 0, 0
		for _, e := range entries {
			is.Equal(e.KeySource, "organization")
			is.Equal(e.Model, "paid::m")
			switch e.Outcome {
			case "key_refused":
				refused++
				is.Equal(e.KeyID, x.ID)
			case "ok":
				ok++
				is.True(e.KeyID != x.ID)
				is.True(e.InputTokens > 0 && e.Cost > 0)
			}
		}
		is.True(refused >= 1)
		is.Equal(ok, 3)
		// The next run does not try it again.
		_, auths = run(ten, schemaID)
		for _, a := range auths {
			is.Equal(a, "Bearer "+goodB)
		}
	})

	t.Run("a 429 moves the job to the next key without losing it", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("limited")
		p := addKey(ten.key, "/api/org-keys", goodC) // the fake rate-limits this one
		addKey(ten.key, "/api/org-keys", goodD)
		evs, auths := run(ten, schemaID)
		is.Equal(last(evs).Name, "completed")
		is.Equal(len(find(evs, "attempt")), 3)
		is.Equal(auths[0], "Bearer "+goodC)
		is.Equal(auths[len(auths)-1], "Bearer "+goodD)
		k := listKeys(ten.key)[p.ID]
		is.True(k.RateLimitedUntil != nil) // it rests for the Retry-After
		is.True(k.IsEnabled)
		is.Equal(k.HealthCheckStatus, "unchecked") // not refused
	})

	t.Run("a health check the provider rate-limits rests the key", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("checklimited")
		p := addKey(ten.key, "/api/org-keys", goodC) // the fake rate-limits this one
		var c struct {
			Status  string
			Message *string
			IsValid bool `json:"is_valid"`
			Key     keyJSON
		}
		is.Equal(call("POST", "/api/org-keys/"+p.ID+"/health-check", ten.key, nil, &c), 200)
		is.Equal(c.Status, "error") // the provider could not say
		is.True(!c.IsValid)
		is.True(c.Message != nil && strings.Contains(*c.Message, "rate limiting"))
		is.True(c.Key.RateLimitedUntil != nil) // it rests, as after a call's 429
		is.True(c.Key.IsEnabled)
		is.Equal(c.Key.HealthCheckStatus, "unchecked") // its health is unknown still
		// A run meanwhile is refused before it starts, and says until when.
		before := fake.Requests()
		var e struct{ Code, Detail string }
		is.Equal(call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{"paid::m"}}, &e), 400)
		is.Equal(e.Code, "no_usable_provider_key")
		is.True(strings.Contains(e.Detail, "rate limited until"))
		is.Equal(fake.Requests(), before)
	})

	t.Run("a job sticks to its key; the next job takes the least recently used", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("sticky")
		addKey(ten.key, "/api/org-keys", goodA)
		addKey(ten.key, "/api/org-keys", goodB)
		var used []string
		for range 2 {
			evs, auths := run(ten, schemaID)
			is.Equal(last(evs).Name, "completed")
			is.Equal(len(auths), 3)
			for _, a := range auths {
				is.Equal(a, auths[0]) // every call of the job on one key
			}
			used = append(used, auths[0])
		}
		is.True(used[0] != used[1]) // rotation between jobs
	})

	t.Run("global keys are the fallback", func(t *testing.T) {
		is := is.New(t)
		admin := s.register("admin@example.com")
		ten, schemaID := newTenant("global")
		is.Equal(call("GET", "/api/global-keys", ten.key, nil, nil), 403)
		g := addKey(admin.token, "/api/global-keys", goodB)
		is.Equal(g.Source, "global")
		evs, auths := run(ten, schemaID)
		is.Equal(last(evs).Name, "completed")
		is.Equal(auths[0], "Bearer "+goodB)
		for _, ev := range find(evs, "expertise_completed") {
			is.Equal(ev.Data["api_key_source"], "global")
		}
		entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
		is.NoErr(err)
		is.Equal(len(entries), 3)
		for _, e := range entries {
			is.Equal(e.KeySource, "global")
			is.Equal(e.KeyID, g.ID)
		}
		var all []struct{ Status string }
		is.Equal(call("POST", "/api/global-keys/test-all", admin.token, nil, &all), 200)
		is.True(len(all) >= 1)
		// Disabled, the global key no longer serves: the run is refused.
		is.Equal(call("PATCH", "/api/global-keys/"+g.ID, admin.token, obj{"is_enabled": false}, nil), 200)
		is.Equal(call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{"paid::m"}}, nil), 400)
		is.Equal(call("DELETE", "/api/global-keys/"+g.ID, admin.token, nil, nil), 204)
	})

	t.Run("refused key bodies do not echo the key", func(t *testing.T) {
		is := is.New(t)
		ten, _ := newTenant("refusals")
		for _, body := range []any{
			obj{"provider": "paid", "api_key": goodA + " " + goodB},                         // a space
			obj{"provider": "paid", "api_key": strings.Repeat(goodA, 200)},                  // too long
			obj{"provider": "nope", "api_key": goodA},                                       // unknown provider
			obj{"provider": "paid", "api_key": goodA, "extra": goodB},                       // unknown field
			obj{"provider": "paid", "api_key": goodA, "expires_at": "2001-01-01T00:00:00Z"}, // in the past
			`{"provider": "paid", "api_key": "` + goodA + `\u0000"}`,                        // a NUL
			`{"provider": "paid", "api_key": ` + `"` + goodA,                                // not JSON
		} {
			st := call("POST", "/api/org-keys", ten.key, body, nil)
			is.True(st == 400 || st == 413)
		}
		var k keyJSON
		is.Equal(call("POST", "/api/org-keys", ten.key, obj{"provider": "paid", "api_key": goodA}, &k), 201)
		is.Equal(call("PATCH", "/api/org-keys/"+k.ID, ten.key, obj{"api_key": goodB[:6] + "\t" + goodB[6:]}, nil), 400)
	})

	t.Run("no plaintext key in responses, logs or the database", func(t *testing.T) {
		for _, sec := range secrets {
			for _, b := range bodies {
				if strings.Contains(b, sec) {
					t.Errorf("a response shows %s: %s", sec, b)
				}
			}
			if strings.Contains(logs.String(), sec) {
				t.Errorf("the logs show %s", sec)
			}
		}
		if !strings.Contains(logs.String(), "provider refused a key") {
			t.Error("the refusal was not logged (is the log captured?)")
		}
		if dsn != "" {
			grepDatabase(t, dsn, secrets, "Org nokey@example.com")
		}
	})
}

// grepDatabase fails t when any row of any table of the database holds one
// of secrets as text. control is a text that some row holds, to show that
// the grep would see a secret if one were there.
func grepDatabase(t *testing.T, dsn string, secrets []string, control string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, fmt.Sprintf("%q.%q", schema, name))
	}
	rows.Close()
	checked, seen := 0, false
	for _, tbl := range tables {
		rs, err := db.QueryContext(ctx, "SELECT t::text FROM "+tbl+" t")
		if err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		for rs.Next() {
			var row string
			if err := rs.Scan(&row); err != nil {
				t.Fatal(err)
			}
			checked++
			seen = seen || strings.Contains(row, control)
			for _, sec := range secrets {
				if strings.Contains(row, sec) {
					t.Errorf("table %s holds %s", tbl, sec)
				}
			}
		}
		rs.Close()
	}
	if !seen || len(tables) < 5 {
		t.Fatalf("grep saw %d rows in %d tables, and not the control %q", checked, len(tables), control)
	}
}
