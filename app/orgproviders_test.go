package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// probe records what reaches it and answers err (models for the list).
type probe struct {
	mu     sync.Mutex
	err    error
	models []string
	calls  []string // "test:<model>" or "list", with the opened key
	keys   []string
}

func (p *probe) record(call string, e ports.Endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
	key := ""
	if e.Open != nil {
		s, _ := e.Open()
		key = s.Reveal()
	}
	p.keys = append(p.keys, key)
}

func (p *probe) TestEndpoint(_ context.Context, e ports.Endpoint, m string) error {
	p.record("test:"+m, e)
	return p.err
}

func (p *probe) ListEndpointModels(_ context.Context, e ports.Endpoint) ([]string, error) {
	p.record("list", e)
	return p.models, p.err
}

type forgetter struct{ ids []string }

func (f *forgetter) Forget(id string) { f.ids = append(f.ids, id) }

var otherOwner = &access.Principal{OrgID: "org2", Role: access.Owner, Scopes: access.DefaultScopes()}

func newOrgProviders(t *testing.T) (*app.OrgProviderService, *probe, *forgetter) {
	pr, fg := &probe{models: []string{"llama3", "qwen3"}}, &forgetter{}
	return &app.OrgProviderService{Store: memory.NewProviderStore(), Cipher: newCipher(t, fernetKey(t)),
		Providers: providers{"paid": {Name: "paid", Type: "openai"}, "sandbox": {Name: "sandbox", Keyless: true}},
		Probe:     pr, Clients: fg, Clock: fixedClock{time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}, IDs: &seqIDs{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, pr, fg
}

func usdPrice(v float64) *float64 { return &v }

// refusal asserts err is an *app.Error of kind, code and field.
func refusal(t *testing.T, err error, kind error, code, field string) {
	t.Helper()
	is := is.New(t)
	is.True(errors.Is(err, kind))
	e, ok := app.AsError(err)
	is.True(ok)
	is.Equal(e.Code, code)
	is.Equal(e.Field, field)
}

func TestOrgProviderCreateRefusals(t *testing.T) {
	valid := func(mod func(*app.NewOrgProvider)) app.NewOrgProvider {
		in := app.NewOrgProvider{Name: "mine", BaseURL: "https://llm.example.com/v1", APIKey: "sk-org-provider-0001",
			Models: []app.NewOrgModel{{Name: "llama3"}}}
		mod(&in)
		return in
	}
	tests := []struct {
		name  string
		p     *access.Principal
		in    app.NewOrgProvider
		kind  error
		code  string
		field string
	}{
		{"editor", editor, valid(func(*app.NewOrgProvider) {}), access.ErrForbidden, "", ""},
		{"no name", owner, valid(func(in *app.NewOrgProvider) { in.Name = "" }), ports.ErrInvalid, "invalid_request", "name"},
		{"upper-case name", owner, valid(func(in *app.NewOrgProvider) { in.Name = "Mine" }), ports.ErrInvalid, "invalid_request", "name"},
		{"long name", owner, valid(func(in *app.NewOrgProvider) { in.Name = strings.Repeat("a", 65) }), ports.ErrInvalid, "invalid_request", "name"},
		{"the server's provider", owner, valid(func(in *app.NewOrgProvider) { in.Name = "paid" }), ports.ErrConflict, app.CodeProviderNameTaken, "name"},
		{"sandbox", owner, valid(func(in *app.NewOrgProvider) { in.Name = "sandbox" }), ports.ErrConflict, app.CodeProviderNameTaken, "name"},
		{"auto", owner, valid(func(in *app.NewOrgProvider) { in.Name = "auto" }), ports.ErrConflict, app.CodeProviderNameTaken, "name"},
		{"type", owner, valid(func(in *app.NewOrgProvider) { in.Type = "anthropic" }), ports.ErrInvalid, "invalid_request", "type"},
		{"no base URL", owner, valid(func(in *app.NewOrgProvider) { in.BaseURL = "" }), ports.ErrInvalid, "invalid_request", "base_url"},
		{"relative base URL", owner, valid(func(in *app.NewOrgProvider) { in.BaseURL = "llm.example.com" }), ports.ErrInvalid, "invalid_request", "base_url"},
		{"file base URL", owner, valid(func(in *app.NewOrgProvider) { in.BaseURL = "file:///etc/passwd" }), ports.ErrInvalid, "invalid_request", "base_url"},
		{"key with a space", owner, valid(func(in *app.NewOrgProvider) { in.APIKey = "sk bad" }), ports.ErrInvalid, "invalid_request", "api_key"},
		{"empty model name", owner, valid(func(in *app.NewOrgProvider) { in.Models = []app.NewOrgModel{{Name: " "}} }), ports.ErrInvalid, "invalid_request", "models.0.name"},
		{"model name with NUL", owner, valid(func(in *app.NewOrgProvider) { in.Models = append(in.Models, app.NewOrgModel{Name: "a\x00"}) }), ports.ErrInvalid, "invalid_request", "models.1.name"},
		{"duplicate model", owner, valid(func(in *app.NewOrgProvider) { in.Models = append(in.Models, app.NewOrgModel{Name: "llama3"}) }), ports.ErrConflict, app.CodeModelExists, "models.1.name"},
		{"negative price", owner, valid(func(in *app.NewOrgProvider) { in.Models[0].InputPrice = usdPrice(-1) }), ports.ErrInvalid, "invalid_request", "models.0.input_price"},
		{"negative context", owner, valid(func(in *app.NewOrgProvider) { n := -5; in.Models[0].ContextLength = &n }), ports.ErrInvalid, "invalid_request", "models.0.context_length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s, _, _ := newOrgProviders(t)
			_, err := s.Create(context.Background(), tt.p, tt.in)
			if tt.code == "" {
				is.True(errors.Is(err, tt.kind))
			} else {
				refusal(t, err, tt.kind, tt.code, tt.field)
			}
			ps, err := s.Store.ListProviders(context.Background(), tt.p.OrgID)
			is.NoErr(err)
			is.Equal(len(ps), 0) // nothing stored
		})
	}
}

func TestOrgProviderLifecycle(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, pb, fg := newOrgProviders(t)
	created, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "https://llm.example.com/v1/", APIKey: "sk-org-provider-0001",
		Models: []app.NewOrgModel{{Name: "llama3", InputPrice: usdPrice(0.15), OutputPrice: usdPrice(0.6)}}})
	is.NoErr(err)
	is.Equal(created.Sealed, nil) // never returned
	is.Equal(created.Suffix, "0001")
	is.Equal(created.BaseURL, "https://llm.example.com/v1")
	is.Equal(created.Type, orgprovider.TypeOpenAICompatible)
	is.True(created.Enabled)
	is.Equal(*created.Models[0].InputPerMTok, int64(150_000))
	stored, err := s.Store.GetProvider(ctx, "org1", created.ID)
	is.NoErr(err)
	is.True(len(stored.Sealed) > 0)
	is.True(!strings.Contains(string(stored.Sealed), "sk-org-provider-0001")) // sealed at rest

	// The name is the organization's: another one may use it.
	_, err = s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "https://other.example.com"})
	refusal(t, err, ports.ErrConflict, app.CodeProviderNameTaken, "name")
	_, err = s.Create(ctx, otherOwner, app.NewOrgProvider{Name: "mine", BaseURL: "https://other.example.com"})
	is.NoErr(err)

	// Another organization's provider is not found, whatever the operation.
	_, err = s.Get(ctx, otherOwner, created.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.Update(ctx, otherOwner, created.ID, app.OrgProviderChange{Name: strPtr("x")})
	is.True(errors.Is(err, ports.ErrNotFound))
	_, _, err = s.AddModel(ctx, otherOwner, created.ID, app.NewOrgModel{Name: "x"})
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.TestConnection(ctx, otherOwner, created.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.DiscoverModels(ctx, otherOwner, created.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	is.True(errors.Is(s.Delete(ctx, otherOwner, created.ID), ports.ErrNotFound))
	is.Equal(len(pb.calls), 0) // nothing reached the endpoint

	// Models: added once.
	_, m, err := s.AddModel(ctx, owner, created.ID, app.NewOrgModel{Name: "qwen3"})
	is.NoErr(err)
	is.Equal(m.Name, "qwen3")
	_, _, err = s.AddModel(ctx, owner, created.ID, app.NewOrgModel{Name: "qwen3"})
	refusal(t, err, ports.ErrConflict, app.CodeModelExists, "name")
	_, _, err = s.AddModel(ctx, owner, created.ID, app.NewOrgModel{Name: ""})
	refusal(t, err, ports.ErrInvalid, "invalid_request", "name")

	// The test calls the first model with the key; discovery imports the new ones.
	c, err := s.TestConnection(ctx, owner, created.ID)
	is.NoErr(err)
	is.True(c.Success)
	is.Equal(c.Model, "llama3")
	d, err := s.DiscoverModels(ctx, owner, created.ID)
	is.NoErr(err)
	is.Equal(d.Listed, 2)
	is.Equal(len(d.Imported), 0) // llama3 and qwen3 are known
	pb.models = []string{"llama3", "mistral", "phi4"}
	d, err = s.DiscoverModels(ctx, owner, created.ID)
	is.NoErr(err)
	is.Equal(len(d.Imported), 2)
	is.Equal(len(d.Provider.Models), 4)
	is.True(d.Provider.Models[3].Discovered)
	is.Equal(pb.calls, []string{"test:llama3", "list", "list"})
	is.Equal(pb.keys, []string{"sk-org-provider-0001", "sk-org-provider-0001", "sk-org-provider-0001"})

	// Update: a new URL and no key (new versions), a rename; the clients are dropped.
	up, err := s.Update(ctx, owner, created.ID, app.OrgProviderChange{Name: strPtr("renamed"), BaseURL: strPtr("https://b.example.com"), SetKey: true})
	is.NoErr(err)
	is.Equal(up.Name, "renamed")
	is.Equal(up.Version, 3)
	is.Equal(up.Suffix, "")
	is.Equal(fg.ids, []string{created.ID})
	_, err = s.Update(ctx, owner, created.ID, app.OrgProviderChange{BaseURL: strPtr("ftp://b.example.com")})
	refusal(t, err, ports.ErrInvalid, "invalid_request", "base_url")
	_, err = s.TestConnection(ctx, owner, created.ID)
	is.NoErr(err)
	is.Equal(pb.keys[len(pb.keys)-1], "") // no key any more

	is.NoErr(s.Delete(ctx, owner, created.ID))
	_, err = s.Get(ctx, owner, created.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	is.True(errors.Is(s.Delete(ctx, owner, created.ID), ports.ErrNotFound))
}

func strPtr(s string) *string { return &s }

// TestOrgProviderProbeFailures: a refused address is a 400 naming base_url
// (nothing was sent); other failures are a failed test, or a 502 for
// discovery.
func TestOrgProviderProbeFailures(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		success  bool
		message  string
		testKind error // of TestConnection's error, nil when it answers
		discKind error
		discCode string
	}{
		{"refused address", ports.ErrDestinationRefused, false, "", ports.ErrInvalid, ports.ErrInvalid, app.CodeBaseURLRefused},
		{"refused key", ports.ErrLLMAuth, false, "the provider refused the key", nil, ports.ErrLLMAuth, app.CodeProviderKeyRefused},
		{"unreachable", ports.ErrLLMUnavailable, false, "the provider could not be reached", nil, ports.ErrLLMUnavailable, app.CodeProviderUnreachable},
		{"timeout", ports.ErrLLMTimeout, false, "the provider did not answer in time", nil, ports.ErrLLMUnavailable, app.CodeProviderUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			s, pb, _ := newOrgProviders(t)
			p, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "http://127.0.0.1:8000/v1"})
			is.NoErr(err)
			pb.err = tt.err
			c, err := s.TestConnection(ctx, owner, p.ID)
			if tt.testKind != nil {
				refusal(t, err, tt.testKind, app.CodeBaseURLRefused, "base_url")
			} else {
				is.NoErr(err)
				is.Equal(c.Success, tt.success)
				is.Equal(c.Message, tt.message)
				is.Equal(c.Model, "") // no model: the test reads the model list
			}
			_, err = s.DiscoverModels(ctx, owner, p.ID)
			is.True(errors.Is(err, tt.discKind))
			e, ok := app.AsError(err)
			is.True(ok)
			is.Equal(e.Code, tt.discCode)
			got, err := s.Get(ctx, owner, p.ID)
			is.NoErr(err)
			is.Equal(len(got.Models), 0) // nothing imported
		})
	}
}

// TestKeyRingOrgProviders: the organization's own providers' models are
// found by key for it alone, and calls to them carry the endpoint.
func TestKeyRingOrgProviders(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, _, _ := newOrgProviders(t)
	mine, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "https://llm.example.com/v1", APIKey: "sk-org-provider-0001",
		Models: []app.NewOrgModel{{Name: "llama3", OutputPrice: usdPrice(2)}}})
	is.NoErr(err)
	off, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "off", BaseURL: "https://off.example.com", Enabled: new(bool),
		Models: []app.NewOrgModel{{Name: "m"}}})
	is.NoErr(err)
	ring := &app.KeyRing{Endpoints: s.Store, Cipher: s.Cipher, Providers: s.Providers, Clock: s.Clock, Log: s.Log}

	ms, err := ring.OrgModels(ctx, "org1")
	is.NoErr(err)
	is.Equal(len(ms), 1) // the disabled provider's model is not listed
	is.Equal(ms[0].Key.String(), "mine::llama3")
	is.Equal(ms[0].Price, model.Price{OutputPerMTok: 2_000_000})
	ms, err = ring.OrgModels(ctx, "org2")
	is.NoErr(err)
	is.Equal(len(ms), 0)

	for _, tt := range []struct {
		org, key string
		known    bool
	}{
		{"org1", "mine::llama3", true},
		{"org1", "mine::other", false},
		{"org1", "off::m", false},
		{"org2", "mine::llama3", false},
	} {
		_, err := ring.OrgModel(ctx, tt.org, model.Key{Provider: strings.Split(tt.key, "::")[0], Model: strings.Split(tt.key, "::")[1]})
		is.Equal(err == nil, tt.known)
		if !tt.known {
			is.True(errors.Is(err, ports.ErrUnknownModel))
		}
	}

	c, err := ring.Pick(ctx, "org1", "mine", "", nil)
	is.NoErr(err)
	is.Equal(c.KeyID, mine.ID)
	is.Equal(c.Source, rotation.Organization)
	is.Equal(c.Endpoint.BaseURL, "https://llm.example.com/v1")
	key, err := c.Open()
	is.NoErr(err)
	is.Equal(key.Reveal(), "sk-org-provider-0001")
	c, err = ring.Pick(ctx, "org2", "mine", "", nil) // not theirs: unknown, as before
	is.NoErr(err)
	is.Equal(c, nil)
	_, err = ring.Pick(ctx, "org1", "off", "", nil)
	refusal(t, err, ports.ErrInvalid, "no_usable_provider_key", "models")
	_, err = ring.Pick(ctx, "org1", "mine", "", []string{mine.ID}) // the run gave up on it
	refusal(t, err, ports.ErrInvalid, "no_usable_provider_key", "models")
	_ = off
}

func TestOrgProviderList(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, _, _ := newOrgProviders(t)
	for _, in := range []app.NewOrgProvider{
		{Name: "zeta", BaseURL: "https://z.example.com", APIKey: "sk-org-provider-0001"},
		{Name: "alpha", BaseURL: "https://a.example.com", Enabled: new(bool)},
	} {
		_, err := s.Create(ctx, owner, in)
		is.NoErr(err)
	}
	names := func(inactive bool) []string {
		ps, err := s.List(ctx, owner, inactive)
		is.NoErr(err)
		var out []string
		for _, p := range ps {
			is.Equal(p.Sealed, nil)
			out = append(out, p.Name)
		}
		return out
	}
	is.Equal(names(false), []string{"zeta"})
	is.Equal(names(true), []string{"alpha", "zeta"})
	ps, err := s.List(ctx, otherOwner, true)
	is.NoErr(err)
	is.Equal(len(ps), 0)
	// Reading providers is provider info (operators and up); the key's
	// last characters are the owners' only.
	ps, err = s.List(ctx, owner, false)
	is.NoErr(err)
	is.Equal(ps[0].Suffix, "0001")
	for _, reader := range []*access.Principal{editor,
		{OrgID: owner.OrgID, Role: access.Operator, Scopes: access.DefaultScopes()}} {
		ps, err = s.List(ctx, reader, false)
		is.NoErr(err)
		is.Equal(len(ps), 1)
		is.Equal(ps[0].Suffix, "") // a non-owner's read shows no key suffix
		is.True(ps[0].HasKey())
		is.Equal(ps[0].Sealed, nil)
		got, err := s.Get(ctx, reader, ps[0].ID)
		is.NoErr(err)
		is.Equal(got.Suffix, "")
	}
	_, err = s.List(ctx, &access.Principal{OrgID: owner.OrgID, Role: access.Owner, Scopes: []access.Scope{access.ScopeWrite}}, true)
	is.True(errors.Is(err, access.ErrForbidden)) // no read scope
}

// TestOrgProviderShortKey: a key of 8 characters or fewer shows no suffix,
// yet the provider still says it has a key.
func TestOrgProviderShortKey(t *testing.T) {
	is := is.New(t)
	s, _, _ := newOrgProviders(t)
	p, err := s.Create(context.Background(), owner, app.NewOrgProvider{Name: "short", BaseURL: "https://x.example.com", APIKey: "abc12345"})
	is.NoErr(err)
	is.Equal(p.Suffix, "")
	is.Equal(p.Sealed, nil)
	is.True(p.HasKey())
	got, err := s.Get(context.Background(), owner, p.ID)
	is.NoErr(err)
	is.True(got.HasKey())
}

// TestOrgProviderReencrypt: keys sealed with an older encryption key are
// sealed again with the first one; the secret and the version stay.
func TestOrgProviderReencrypt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	oldKey, newKey := fernetKey(t), fernetKey(t)
	s, pb, _ := newOrgProviders(t)
	s.Cipher = newCipher(t, oldKey)
	p, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "https://x.example.com", APIKey: "sk-org-provider-0001"})
	is.NoErr(err)
	_, err = s.Create(ctx, owner, app.NewOrgProvider{Name: "keyless", BaseURL: "https://y.example.com"})
	is.NoErr(err)
	before, err := s.Store.GetProvider(ctx, "org1", p.ID)
	is.NoErr(err)

	s.Cipher = newCipher(t, newKey, oldKey)
	resealed, failed, err := s.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(resealed, 1)
	is.Equal(failed, 0)
	after, err := s.Store.GetProvider(ctx, "org1", p.ID)
	is.NoErr(err)
	is.True(string(after.Sealed) != string(before.Sealed))
	is.Equal(after.Version, before.Version)

	s.Cipher = newCipher(t, newKey) // the old key can go
	resealed, failed, err = s.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(resealed+failed, 0)
	_, err = s.TestConnection(ctx, owner, p.ID)
	is.NoErr(err)
	is.Equal(pb.keys[len(pb.keys)-1], "sk-org-provider-0001")

	s.Cipher = newCipher(t, fernetKey(t)) // a stranger's key opens nothing
	_, failed, err = s.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(failed, 1)
}

func TestOrgProviderModels(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s, _, fg := newOrgProviders(t)
	p, err := s.Create(ctx, owner, app.NewOrgProvider{Name: "mine", BaseURL: "https://x.example.com",
		Models: []app.NewOrgModel{{Name: "a", InputPrice: usdPrice(1)}, {Name: "b"}}})
	is.NoErr(err)
	a, b := p.Models[0], p.Models[1]

	pr, m, err := s.GetModel(ctx, owner, a.ID)
	is.NoErr(err)
	is.Equal(pr.ID, p.ID)
	is.Equal(m.Name, "a")
	_, _, err = s.GetModel(ctx, otherOwner, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, _, err = s.GetModel(ctx, editor, a.ID)
	is.NoErr(err) // provider info
	_, _, err = s.UpdateModel(ctx, editor, a.ID, app.OrgModelChange{Name: strPtr("a3")})
	is.True(errors.Is(err, access.ErrForbidden))

	n := 4096
	_, m, err = s.UpdateModel(ctx, owner, a.ID, app.OrgModelChange{Name: strPtr("a2"), ContextLength: &n, SetInputPrice: true, SetOutputPrice: true,
		OutputPrice: usdPrice(2)})
	is.NoErr(err)
	is.Equal(m.Name, "a2")
	is.Equal(m.ContextLength, 4096)
	is.Equal(m.InputPerMTok, nil) // set to none
	is.Equal(*m.OutputPerMTok, int64(2_000_000))
	is.Equal(fg.ids, []string{p.ID})
	for _, tt := range []struct {
		name  string
		ch    app.OrgModelChange
		kind  error
		code  string
		field string
	}{
		{"onto another's name", app.OrgModelChange{Name: strPtr("b")}, ports.ErrConflict, app.CodeModelExists, "name"},
		{"empty name", app.OrgModelChange{Name: strPtr(" ")}, ports.ErrInvalid, "invalid_request", "name"},
		{"negative price", app.OrgModelChange{SetInputPrice: true, InputPrice: usdPrice(-1)}, ports.ErrInvalid, "invalid_request", "input_price"},
	} {
		_, _, err = s.UpdateModel(ctx, owner, a.ID, tt.ch)
		refusal(t, err, tt.kind, tt.code, tt.field)
	}
	_, _, err = s.UpdateModel(ctx, otherOwner, a.ID, app.OrgModelChange{Name: strPtr("x")})
	is.True(errors.Is(err, ports.ErrNotFound))

	is.True(errors.Is(s.DeleteModel(ctx, otherOwner, b.ID), ports.ErrNotFound))
	is.NoErr(s.DeleteModel(ctx, owner, b.ID))
	err = s.DeleteModel(ctx, owner, b.ID)
	refusal(t, err, ports.ErrNotFound, "not_found", "")
	got, err := s.Get(ctx, owner, p.ID)
	is.NoErr(err)
	is.Equal(len(got.Models), 1)
	is.Equal(got.Models[0].Name, "a2")
}
