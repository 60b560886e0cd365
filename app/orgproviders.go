package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the organization providers' refusals.
const (
	// CodeProviderNameTaken: the organization already has a provider of
	// that name, or the server declares one (409).
	CodeProviderNameTaken = "provider_name_taken"
	// CodeModelExists: the provider already lists the model (409).
	CodeModelExists = "model_exists"
	// CodeBaseURLRefused: the base URL leads to an address the SSRF guard
	// refuses (loopback, private, link-local, metadata, a port other than
	// 80 and 443); nothing was sent (400, field base_url).
	CodeBaseURLRefused = "base_url_refused"
	// CodeProviderUnreachable: the endpoint did not give its model list
	// (502).
	CodeProviderUnreachable = "provider_unreachable"
	// CodeProviderKeyRefused: the endpoint refused the provider's key
	// (502).
	CodeProviderKeyRefused = "provider_key_refused"
)

// OrgProviderService manages an organization's own OpenAI-compatible
// providers: owners only. The key is sealed before it is stored and opened
// only to reach the endpoint; only its last 4 characters are returned.
// Every request to an endpoint goes through the SSRF guard (Probe, and the
// LLM adapter for calls).
type OrgProviderService struct {
	Store  ports.ProviderStore
	Cipher ports.Cipher
	// Providers are the server's own: their names are not available.
	Providers ports.Providers
	Probe     ports.ProviderProbe
	// Clients, when set, drops a provider's clients when it changes or
	// goes.
	Clients ports.ClientCache
	Clock   ports.Clock
	IDs     ports.IDs
	Log     *slog.Logger
}

// NewOrgProviderService manages organizations' own providers in store.
// clients may be nil (see the field).
func NewOrgProviderService(store ports.ProviderStore, cipher ports.Cipher, providers ports.Providers, probe ports.ProviderProbe,
	clients ports.ClientCache, clock ports.Clock, ids ports.IDs, log *slog.Logger) *OrgProviderService {
	return &OrgProviderService{Store: store, Cipher: cipher, Providers: providers, Probe: probe, Clients: clients, Clock: clock,
		IDs: ids, Log: log}
}

// NewOrgModel is a model to add: prices in USD per million tokens.
type NewOrgModel struct {
	Name          string
	ContextLength *int
	InputPrice    *float64
	OutputPrice   *float64
	// Caps are the declared capabilities (none by default).
	Caps orgprovider.Caps
}

// NewOrgProvider is a provider to create.
type NewOrgProvider struct {
	Name    string
	Type    string // "" means openai_compatible
	BaseURL string
	// APIKey is the plaintext key; "" for an endpoint that takes none.
	APIKey  string
	Enabled *bool // nil means enabled
	Models  []NewOrgModel
}

// OrgProviderChange changes a provider; nil fields stay as they are.
type OrgProviderChange struct {
	Name    *string
	BaseURL *string
	// SetKey applies APIKey: a new key, or none when "".
	SetKey  bool
	APIKey  string
	Enabled *bool
}

// ConnectionCheck is the verdict of a connection test.
type ConnectionCheck struct {
	Success bool
	// Model is the model the test called ("" when it read the model list).
	Model   string
	Message string
	Latency time.Duration
}

// Discovery is what model discovery found and imported.
type Discovery struct {
	Provider *orgprovider.Provider
	// Listed counts the endpoint's models; Imported are the ones added.
	Listed   int
	Imported []orgprovider.Model
}

// reservedProviderNames cannot name an organization's provider: the
// sandbox's models and the automatic choice keep their meaning.
var reservedProviderNames = map[string]bool{"sandbox": true, model.Auto: true}

// providerFieldError turns the domain's refusals into 400s naming the field.
func providerFieldError(err error, prefix string) error {
	var fe *orgprovider.FieldError
	if errors.As(err, &fe) {
		// A model's fields are named from the model: models.0.name in a
		// provider's list, name on its own.
		field := prefix + strings.TrimPrefix(fe.Field.Error(), "models.")
		return Invalid(field, "%s: %s", field, fe.Reason)
	}
	return err
}

func (s *OrgProviderService) checkName(name string) error {
	if err := orgprovider.CheckName(name); err != nil {
		return providerFieldError(err, "")
	}
	if _, ok := s.Providers.Provider(name); ok || reservedProviderNames[name] {
		return (&Error{Kind: ports.ErrConflict, Code: CodeProviderNameTaken,
			Detail: fmt.Sprintf("name: %q names a provider of the server; choose another name", name)}).at("name")
	}
	return nil
}

// micro converts a price in USD per million tokens to micro-credits.
func micro(field string, usd *float64) (*int64, error) {
	if usd == nil {
		return nil, nil
	}
	if math.IsNaN(*usd) || *usd < 0 || *usd > float64(orgprovider.MaxPricePerMTok/model.MicroCreditsPerUSD) {
		return nil, Invalid(field, "%s must be between 0 and %d (USD per million tokens)", field, orgprovider.MaxPricePerMTok/model.MicroCreditsPerUSD)
	}
	v := int64(math.Round(*usd * model.MicroCreditsPerUSD))
	return &v, nil
}

// newModel checks one model to add; prefix names it in errors ("models.0.").
func (s *OrgProviderService) newModel(in NewOrgModel, prefix string, now time.Time) (orgprovider.Model, error) {
	m := orgprovider.Model{ID: s.IDs.NewID(), Name: strings.TrimSpace(in.Name), Caps: in.Caps, CreatedAt: now}
	if in.ContextLength != nil {
		m.ContextLength = *in.ContextLength
	}
	var err error
	if m.InputPerMTok, err = micro(prefix+"input_price", in.InputPrice); err != nil {
		return m, err
	}
	if m.OutputPerMTok, err = micro(prefix+"output_price", in.OutputPrice); err != nil {
		return m, err
	}
	return m, providerFieldError(orgprovider.CheckModel(m), prefix)
}

// seal seals a key; nil for none.
func (s *OrgProviderService) seal(key string) (sealed []byte, suffix string, err error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, "", nil
	}
	if err := checkSecret(key); err != nil {
		return nil, "", err
	}
	if sealed, err = s.Cipher.Seal([]byte(key)); err != nil {
		return nil, "", err
	}
	return sealed, rotation.SuffixOf(key), nil
}

// publicProvider returns p without its sealed key.
// shownTo is pr as the reads show it to p (operators read providers, SPEC's
// "provider info"): never the key, and its last characters only to whoever
// may list provider keys (owners), as GET /api/org-keys shows them.
func shownTo(p *access.Principal, pr *orgprovider.Provider) *orgprovider.Provider {
	pr = publicProvider(pr)
	if pr != nil && access.Authorize(p, access.ActListProviderKeys) != nil {
		pr.Suffix = ""
	}
	return pr
}

func publicProvider(p *orgprovider.Provider) *orgprovider.Provider {
	if p != nil {
		p.Redact()
	}
	return p
}

func (s *OrgProviderService) notFound(err error, id string) error {
	if _, ok := AsError(err); ok {
		return err // already composed for clients (a closure's refusal)
	}
	if errors.Is(err, ports.ErrNotFound) {
		return coded(ports.ErrNotFound, "not_found", "provider %s not found", id)
	}
	if errors.Is(err, ports.ErrConflict) {
		return (&Error{Kind: ports.ErrConflict, Code: CodeProviderNameTaken, Detail: "name: the organization already has a provider of that name"}).at("name")
	}
	return err
}

func (s *OrgProviderService) forget(id string) {
	if s.Clients != nil {
		s.Clients.Forget(id)
	}
}

// List returns the organization's providers by name: the enabled ones,
// or all with inactive.
func (s *OrgProviderService) List(ctx context.Context, p *access.Principal, inactive bool) ([]*orgprovider.Provider, error) {
	if err := access.Authorize(p, access.ActListOrgProviders); err != nil {
		return nil, err
	}
	ps, err := s.Store.ListProviders(ctx, p.OrgID)
	if err != nil {
		return nil, err
	}
	out := ps[:0]
	for _, pr := range ps {
		if pr.Enabled || inactive {
			out = append(out, shownTo(p, pr))
		}
	}
	return out, nil
}

// Get returns one of the organization's providers.
func (s *OrgProviderService) Get(ctx context.Context, p *access.Principal, id string) (*orgprovider.Provider, error) {
	if err := access.Authorize(p, access.ActGetOrgProvider); err != nil {
		return nil, err
	}
	pr, err := s.Store.GetProvider(ctx, p.OrgID, id)
	if err != nil {
		return nil, s.notFound(err, id)
	}
	return shownTo(p, pr), nil
}

// Create checks and stores a new provider with its models.
func (s *OrgProviderService) Create(ctx context.Context, p *access.Principal, in NewOrgProvider) (*orgprovider.Provider, error) {
	if err := access.Authorize(p, access.ActCreateOrgProvider); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(in.Name)
	if err := s.checkName(name); err != nil {
		return nil, err
	}
	if in.Type == "" {
		in.Type = orgprovider.TypeOpenAICompatible
	}
	if err := orgprovider.CheckType(in.Type); err != nil {
		return nil, providerFieldError(err, "")
	}
	base, err := orgprovider.CheckBaseURL(strings.TrimSpace(in.BaseURL))
	if err != nil {
		return nil, providerFieldError(err, "")
	}
	now := s.Clock.Now()
	pr := &orgprovider.Provider{ID: s.IDs.NewID(), OrgID: p.OrgID, Name: name, Type: in.Type, BaseURL: base, Version: 1,
		Enabled: in.Enabled == nil || *in.Enabled, Models: []orgprovider.Model{}, CreatedAt: now, UpdatedAt: now}
	for i, im := range in.Models {
		prefix := fmt.Sprintf("models.%d.", i)
		m, err := s.newModel(im, prefix, now)
		if err != nil {
			return nil, err
		}
		if err := pr.AddModel(m); err != nil {
			return nil, modelError(err, prefix)
		}
	}
	if pr.Sealed, pr.Suffix, err = s.seal(in.APIKey); err != nil {
		return nil, err
	}
	if err := s.Store.CreateProvider(ctx, pr); err != nil {
		return nil, s.notFound(err, pr.ID)
	}
	s.Log.InfoContext(ctx, "organization provider created", "provider_id", pr.ID, "org_id", p.OrgID, "name", pr.Name)
	return publicProvider(pr), nil
}

// Update renames, re-points, re-keys or switches a provider.
func (s *OrgProviderService) Update(ctx context.Context, p *access.Principal, id string, ch OrgProviderChange) (*orgprovider.Provider, error) {
	if err := access.Authorize(p, access.ActUpdateOrgProvider); err != nil {
		return nil, err
	}
	var name, base string
	var err error
	if ch.Name != nil {
		name = strings.TrimSpace(*ch.Name)
		if err := s.checkName(name); err != nil {
			return nil, err
		}
	}
	if ch.BaseURL != nil {
		if base, err = orgprovider.CheckBaseURL(strings.TrimSpace(*ch.BaseURL)); err != nil {
			return nil, providerFieldError(err, "")
		}
	}
	var sealed []byte
	var suffix string
	if ch.SetKey {
		if sealed, suffix, err = s.seal(ch.APIKey); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	pr, err := s.Store.UpdateProvider(ctx, p.OrgID, id, func(pr *orgprovider.Provider) error {
		if ch.Name != nil {
			pr.Name = name
		}
		if ch.BaseURL != nil {
			pr.SetBaseURL(base)
		}
		if ch.SetKey {
			pr.SetKey(sealed, suffix)
		}
		if ch.Enabled != nil {
			pr.Enabled = *ch.Enabled
		}
		pr.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, s.notFound(err, id)
	}
	s.forget(pr.ID)
	return publicProvider(pr), nil
}

// Delete removes a provider and its models.
func (s *OrgProviderService) Delete(ctx context.Context, p *access.Principal, id string) error {
	if err := access.Authorize(p, access.ActDeleteOrgProvider); err != nil {
		return err
	}
	if err := s.Store.DeleteProvider(ctx, p.OrgID, id); err != nil {
		return s.notFound(err, id)
	}
	s.forget(id)
	s.Log.InfoContext(ctx, "organization provider deleted", "provider_id", id, "org_id", p.OrgID)
	return nil
}

// endpoint is how calls reach pr: its key opened only when a client is
// built.
func endpointOf(c ports.Cipher, pr *orgprovider.Provider) ports.Endpoint {
	e := ports.Endpoint{ProviderID: pr.ID, Version: pr.Version, Type: pr.Type, BaseURL: pr.BaseURL,
		Models: make(map[string]model.Info, len(pr.Models))}
	for _, m := range pr.Models {
		e.Models[m.Name] = orgModelInfo(pr, m)
	}
	if pr.HasKey() {
		sealed := pr.Sealed
		e.Open = func() (ports.Secret, error) {
			b, err := c.Open(sealed)
			if err != nil {
				return "", fmt.Errorf("open provider key: %w", err)
			}
			return ports.Secret(b), nil
		}
	}
	return e
}

// refused is the answer to a base URL the SSRF guard refused.
func refused(pr *orgprovider.Provider) error {
	return (&Error{Kind: ports.ErrInvalid, Code: CodeBaseURLRefused, Detail: fmt.Sprintf(
		"base_url refused: %s must resolve to a public address, on port 80 or 443 (names that do not resolve, loopback names, and loopback, private, link-local or metadata addresses are refused); nothing was sent", pr.BaseURL)}).at("base_url")
}

// TestConnection makes a cheap real call to the provider: a tiny
// completion with its first model, or its model list when it has none. A
// base URL the SSRF guard refuses is a 400 (base_url_refused); an endpoint
// that fails answers Success false with a fixed message.
func (s *OrgProviderService) TestConnection(ctx context.Context, p *access.Principal, id string) (ConnectionCheck, error) {
	if err := access.Authorize(p, access.ActTestOrgProvider); err != nil {
		return ConnectionCheck{}, err
	}
	pr, err := s.Store.GetProvider(ctx, p.OrgID, id)
	if err != nil {
		return ConnectionCheck{}, s.notFound(err, id)
	}
	c := ConnectionCheck{Success: true, Message: "the provider answered"}
	if len(pr.Models) > 0 {
		c.Model = pr.Models[0].Name
	}
	t0 := time.Now()
	terr := s.Probe.TestEndpoint(ctx, endpointOf(s.Cipher, pr), c.Model)
	c.Latency = time.Since(t0)
	switch {
	case terr == nil:
	case errors.Is(terr, ports.ErrDestinationRefused):
		return ConnectionCheck{}, refused(pr)
	case errors.Is(terr, ports.ErrLLMAuth):
		c.Success, c.Message = false, "the provider refused the key"
	default:
		c.Success, c.Message = false, testFailure(terr)
		s.Log.WarnContext(ctx, "organization provider test failed", "provider_id", pr.ID, "err", terr)
	}
	return c, nil
}

// DiscoverModels reads the endpoint's model list (GET {base_url}/models)
// and imports the models the provider does not list yet.
func (s *OrgProviderService) DiscoverModels(ctx context.Context, p *access.Principal, id string) (Discovery, error) {
	if err := access.Authorize(p, access.ActDiscoverOrgProviderModels); err != nil {
		return Discovery{}, err
	}
	pr, err := s.Store.GetProvider(ctx, p.OrgID, id)
	if err != nil {
		return Discovery{}, s.notFound(err, id)
	}
	names, lerr := s.Probe.ListEndpointModels(ctx, endpointOf(s.Cipher, pr))
	switch {
	case lerr == nil:
	case errors.Is(lerr, ports.ErrDestinationRefused):
		return Discovery{}, refused(pr)
	case errors.Is(lerr, ports.ErrLLMAuth):
		return Discovery{}, &Error{Kind: ports.ErrLLMAuth, Code: CodeProviderKeyRefused, Detail: "the provider refused the key"}
	default:
		s.Log.WarnContext(ctx, "organization provider model discovery failed", "provider_id", pr.ID, "err", lerr)
		return Discovery{}, &Error{Kind: ports.ErrLLMUnavailable, Code: CodeProviderUnreachable,
			Detail: "the provider did not give its model list: " + testFailure(lerr)}
	}
	now := s.Clock.Now()
	var added []orgprovider.Model
	pr, err = s.Store.UpdateProvider(ctx, p.OrgID, id, func(u *orgprovider.Provider) error {
		added = u.Import(names, s.IDs.NewID, now)
		if len(added) > 0 {
			u.UpdatedAt = now
		}
		return nil
	})
	if err != nil {
		return Discovery{}, s.notFound(err, id)
	}
	return Discovery{Provider: publicProvider(pr), Listed: len(names), Imported: added}, nil
}

// Reencrypt seals every organization provider's key again with the first
// encryption key (enrich admin reencrypt, with ProviderKeyService's), so
// that older encryption keys can be dropped. Keys already sealed with the
// first key are left alone; one that opens with no configured key is
// counted in failed and left as it is (its provider's id is logged, never
// the key). The secret is unchanged: no new version.
func (s *OrgProviderService) Reencrypt(ctx context.Context) (resealed, failed int, err error) {
	ps, err := s.Store.AllProviders(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range ps {
		if !p.HasKey() {
			continue
		}
		sealed, err := reseal(s.Cipher, p.Sealed)
		if errors.Is(err, errUnopenable) {
			failed++
			s.Log.WarnContext(ctx, "organization provider key does not open with any encryption key", "provider_id", p.ID, "err", err)
			continue
		}
		if err != nil {
			return resealed, failed, err
		}
		if sealed == nil {
			continue // sealed under the first key already
		}
		old := p.Sealed
		_, err = s.Store.UpdateProvider(ctx, p.OrgID, p.ID, func(u *orgprovider.Provider) error {
			if string(u.Sealed) == string(old) {
				u.Sealed = sealed
			}
			return nil
		})
		if errors.Is(err, ports.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return resealed, failed, err
		}
		resealed++
	}
	return resealed, failed, nil
}
