package e2e_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestModelAvailability: a real provider that needs a key shows
// is_available false in the options until the organization (or a system
// administrator, globally) adds a usable one; auto never falls back to the
// sandbox while a real model is configured, and picks the real model once
// it can be called.
func TestModelAvailability(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) { testModelAvailability(t, b.dsn(t)) })
	}
}

func testModelAvailability(t *testing.T, dsn string) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKeys(goodA, goodB))
	cfg := testConfig(dsn)
	cfg.Providers = []llm.ProviderConfig{{Name: "paid", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}}}
	s := start(t, cfg)
	home := s.register("home@example.com")
	other := s.register("other@example.com")
	schemaID := s.createSchema(home.key, "Company", companySchema)

	type options struct {
		Models []struct {
			Key         string `json:"key"`
			IsAvailable bool   `json:"is_available"`
		} `json:"models"`
		DefaultModels map[string]struct {
			Key string `json:"key"`
		} `json:"default_models"`
	}
	available := func(cred string) (map[string]bool, options) {
		t.Helper()
		var o options
		if st := s.call("GET", "/api/enrichment/options", cred, nil, &o); st != 200 {
			t.Fatalf("options: %d", st)
		}
		out := map[string]bool{}
		for _, m := range o.Models {
			out[m.Key] = m.IsAvailable
		}
		return out, o
	}

	// No key: the paid model is listed but not available; auto resolves to
	// nothing rather than to the sandbox.
	av, o := available(home.key)
	is.Equal(av["paid::m"], false)
	is.Equal(av["sandbox::echo"], true)
	_, ok := o.DefaultModels["enrichment"]
	is.True(!ok)
	var e struct{ Detail, Code string }
	is.Equal(s.call("POST", "/api/single/enrich/sync", home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"auto"}}, &e), 400)
	is.Equal(e.Code, "no_capable_default_model")
	is.True(strings.Contains(e.Detail, "auto-select")) // the reference's clients look for it
	is.Equal(fake.Requests(), 0)

	// The organization's key makes it available, to it only.
	is.Equal(s.call("POST", "/api/org-keys", home.key, obj{"provider": "paid", "api_key": goodA}, nil), 201)
	av, o = available(home.key)
	is.Equal(av["paid::m"], true)
	is.Equal(o.DefaultModels["enrichment"].Key, "paid::m")
	av, _ = available(other.key)
	is.Equal(av["paid::m"], false)
	var res struct {
		Model *string `json:"model"`
	}
	is.Equal(s.call("POST", "/api/single/enrich/sync", home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID}, &res), 200)
	is.Equal(*res.Model, "paid::m")

	// Pinned defaults: read by operators, set by owners; a pinned model
	// wins while it can be called, and the pick says pinned.
	var d map[string]*string
	is.Equal(s.call("GET", "/api/organization/model-defaults", home.key, nil, &d), 200)
	is.Equal(len(d), 3)
	is.Equal(d["enrichment"], nil)
	is.Equal(s.call("PUT", "/api/organization/model-defaults", home.key, obj{"enrichment": "sandbox::alt", "sample_generation": "paid::m"}, &d), 200)
	is.Equal(*d["enrichment"], "sandbox::alt")
	is.Equal(*d["sample_generation"], "paid::m")
	is.Equal(d["schema_generation"], nil)
	_, o = available(home.key)
	is.Equal(o.DefaultModels["enrichment"].Key, "sandbox::alt")
	is.Equal(o.DefaultModels["schema_generation"].Key, "paid::m") // not pinned: the best available
	evs := s.follow(home.key, s.startJob(home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"auto"}}), "")
	sel := find(evs, "model_auto_selected")[0]
	is.Equal(sel.Data["model"], "sandbox::alt")
	is.Equal(sel.Data["pinned"], true)
	is.Equal(last(evs).Name, "completed")
	// PATCH unpins with null and leaves the other tasks alone; bad tasks and
	// models are 400s naming the task.
	is.Equal(s.call("PATCH", "/api/organization/model-defaults", home.key, obj{"enrichment": nil}, &d), 200)
	is.Equal(d["enrichment"], nil)
	is.Equal(*d["sample_generation"], "paid::m")
	for _, tc := range []struct {
		body  obj
		field string
	}{
		{obj{"enrichment": "nobody::m"}, "enrichment"},
		{obj{"classification": "paid::m"}, "classification"},
		{obj{"enrichment": "auto"}, "enrichment"},
	} {
		var e struct{ Field string }
		st := s.call("PUT", "/api/organization/model-defaults", home.key, tc.body, &e)
		if st != 400 || e.Field != tc.field {
			t.Errorf("%v: got %d naming %q, want 400 naming %q", tc.body, st, e.Field, tc.field)
		}
	}
	operator := s.newKey(home.token, "operator")
	is.Equal(s.call("GET", "/api/organization/model-defaults", operator, nil, nil), 200)
	is.Equal(s.call("PUT", "/api/organization/model-defaults", operator, obj{"enrichment": nil}, nil), 403)

	// A disabled key does not count.
	var keys []struct{ ID string }
	is.Equal(s.call("GET", "/api/org-keys", home.key, nil, &keys), 200)
	is.Equal(s.call("PATCH", "/api/org-keys/"+keys[0].ID, home.key, obj{"is_enabled": false}, nil), 200)
	av, _ = available(home.key)
	is.Equal(av["paid::m"], false)

	// A global key makes it available to every organization.
	var adm struct {
		AccessToken string `json:"access_token"`
	}
	is.Equal(s.call("POST", "/api/auth/register", "", obj{"email": "admin@example.com", "password": "correct horse battery", "organization": "Ops"}, &adm), 201)
	is.Equal(s.call("POST", "/api/global-keys", adm.AccessToken, obj{"provider": "paid", "api_key": goodB}, nil), 201)
	for _, cred := range []string{home.key, other.key} {
		av, _ = available(cred)
		is.Equal(av["paid::m"], true)
	}
}
