package modelsel_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
)

func info(key string, sandbox, web bool) model.Info {
	k, _ := model.ParseKey(key)
	return model.Info{Key: k, Sandbox: sandbox, WebSearch: web, WebSearchTool: web}
}

// TestCanSearch: a model searches only when the catalog says its provider
// offers web search and enrich calls its provider type's tool.
func TestCanSearch(t *testing.T) {
	k := model.Key{Provider: "p", Model: "m"}
	tests := []struct {
		name string
		m    model.Info
		want bool
	}{
		{"offered and a tool", model.Info{Key: k, WebSearch: true, WebSearchTool: true}, true},
		{"offered, no tool for the provider type", model.Info{Key: k, WebSearch: true}, false},
		{"a tool, not offered for the model", model.Info{Key: k, WebSearchTool: true}, false},
		{"neither", model.Info{Key: k}, false},
		{"a sandbox model that declares search (sandbox::search)", model.Info{Key: k, WebSearch: true, WebSearchTool: true, Sandbox: true}, true},
		{"a sandbox model that does not", model.Info{Key: k, Sandbox: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(modelsel.CanSearch(tt.m), tt.want)
			_, err := modelsel.Select([]model.Info{tt.m}, "", modelsel.Needs{WebSearch: true})
			is.Equal(err == nil, tt.want) // selection asks the same rule
		})
	}
}

func TestSelect(t *testing.T) {
	echo, alt := info("sandbox::echo", true, false), info("sandbox::alt", true, false)
	gpt, local := info("openai::gpt", false, true), info("local::qwen", false, false)
	offered := info("compat::gpt", false, true)
	offered.WebSearchTool = false // the catalog says yes, but no tool is called for its type
	search := info("sandbox::search", true, true)
	tests := []struct {
		name   string
		cands  []model.Info
		pinned string
		needs  modelsel.Needs
		want   string
		source string
		err    error
	}{
		{"sandbox only picks echo", []model.Info{alt, echo}, "", modelsel.Needs{}, "sandbox::echo", "sandbox", nil},
		{"real beats sandbox", []model.Info{echo, local, gpt}, "", modelsel.Needs{}, "local::qwen", "configured", nil},
		{"pinned wins", []model.Info{echo, local, gpt}, "openai::gpt", modelsel.Needs{}, "openai::gpt", "pinned", nil},
		{"web search filters", []model.Info{echo, local, gpt}, "", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"pinned but incapable", []model.Info{local, gpt}, "local::qwen", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"no capable real model never falls back to sandbox", []model.Info{echo, local}, "", modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"offered without a tool is not eligible", []model.Info{offered, gpt}, "compat::gpt", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"only offered without a tool", []model.Info{echo, offered}, "", modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"echo cannot search", []model.Info{echo}, "", modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"sandbox only: search searches", []model.Info{alt, echo, search}, "", modelsel.Needs{WebSearch: true}, "sandbox::search", "sandbox", nil},
		{"sandbox only, no search: echo still", []model.Info{alt, search, echo}, "", modelsel.Needs{}, "sandbox::echo", "sandbox", nil},
		{"a real searcher beats sandbox::search", []model.Info{echo, search, local, gpt}, "", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"a real model that cannot search never falls back to sandbox::search", []model.Info{echo, search, local}, "",
			modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"sandbox::search pinned", []model.Info{echo, search, local, gpt}, "sandbox::search", modelsel.Needs{WebSearch: true},
			"sandbox::search", "pinned", nil},
		{"nothing", nil, "", modelsel.Needs{}, "", "", modelsel.ErrNoCapableModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p, err := modelsel.Select(tt.cands, tt.pinned, tt.needs)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(p.Model.Key.String(), tt.want)
			is.Equal(p.Source, tt.source)
		})
	}
}

func TestAvailable(t *testing.T) {
	is := is.New(t)
	ms := []model.Info{
		{Key: model.Key{Provider: "paid", Model: "a"}},
		{Key: model.Key{Provider: "free", Model: "b"}},
		{Key: model.Key{Provider: "sandbox", Model: "echo"}, Sandbox: true},
	}
	usable := func(p string) bool { return p == "free" }
	got := modelsel.Available(ms, usable)
	is.Equal(len(got), 2)
	is.Equal(got[0].Key.String(), "free::b")
	is.Equal(got[1].Key.String(), "sandbox::echo") // the sandbox needs no key
	// Selection among the available falls to the one real model with a key.
	p, err := modelsel.Select(got, "", modelsel.Needs{})
	is.NoErr(err)
	is.Equal(p.Model.Key.String(), "free::b")
	p, err = modelsel.SelectAvailable(ms, usable, "", modelsel.Needs{})
	is.NoErr(err)
	is.Equal(p.Model.Key.String(), "free::b")
	// A pinned model without a usable key is passed over.
	p, err = modelsel.SelectAvailable(ms, usable, "paid::a", modelsel.Needs{})
	is.NoErr(err)
	is.Equal(p.Model.Key.String(), "free::b")
	// Nothing usable but the sandbox, with a real model configured: auto
	// refuses rather than answering with fake output.
	_, err = modelsel.SelectAvailable(ms, func(string) bool { return false }, "", modelsel.Needs{})
	is.True(errors.Is(err, modelsel.ErrNoCapableModel))
	// Unless the organization pinned it.
	p, err = modelsel.SelectAvailable(ms, func(string) bool { return false }, "sandbox::echo", modelsel.Needs{})
	is.NoErr(err)
	is.True(p.Pinned)
	// With only the sandbox configured, the sandbox it is.
	p, err = modelsel.SelectAvailable(ms[2:], func(string) bool { return false }, "", modelsel.Needs{})
	is.NoErr(err)
	is.Equal(p.Source, "sandbox")
}

// TestSandboxSearchOnlyWithoutRealModels: auto with web search takes
// sandbox::search only when no real model is configured; a configured real
// model, with no usable key or unable to search, makes auto refuse instead.
func TestSandboxSearchOnlyWithoutRealModels(t *testing.T) {
	echo, search := info("sandbox::echo", true, false), info("sandbox::search", true, true)
	gpt, local := info("openai::gpt", false, true), info("local::qwen", false, false)
	web := modelsel.Needs{WebSearch: true}
	tests := []struct {
		name   string
		models []model.Info
		usable string // the one provider with a usable key
		want   string // "" for ErrNoCapableModel
	}{
		{"sandbox only", []model.Info{echo, search}, "", "sandbox::search"},
		{"a real searcher with a key", []model.Info{echo, search, gpt}, "openai", "openai::gpt"},
		{"a real searcher without a key", []model.Info{echo, search, gpt}, "", ""},
		{"a real model that cannot search, with a key", []model.Info{echo, search, local}, "local", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p, err := modelsel.SelectAvailable(tt.models, func(p string) bool { return p == tt.usable }, "", web)
			if tt.want == "" {
				is.True(errors.Is(err, modelsel.ErrNoCapableModel))
				return
			}
			is.NoErr(err)
			is.Equal(p.Model.Key.String(), tt.want)
		})
	}
}

func TestCheckDefaults(t *testing.T) {
	known := []model.Info{info("p::a", false, false), info("sandbox::echo", true, false)}
	tests := []struct {
		name     string
		defaults map[string]string
		task     string
	}{
		{"none", nil, ""},
		{"every task", map[string]string{"enrichment": "p::a", "schema_generation": "sandbox::echo", "sample_generation": "p::a"}, ""},
		{"unknown task", map[string]string{"classification": "p::a"}, "classification"},
		{"unknown model", map[string]string{"enrichment": "p::b"}, "enrichment"},
		{"not a key", map[string]string{"enrichment": "auto"}, "enrichment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			task, err := modelsel.CheckDefaults(tt.defaults, known)
			is.Equal(task, tt.task)
			is.Equal(err != nil, tt.task != "")
		})
	}
}

func TestSelectOwn(t *testing.T) {
	catalog := []model.Info{
		{Key: model.Key{Provider: "openai", Model: "gpt"}},
		{Key: model.Key{Provider: "anthropic", Model: "claude"}, WebSearch: true, WebSearchTool: true},
	}
	own := []model.Info{{Key: model.Key{Provider: "mine", Model: "llama3"}}}
	all := func(string) bool { return true }
	for _, tc := range []struct {
		name, pinned string
		needs        modelsel.Needs
		want, source string
		pinnedPick   bool
	}{
		{"an own model pinned is the answer", "mine::llama3", modelsel.Needs{}, "mine::llama3", "pinned", true},
		{"unpinned, the catalog's best", "", modelsel.Needs{}, "anthropic::claude", "configured", false},
		{"an own model that cannot search is passed over", "mine::llama3", modelsel.Needs{WebSearch: true}, "anthropic::claude", "configured", false},
		{"a catalog pin still wins", "openai::gpt", modelsel.Needs{}, "openai::gpt", "pinned", true},
		{"a pin of an unknown own model falls back", "mine::gone", modelsel.Needs{}, "anthropic::claude", "configured", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			p, err := modelsel.SelectOwn(catalog, own, all, tc.pinned, tc.needs)
			is.NoErr(err)
			is.Equal(p.Model.Key.String(), tc.want)
			is.Equal(p.Source, tc.source)
			is.Equal(p.Pinned, tc.pinnedPick)
		})
	}
	// Nothing in the catalog can search and the own model cannot either.
	_, err := modelsel.SelectOwn(catalog[:1], own, all, "mine::llama3", modelsel.Needs{WebSearch: true})
	is.New(t).True(errors.Is(err, modelsel.ErrNoCapableModel))
}
