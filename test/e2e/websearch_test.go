package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestWebSearch runs enable_web_search through the HTTP API against a fake
// OpenAI provider: a model whose catalog entry offers web search, on a
// provider type whose tool enrich calls, searches (the Responses API with
// the web_search tool, paid by the organization's keys, with rotation as
// on any call); a model that cannot search is refused with 400 and nothing
// is sent; auto and the options' previews pick from the same rule.
func TestWebSearch(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres; its runs are slow
		}
		t.Run(b.name, func(t *testing.T) { testWebSearch(t, b.dsn(t)) })
	}
}

func testWebSearch(t *testing.T, dsn string) {
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(goodA, goodB, goodC, goodD))
	limited := "Bearer " + goodC
	standard := func(req fakeopenai.ChatRequest) (string, int) {
		if req.Authorization == limited {
			return "slow down", http.StatusTooManyRequests
		}
		return fakeopenai.DefaultAnswer(req), 0
	}
	fake.SetResponder(standard)
	cfg := testConfig(dsn)
	cfg.Providers = []llm.ProviderConfig{
		// gpt-4o offers web search in the catalog; gpt-4.1-nano does not.
		{Name: "paid", Type: "openai", BaseURL: fake.URL(), Models: []string{"gpt-4.1-nano", "gpt-4o"}},
		// Google offers search grounding, but enrich calls no tool for googleai.
		{Name: "gem", Type: "googleai", BaseURL: fake.URL(), Models: []string{"gemini-2.5-pro"}},
	}
	s := start(t, cfg)

	newTenant := func(name string, keys ...string) (tenant, string) {
		ten := s.register(name + "@example.com")
		for _, k := range keys {
			for _, p := range []string{"paid", "gem"} {
				if st := s.call("POST", "/api/org-keys", ten.key, obj{"provider": p, "api_key": k, "name": "k"}, nil); st != 201 {
					t.Fatalf("add key: %d", st)
				}
			}
		}
		return ten, s.createSchema(ten.key, "Company", companySchema)
	}
	// run starts a job, follows it, and returns its events and the
	// requests the fake got meanwhile.
	run := func(ten tenant, body obj) ([]event, []fakeopenai.ChatRequest) {
		t.Helper()
		before := fake.Requests()
		evs := s.follow(ten.key, s.startJob(ten.key, body), "")
		return evs, fake.AllRequests()[before:]
	}

	t.Run("an openai model searches through the Responses API", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("search", goodA)
		evs, reqs := run(ten, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"paid::gpt-4o"},
			"enable_web_search": true, "strategy": "multi_expertise"})
		is.Equal(last(evs).Name, "completed")
		is.True(len(reqs) >= 3)
		searched := 0
		for _, r := range reqs {
			is.Equal(r.Authorization, "Bearer "+goodA)
			if r.API == "responses" {
				is.True(r.WebSearch()) // the fake saw the web_search tool
				searched++
			}
		}
		is.Equal(searched, len(find(evs, "expertise_completed"))) // every expertise call searched
		searches := 0
		for _, ev := range find(evs, "expertise_completed") {
			is.Equal(ev.Data["api_key_source"], "organization")
			is.True(ev.Data["input_tokens"].(float64) > 0)
			// The call's cost is its tokens at gpt-4o's prices plus its one
			// search at $10 per 1,000 (10,000 micro-credits).
			in, out := int64(ev.Data["input_tokens"].(float64)), int64(ev.Data["output_tokens"].(float64))
			tokens := (in*2_500_000 + out*10_000_000 + 999_999) / 1_000_000
			is.Equal(int64(ev.Data["cost"].(float64)), tokens+10_000)
			is.Equal(ev.Data["web_search_calls"], 1.0)
			searches += int((int64(ev.Data["cost"].(float64)) - tokens) / 10_000)
		}
		is.Equal(searches, searched)
		// The record says how many searches its prompts made.
		webSearchCalls := func(recordID any) any {
			t.Helper()
			var rec obj
			is.Equal(s.call("GET", fmt.Sprintf("/api/records/%v", recordID), ten.key, nil, &rec), 200)
			return rec["web_search_calls"]
		}
		is.Equal(webSearchCalls(last(evs).Data["record_id"]), float64(searches))

		// Without enable_web_search the same model takes chat completions,
		// and its record made no search.
		evs, reqs = run(ten, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"paid::gpt-4o"},
			"strategy": "multi_expertise"})
		for _, r := range reqs {
			is.Equal(r.API, "chat")
		}
		for _, ev := range find(evs, "expertise_completed") {
			_, ok := ev.Data["web_search_calls"]
			is.True(!ok) // absent, as before searches were counted
		}
		is.Equal(last(evs).Name, "completed")
		is.Equal(webSearchCalls(last(evs).Data["record_id"]), 0.0)
	})

	t.Run("a refused key leaves rotation and a 429 moves on, searching", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("search-rotation", badX, goodC, goodD)
		evs, reqs := run(ten, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"paid::gpt-4o"},
			"enable_web_search": true, "strategy": "multi_expertise"})
		is.Equal(last(evs).Name, "completed")
		is.Equal(len(find(evs, "attempt")), 3) // one per expertise: moving on spent no attempt
		is.Equal(reqs[0].Authorization, "Bearer "+badX)
		is.Equal(reqs[len(reqs)-1].Authorization, "Bearer "+goodD)
		seen := map[string]bool{}
		for _, r := range reqs {
			is.True(r.WebSearch())
			seen[r.Authorization] = true
		}
		is.True(seen["Bearer "+goodC]) // tried, rate-limited, left for the next key
		var ks []struct {
			KeySuffix         *string `json:"key_suffix"`
			HealthCheckStatus string  `json:"health_check_status"`
			RateLimitedUntil  *string `json:"rate_limited_until"`
		}
		is.Equal(s.call("GET", "/api/org-keys", ten.key, nil, &ks), 200)
		// Each secret is paid's and gem's key; only paid's were called.
		refused, resting := 0, 0
		for _, k := range ks {
			switch {
			case *k.KeySuffix == "9999" && k.HealthCheckStatus == "invalid":
				refused++
			case *k.KeySuffix == "3333" && k.RateLimitedUntil != nil:
				resting++
				is.Equal(k.HealthCheckStatus, "unchecked") // not refused
			}
		}
		is.Equal(refused, 1)
		is.Equal(resting, 1)
	})

	t.Run("a model that cannot search is refused", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("search-refused", goodA)
		before := fake.Requests()
		for _, m := range []string{"paid::gpt-4.1-nano", "gem::gemini-2.5-pro", "sandbox::echo"} {
			var e struct{ Detail, Code string }
			is.Equal(s.call("POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"name": "Acme"},
				"schema_id": schemaID, "models": []string{m}, "enable_web_search": true}, &e), 400)
			is.Equal(e.Code, "model_lacks_capability")
		}
		is.Equal(fake.Requests(), before) // nothing was sent
		// Without web search the same models run.
		evs, _ := run(ten, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"gem::gemini-2.5-pro"}})
		is.Equal(last(evs).Name, "completed")
	})

	t.Run("sample generation searches too", func(t *testing.T) {
		is := is.New(t)
		ten, _ := newTenant("search-samples", goodA)
		// A sample answer the service accepts: the fake's default one does
		// not know the samples' rules (no questions on sync).
		fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
			chatSchema, _ := req.ResponseFormat["json_schema"].(map[string]any)
			if req.TextFormat["name"] == "sample" || chatSchema["name"] == "sample" {
				return `{"sample":{"name":"Acme Corp","industry":"retail"},"questions":[]}`, 0
			}
			return fakeopenai.DefaultAnswer(req), 0
		})
		defer fake.SetResponder(standard)
		before := fake.Requests()
		var out struct {
			Samples []map[string]any `json:"samples"`
		}
		is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company", "sample_count": 1,
			"model": "paid::gpt-4o", "enable_web_search": true}, &out), 200)
		is.Equal(len(out.Samples), 1)
		reqs := fake.AllRequests()[before:]
		is.True(len(reqs) > 0)
		for _, r := range reqs {
			is.Equal(r.API, "responses")
			is.True(r.WebSearch())
		}
		// A named model that cannot search: the flag is ignored (WIRE.md), the
		// sample comes from chat completions.
		before = fake.Requests()
		is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company", "sample_count": 1,
			"model": "paid::gpt-4.1-nano", "enable_web_search": true}, &out), 200)
		is.Equal(len(out.Samples), 1)
		reqs = fake.AllRequests()[before:]
		is.True(len(reqs) > 0)
		for _, r := range reqs {
			is.Equal(r.API, "chat")
			is.True(!r.WebSearch())
		}
	})

	t.Run("auto and the options' previews pick a model that can search", func(t *testing.T) {
		is := is.New(t)
		ten, schemaID := newTenant("search-auto", goodA)
		evs, reqs := run(ten, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "model": "auto", "enable_web_search": true})
		is.Equal(last(evs).Name, "completed")
		auto := find(evs, "model_auto_selected")
		is.Equal(len(auto), 1)
		is.Equal(auto[0].Data["model"], "paid::gpt-4o")
		for _, r := range reqs {
			if r.API == "responses" {
				is.True(r.WebSearch())
			}
		}
		var opts struct {
			Models []struct {
				Key               string `json:"key"`
				SupportsWebSearch bool   `json:"supports_web_search"`
			} `json:"models"`
			DefaultModelsWebSearch map[string]struct {
				Key string `json:"key"`
			} `json:"default_models_web_search"`
		}
		is.Equal(s.call("GET", "/api/enrichment/options", ten.key, nil, &opts), 200)
		is.Equal(opts.DefaultModelsWebSearch["enrichment"].Key, "paid::gpt-4o")
		is.Equal(opts.DefaultModelsWebSearch["sample_generation"].Key, "paid::gpt-4o")
		for _, m := range opts.Models {
			// gem's offer without a tool does not count; sandbox::search
			// searches offline, but auto never takes it over a real model.
			is.Equal(m.SupportsWebSearch, m.Key == "paid::gpt-4o" || m.Key == "sandbox::search")
		}

		// With no usable key for it, auto has nothing to pick: not even
		// sandbox::search, while a real model is configured.
		none, schemaID := newTenant("search-nokey")
		var e struct{ Detail, Code string }
		is.Equal(s.call("POST", "/api/single/enrich/stream", none.key, obj{"entity_data": obj{"name": "Acme"},
			"schema_id": schemaID, "enable_web_search": true}, &e), 400)
		is.Equal(e.Code, "no_capable_default_model")
	})
}

// TestWebSearchSandbox: with the sandbox on and no provider configured,
// enable_web_search with auto runs on sandbox::search, with no key and no
// network: every expertise call makes one (pretend) search, which the
// events, the record and each usage row count and price; the options list
// it as the web-search default. Without web search auto stays on
// sandbox::echo.
func TestWebSearchSandbox(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("search-sandbox-" + b.name + "@example.com")
			schemaID := s.createSchema(ten.key, "Company", companySchema)

			evs := s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
				"models": []string{"auto"}, "enable_web_search": true, "strategy": "multi_expertise"}), "")
			is.Equal(last(evs).Name, "completed")
			auto := find(evs, "model_auto_selected")
			is.Equal(len(auto), 1)
			is.Equal(auto[0].Data["model"], "sandbox::search")
			searches := 0
			for _, ev := range find(evs, "expertise_completed") {
				is.Equal(ev.Data["web_search_calls"], 1.0) // one search per call
				searches++
			}
			is.True(searches >= 2) // multi_expertise: a call per expertise
			recordID := last(evs).Data["record_id"]
			var rec struct {
				Model          string `json:"model"`
				WebSearchCalls int    `json:"web_search_calls"`
				Sandbox        bool   `json:"sandbox"`
			}
			is.Equal(s.call("GET", fmt.Sprintf("/api/records/%v", recordID), ten.key, nil, &rec), 200)
			is.Equal(rec.Model, "sandbox::search")
			is.Equal(rec.WebSearchCalls, searches)

			// Each call's usage row counts its search and prices it on top
			// of the tokens.
			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
			is.NoErr(err)
			rowSearches := 0
			for _, e := range entries {
				is.Equal(e.Model, "sandbox::search")
				is.Equal(e.WebSearchCalls, 1)
				tokens := (int64(e.InputTokens)*llm.SandboxPrice.InputPerMTok + int64(e.OutputTokens)*llm.SandboxPrice.OutputPerMTok +
					999_999) / 1_000_000
				is.Equal(e.Cost, tokens+llm.SandboxSearchPrice)
				rowSearches += e.WebSearchCalls
			}
			is.Equal(rowSearches, searches)

			// The blocking call, as the README shows it: auto is the default.
			var sr struct {
				Success bool           `json:"success"`
				Model   string         `json:"model"`
				Result  map[string]any `json:"result"`
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
				"enable_web_search": true}, &sr), 200)
			is.True(sr.Success)
			is.Equal(sr.Model, "sandbox::search")
			is.Equal(sr.Result["name"], "Acme")

			var opts struct {
				Models []struct {
					Key               string `json:"key"`
					SupportsWebSearch bool   `json:"supports_web_search"`
				} `json:"models"`
				DefaultModels          map[string]struct{ Key string } `json:"default_models"`
				DefaultModelsWebSearch map[string]struct{ Key string } `json:"default_models_web_search"`
			}
			is.Equal(s.call("GET", "/api/enrichment/options", ten.key, nil, &opts), 200)
			for _, m := range opts.Models {
				is.Equal(m.SupportsWebSearch, m.Key == "sandbox::search")
			}
			is.Equal(opts.DefaultModelsWebSearch["enrichment"].Key, "sandbox::search")
			is.Equal(opts.DefaultModels["enrichment"].Key, "sandbox::echo") // without web search, echo as before

			// Without web search, auto is echo, and nothing searches.
			evs = s.follow(ten.key, s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
				"models": []string{"auto"}}), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(find(evs, "model_auto_selected")[0].Data["model"], "sandbox::echo")
		})
	}
}
