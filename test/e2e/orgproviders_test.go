package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/fakeopenai"
)

// orgEndpointKey is the key of the organization's endpoint in
// TestOrgProviders; it must never show in a response or the database.
const orgEndpointKey = "sk-e2e-org-endpoint-key-7777"

// TestOrgProviders runs an organization's own OpenAI-compatible provider
// through the HTTP API: created (with field-named refusals), listed, tested,
// its models discovered and added, called in enrichment as
// <name>::<model> by that organization only, shown in its options,
// disabled and deleted. A provider pointing at a loopback server that the
// SSRF guard does not let through is refused (400 base_url_refused) and the
// server sees no request at all. The test's fake is reached only because
// the configuration lets its loopback port through
// (ENRICH_ORG_PROVIDER_ALLOW_LOOPBACK_PORTS).
func TestOrgProviders(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres; its runs are slow
		}
		t.Run(b.name, func(t *testing.T) { testOrgProviders(t, b.dsn(t)) })
	}
}

func loopbackPort(t *testing.T, raw string) uint16 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}

type orgProviderJSON struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	BaseURL    string  `json:"base_url"`
	HasAPIKey  bool    `json:"has_api_key"`
	KeySuffix  *string `json:"key_suffix"`
	IsEnabled  bool    `json:"is_enabled"`
	ModelCount int     `json:"model_count"`
	Models     []struct {
		ID       string   `json:"id"`
		Name     string   `json:"name"`
		ModelKey string   `json:"model_key"`
		Source   string   `json:"source"`
		Input    *float64 `json:"input_price"`
	} `json:"models"`
}

func testOrgProviders(t *testing.T, dsn string) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey(orgEndpointKey), fakeopenai.WithModels("llama3", "qwen3"))
	var victimHits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		victimHits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer victim.Close()
	logs := &syncBuffer{}
	cfg := testConfig(dsn)
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.OrgProviderAllowLoopbackPorts = []uint16{loopbackPort(t, fake.URL())}
	s := start(t, cfg)
	home := s.register("home@example.com")
	other := s.register("other@example.com")
	schemaID := s.createSchema(home.key, "Company", companySchema)

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
	type errJSON struct{ Detail, Code, Field string }

	// Refusals name the field; nothing is stored.
	for _, tt := range []struct {
		name   string
		body   any
		status int
		field  string
	}{
		{"upper-case name", obj{"name": "Mine", "base_url": fake.URL()}, 400, "name"},
		{"name too long", obj{"name": strings.Repeat("a", 65), "base_url": fake.URL()}, 400, "name"},
		{"NUL in name", `{"name":"mi\u0000ne","base_url":"https://x.example.com"}`, 400, "name"},
		{"relative base URL", obj{"name": "mine", "base_url": "llm.example.com/v1"}, 400, "base_url"},
		{"ftp base URL", obj{"name": "mine", "base_url": "ftp://llm.example.com"}, 400, "base_url"},
		{"base URL with credentials", obj{"name": "mine", "base_url": "https://u:p@llm.example.com"}, 400, "base_url"},
		{"empty model name", obj{"name": "mine", "base_url": fake.URL(), "models": []obj{{"name": ""}}}, 400, "models.0.name"},
		{"model name with a space", obj{"name": "mine", "base_url": fake.URL(), "models": []obj{{"name": "a"}, {"name": "a b"}}}, 400, "models.1.name"},
		{"unknown field", obj{"name": "mine", "base_url": fake.URL(), "colour": "red"}, 400, "colour"},
		{"the sandbox's name", obj{"name": "sandbox", "base_url": fake.URL()}, 409, "name"},
	} {
		var e errJSON
		if st := call("POST", "/api/providers", home.key, tt.body, &e); st != tt.status || e.Field != tt.field {
			t.Errorf("%s: got %d field %q (%s), want %d field %q", tt.name, st, e.Field, e.Detail, tt.status, tt.field)
		}
	}
	var list []orgProviderJSON
	is.Equal(call("GET", "/api/providers?include_inactive=true", home.key, nil, &list), 200)
	is.Equal(len(list), 0)

	// Created with its key: only the last 4 characters come back.
	var mine orgProviderJSON
	is.Equal(call("POST", "/api/providers", home.key, obj{"name": "mine", "base_url": fake.URL(), "api_key": orgEndpointKey}, &mine), 201)
	is.True(mine.HasAPIKey)
	is.Equal(*mine.KeySuffix, "7777")
	is.Equal(mine.ModelCount, 0)
	var e errJSON
	is.Equal(call("POST", "/api/providers", home.key, obj{"name": "mine", "base_url": fake.URL()}, &e), 409)
	is.Equal(e.Code, "provider_name_taken")

	// Operators read the providers (SPEC.md's "provider info"): never the
	// key, nor its last characters (only owners see those, as in
	// /api/org-keys), and they change nothing.
	op := s.newKey(home.key, "operator")
	var seen orgProviderJSON
	is.Equal(call("GET", "/api/providers/"+mine.ID, op, nil, &seen), 200)
	is.Equal(seen.ID, mine.ID)
	is.True(seen.HasAPIKey)
	is.True(seen.KeySuffix == nil)
	is.Equal(call("GET", "/api/providers", op, nil, &list), 200)
	is.Equal(len(list), 1)
	is.True(list[0].KeySuffix == nil)
	is.Equal(call("GET", "/api/providers/"+mine.ID, home.key, nil, &seen), 200)
	is.Equal(*seen.KeySuffix, "7777") // the owner's read
	is.Equal(call("PATCH", "/api/providers/"+mine.ID, op, obj{"is_enabled": false}, nil), 403)
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/test-connection", op, nil, nil), 403)
	is.Equal(call("DELETE", "/api/providers/"+mine.ID, op, nil, nil), 403)
	is.Equal(call("POST", "/api/providers", op, obj{"name": "theirs", "base_url": fake.URL()}, nil), 403)

	// Another organization sees none of it.
	is.Equal(call("GET", "/api/providers/"+mine.ID, other.key, nil, nil), 404)
	is.Equal(call("PATCH", "/api/providers/"+mine.ID, other.key, obj{"is_enabled": false}, nil), 404)
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/test-connection", other.key, nil, nil), 404)
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/discover-models", other.key, nil, nil), 404)
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/models", other.key, obj{"name": "x"}, nil), 404)
	is.Equal(call("DELETE", "/api/providers/"+mine.ID, other.key, nil, nil), 404)
	is.Equal(call("GET", "/api/providers", other.key, nil, &list), 200)
	is.Equal(len(list), 0)

	// Discovery imports the endpoint's models; a second one finds nothing new.
	var d struct {
		DiscoveredCount int             `json:"discovered_count"`
		ImportedCount   int             `json:"imported_count"`
		Provider        orgProviderJSON `json:"provider"`
	}
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/discover-models", home.key, nil, &d), 200)
	is.Equal(d.DiscoveredCount, 2)
	is.Equal(d.ImportedCount, 2)
	is.Equal(d.Provider.Models[0].ModelKey, "mine::llama3")
	is.Equal(d.Provider.Models[0].Source, "discovered")
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/discover-models", home.key, nil, &d), 200)
	is.Equal(d.ImportedCount, 0)
	var m struct {
		ID       string   `json:"id"`
		ModelKey string   `json:"model_key"`
		Input    *float64 `json:"input_price"`
		Billed   *float64 `json:"input_price_billed"`
		Source   string   `json:"source"`
	}
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/models", home.key, obj{"name": "extra", "input_price": 0.5, "context_length": 32000}, &m), 201)
	is.Equal(m.ModelKey, "mine::extra")
	is.Equal(*m.Input, 0.5)
	is.Equal(*m.Billed, 0.5) // the reference's billed price: no commission here
	is.Equal(m.Source, "manual")
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/models", home.key, obj{"name": "extra"}, &e), 409)
	is.Equal(e.Code, "model_exists")
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/models", home.key, obj{"name": "bad\nname"}, &e), 400)
	is.Equal(e.Field, "name")

	// One model: read, renamed (its price cleared), refused onto another's
	// name, invisible to another organization, removed.
	is.Equal(call("GET", "/api/providers/models/"+m.ID, home.key, nil, &m), 200)
	is.Equal(m.ModelKey, "mine::extra")
	is.Equal(call("PATCH", "/api/providers/models/"+m.ID, home.key, obj{"name": "extra2", "input_price": nil}, &m), 200)
	is.Equal(m.ModelKey, "mine::extra2")
	is.Equal(m.Input, nil)
	is.Equal(call("PATCH", "/api/providers/models/"+m.ID, home.key, obj{"name": "llama3"}, &e), 409)
	is.Equal(e.Code, "model_exists")
	is.Equal(call("PATCH", "/api/providers/models/"+m.ID, home.key, obj{"input_price": -1}, &e), 400)
	is.Equal(e.Field, "input_price")
	is.Equal(call("GET", "/api/providers/models/"+m.ID, other.key, nil, nil), 404)
	is.Equal(call("DELETE", "/api/providers/models/"+m.ID, other.key, nil, nil), 404)
	is.Equal(call("DELETE", "/api/providers/models/"+m.ID, home.key, nil, nil), 204)
	is.Equal(call("GET", "/api/providers/models/"+m.ID, home.key, nil, nil), 404)
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/models", home.key, obj{"name": "extra", "input_price": 0.5}, &m), 201) // back, for the options below

	// The connection test makes a real call with the key.
	var c struct {
		Success bool    `json:"success"`
		Model   *string `json:"model"`
	}
	before := fake.Requests()
	is.Equal(call("POST", "/api/providers/"+mine.ID+"/test-connection", home.key, nil, &c), 200)
	is.True(c.Success)
	is.Equal(*c.Model, "llama3")
	is.Equal(fake.Requests(), before+1)
	last, _ := fake.LastRequest()
	is.Equal(last.Authorization, "Bearer "+orgEndpointKey)

	// The options list the organization's models as available, to it only.
	optionKeys := func(cred string) map[string]bool {
		t.Helper()
		var o struct {
			Models []struct {
				Key         string `json:"key"`
				IsAvailable bool   `json:"is_available"`
			} `json:"models"`
		}
		if st := call("GET", "/api/enrichment/options", cred, nil, &o); st != 200 {
			t.Fatalf("options: %d", st)
		}
		out := map[string]bool{}
		for _, m := range o.Models {
			out[m.Key] = m.IsAvailable
		}
		return out
	}
	is.Equal(optionKeys(home.key)["mine::llama3"], true)
	is.Equal(optionKeys(home.key)["mine::extra"], true)
	_, listed := optionKeys(other.key)["mine::llama3"]
	is.True(!listed)

	// Enrichment calls the endpoint with its key, for this organization only.
	before = fake.Requests()
	var res struct {
		Success bool `json:"success"`
	}
	enrich := obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"mine::llama3"}}
	is.Equal(call("POST", "/api/single/enrich/sync", home.key, enrich, &res), 200)
	is.True(res.Success)
	is.True(fake.Requests() > before)
	last, _ = fake.LastRequest()
	is.Equal(last.Model, "llama3")
	is.Equal(last.Authorization, "Bearer "+orgEndpointKey)
	is.True(last.ResponseFormat["type"] != "json_schema") // no declared capability: prompted JSON

	// Declared capabilities: the model's answer and the options show them,
	// and a model that takes the JSON-schema response format gets it.
	llama := d.Provider.Models[0]
	is.Equal(llama.ModelKey, "mine::llama3")
	var caps struct {
		ResponseSchema bool `json:"supports_response_schema"`
		Strict         bool `json:"supports_strict_structured_output"`
		Vision         bool `json:"supports_vision"`
	}
	is.Equal(call("PATCH", "/api/providers/models/"+llama.ID, home.key, obj{"supports_strict_structured_output": true}, &e), 400)
	is.Equal(e.Field, "supports_strict_structured_output") // needs the schema channel
	is.Equal(call("PATCH", "/api/providers/models/"+llama.ID, home.key, obj{"supports_response_schema": true, "supports_vision": true}, &caps), 200)
	is.True(caps.ResponseSchema && caps.Vision && !caps.Strict)
	var o struct {
		Models []struct {
			Key            string `json:"key"`
			ResponseSchema bool   `json:"supports_response_schema"`
		} `json:"models"`
	}
	is.Equal(call("GET", "/api/enrichment/options", home.key, nil, &o), 200)
	for _, m := range o.Models {
		if m.Key == "mine::llama3" {
			is.True(m.ResponseSchema)
		}
	}
	is.Equal(call("POST", "/api/single/enrich/sync", home.key, enrich, &res), 200)
	last, _ = fake.LastRequest()
	is.Equal(last.ResponseFormat["type"], "json_schema")
	is.Equal(call("PATCH", "/api/providers/models/"+llama.ID, home.key, obj{"supports_response_schema": false}, &caps), 200)
	is.True(!caps.ResponseSchema && caps.Vision) // one flag changed, the other kept
	otherSchema := s.createSchema(other.key, "Company", companySchema)
	is.Equal(call("POST", "/api/single/enrich/sync", other.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": otherSchema,
		"models": []string{"mine::llama3"}}, &e), 400)
	is.Equal(e.Code, "invalid_model")

	// The organization may pin its own model as a task's default: auto then
	// resolves to it (options preview it, a run says pinned); another
	// organization cannot pin it; unpinned, auto keeps to the catalog.
	var pins map[string]*string
	is.Equal(call("PATCH", "/api/organization/model-defaults", home.key, obj{"enrichment": "mine::llama3"}, &pins), 200)
	is.Equal(*pins["enrichment"], "mine::llama3")
	var opts struct {
		DefaultModels map[string]struct {
			Key string `json:"key"`
		} `json:"default_models"`
	}
	is.Equal(call("GET", "/api/enrichment/options", home.key, nil, &opts), 200)
	is.Equal(opts.DefaultModels["enrichment"].Key, "mine::llama3")
	before = fake.Requests()
	evs := s.follow(home.key, s.startJob(home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"auto"}}), "")
	sel := find(evs, "model_auto_selected")[0]
	is.Equal(sel.Data["model"], "mine::llama3")
	is.Equal(sel.Data["pinned"], true)
	is.Equal(evs[len(evs)-1].Name, "completed")
	is.True(fake.Requests() > before)
	e = errJSON{}
	is.Equal(call("PATCH", "/api/organization/model-defaults", other.key, obj{"enrichment": "mine::llama3"}, &e), 400)
	is.Equal(e.Field, "enrichment")
	is.Equal(call("PATCH", "/api/organization/model-defaults", home.key, obj{"enrichment": nil}, &pins), 200)
	is.Equal(call("GET", "/api/enrichment/options", home.key, nil, &opts), 200)
	is.True(opts.DefaultModels["enrichment"].Key != "mine::llama3")

	// Other tasks take the organization's models too: schema generation,
	// sample generation, the analysis, classification and arbitration
	// models. Each reaches the endpoint with its key. (The fake answers
	// every request with an object derived from the entity, which the
	// generation and analysis tasks refuse as 502 model_output_invalid:
	// what matters here is that the model resolved and was called.)
	for _, tt := range []struct {
		path string
		body obj
	}{
		{"/api/schema/generate/sync", obj{"entity_samples": []obj{{"name": "Acme"}}, "model": "mine::llama3"}},
		{"/api/schema/sample/generate/sync", obj{"entity_type": "company", "model": "mine::llama3"}},
		{"/api/schema/analyze-sample", obj{"sample_json": obj{"size": "large"}, "model": "mine::llama3"}},
		{"/api/single/enrich/sync", obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"},
			"classification_model": "mine::llama3"}},
		{"/api/single/enrich/sync", obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo", "sandbox::alt"},
			"arbitration_model": "mine::llama3"}},
	} {
		before := fake.Requests()
		e = errJSON{}
		st := call("POST", tt.path, home.key, tt.body, &e)
		if e.Code == "invalid_model" || fake.Requests() == before {
			t.Errorf("%s %v: %d %s %s; the endpoint got %d requests", tt.path, tt.body, st, e.Code, e.Detail, fake.Requests()-before)
		}
		t.Logf("%s through mine::llama3: %d %s", tt.path, st, e.Code)
		last, _ := fake.LastRequest()
		is.Equal(last.Authorization, "Bearer "+orgEndpointKey)
	}

	// A provider at a loopback server the guard does not let through:
	// refused, and the server sees nothing.
	for _, base := range []string{victim.URL + "/v1", "http://localhost:" + strconv.Itoa(int(loopbackPort(t, victim.URL))) + "/v1"} {
		var v orgProviderJSON
		name := "victim" + strconv.Itoa(len(bodies))
		is.Equal(call("POST", "/api/providers", home.key, obj{"name": name, "base_url": base, "api_key": orgEndpointKey,
			"models": []obj{{"name": "m"}}}, &v), 201)
		is.Equal(call("POST", "/api/providers/"+v.ID+"/test-connection", home.key, nil, &e), 400)
		is.Equal(e.Code, "base_url_refused")
		is.Equal(e.Field, "base_url")
		is.Equal(call("POST", "/api/providers/"+v.ID+"/discover-models", home.key, nil, &e), 400)
		is.Equal(e.Code, "base_url_refused")
		st := call("POST", "/api/single/enrich/sync", home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
			"models": []string{name + "::m"}}, &e)
		is.True(st != 200)
		is.Equal(call("DELETE", "/api/providers/"+v.ID, home.key, nil, nil), 204)
	}
	is.Equal(victimHits.Load(), int64(0))

	// The key is sealed at rest: the database never holds it in clear.
	if dsn != "" {
		db, err := sql.Open("pgx", dsn)
		is.NoErr(err)
		defer db.Close()
		var n int
		is.NoErr(db.QueryRowContext(context.Background(),
			`SELECT count(*) FROM org_providers WHERE position(convert_to($1, 'UTF8') in coalesce(sealed, '')) > 0 OR suffix = $1 OR base_url LIKE '%' || $1 || '%'`,
			orgEndpointKey).Scan(&n))
		is.Equal(n, 0)
		grepDatabase(t, dsn, []string{orgEndpointKey}, "Org home@example.com") // every table, events included
	}

	// Disabled: out of the options and of enrichment; renamed; deleted.
	var up orgProviderJSON
	is.Equal(call("PATCH", "/api/providers/"+mine.ID, home.key, obj{"is_enabled": false, "name": "renamed"}, &up), 200)
	is.Equal(up.Name, "renamed")
	is.True(!up.IsEnabled)
	_, listed = optionKeys(home.key)["renamed::llama3"]
	is.True(!listed)
	is.Equal(call("POST", "/api/single/enrich/sync", home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
		"models": []string{"renamed::llama3"}}, &e), 400)
	is.Equal(e.Code, "invalid_model")
	is.Equal(call("GET", "/api/providers", home.key, nil, &list), 200)
	is.Equal(len(list), 0) // inactive ones only with include_inactive
	is.Equal(call("GET", "/api/providers?include_inactive=true", home.key, nil, &list), 200)
	is.Equal(len(list), 1)
	is.Equal(call("PATCH", "/api/providers/"+mine.ID, home.key, obj{"api_key": nil}, &up), 200)
	is.True(!up.HasAPIKey)
	is.Equal(up.KeySuffix, nil)
	is.Equal(call("DELETE", "/api/providers/"+mine.ID, home.key, nil, nil), 204)
	is.Equal(call("GET", "/api/providers/"+mine.ID, home.key, nil, nil), 404)
	is.Equal(call("DELETE", "/api/providers/"+mine.ID, home.key, nil, nil), 404)

	// The key never showed in a response, nor in the logs.
	for _, b := range bodies {
		if strings.Contains(b, orgEndpointKey) {
			t.Fatalf("a response shows the key: %s", b)
		}
	}
	if strings.Contains(logs.String(), orgEndpointKey) {
		t.Error("the logs show the key")
	}
	if !strings.Contains(logs.String(), "organization provider created") {
		t.Error("the service's logs were not captured")
	}
}
