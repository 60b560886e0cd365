package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// Config configures a Registry.
type Config struct {
	Providers []ProviderConfig
	// Sandbox offers the sandbox::* models.
	Sandbox bool
	// SandboxPDFText reads the PDFs given to the sandbox models (nil: the
	// sandbox's own reader, sandbox.PDFText).
	SandboxPDFText func(data []byte) (string, error)
	// SandboxLatency is added to every sandbox answer.
	SandboxLatency time.Duration
	// Catalog describes known models (capabilities, context, prices); nil
	// means the embedded one (LoadCatalog()).
	Catalog Catalog
	// Prices override the catalog's, by "provider::model" key or by bare
	// model name (the key wins).
	Prices map[string]model.Price
	// DefaultPrice prices a real model found in no table; zero means
	// DefaultModelPrice. Unknown models are not free: a missing price must
	// not hide spend.
	DefaultPrice model.Price
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends provider requests; nil means one without an overall
	// timeout (the call's context and Timeout govern).
	HTTPClient *http.Client
	// GuardedHTTPClient sends the requests of customer providers
	// (ProviderConfig.Customer); nil means GuardedHTTPClient().
	GuardedHTTPClient *http.Client
	// ClientCacheSize bounds the provider clients kept, one per model and
	// credential version (0: no bound; the service sets it from its
	// configuration).
	ClientCacheSize int
}

// DefaultTimeout bounds a call whose context has no earlier deadline. It is
// generous because a non-streaming answer arrives only when complete.
const DefaultTimeout = 3 * time.Minute

// Prices are in micro-credits per million tokens; a credit is worth one US
// dollar, so these are the providers' list prices in dollars times 10^6.
var (
	// DefaultModelPrice prices a real model that no table names.
	DefaultModelPrice = model.Price{InputPerMTok: 1_000_000, OutputPerMTok: 3_000_000}
	// SandboxPrice is small but not zero, so that costs show up in the
	// quick start and in tests of billing.
	SandboxPrice = model.Price{InputPerMTok: 10_000, OutputPerMTok: 30_000}
	// SandboxSearchPrice is what one of sandbox::search's searches costs,
	// small but not zero like SandboxPrice.
	SandboxSearchPrice int64 = 100
)

type entry struct {
	info model.Info
	prov *ProviderConfig
	// fixed is the sandbox's model: it needs no client per credential.
	fixed llms.Model
}

// Registry calls models by composite key and lists them. Provider clients
// are built per credential on first use and cached by model, key and key
// version; Forget drops a key's clients. It is safe for concurrent use.
type Registry struct {
	entries   map[model.Key]*entry
	infos     []model.Info
	providers map[string]*ProviderConfig
	timeout   time.Duration
	hc        *http.Client
	guarded   *http.Client
	// cfg is the configuration with its catalog loaded: embedding models
	// are priced from it on demand (EmbeddingModel).
	cfg Config

	clients *clientCache
}

var (
	_ ports.LLM          = (*Registry)(nil)
	_ ports.ModelCatalog = (*Registry)(nil)
	_ ports.Providers    = (*Registry)(nil)
	_ ports.KeyTester    = (*Registry)(nil)
	_ ports.ClientCache  = (*Registry)(nil)
	_ ports.Embedder     = (*Registry)(nil)
)

// NewRegistry checks the declared providers and lists their models, plus
// the sandbox models when cfg.Sandbox is set. Clients are built at call
// time, per credential.
func NewRegistry(cfg Config) (*Registry, error) {
	r := &Registry{entries: map[model.Key]*entry{}, providers: map[string]*ProviderConfig{}, timeout: cfg.Timeout,
		clients: newClientCache(cfg.ClientCacheSize)}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if cfg.Catalog == nil {
		c, err := LoadCatalog()
		if err != nil {
			return nil, err
		}
		cfg.Catalog = c
	}
	r.cfg = cfg
	r.hc = cfg.HTTPClient
	if r.hc == nil {
		r.hc = &http.Client{Transport: defaultTransport()}
	}
	r.guarded = cfg.GuardedHTTPClient
	if r.guarded == nil {
		r.guarded = GuardedHTTPClient()
	}
	for _, p := range cfg.Providers {
		if err := p.validate(); err != nil {
			return nil, err
		}
		if _, dup := r.providers[p.Name]; dup {
			return nil, fmt.Errorf("llm: provider %s declared twice", p.Name)
		}
		pc := p
		r.providers[p.Name] = &pc
		for _, m := range p.Models {
			key := model.Key{Provider: p.Name, Model: m}
			if _, dup := r.entries[key]; dup {
				return nil, fmt.Errorf("llm: model %s declared twice", key)
			}
			info := model.Info{Key: key, DisplayName: fmt.Sprintf("%s (%s)", m, p.Name)}
			ce, known := cfg.Catalog.lookup(key)
			if known {
				ce.describe(&info)
			}
			info.WebSearchTool = SearchTool(p.Type)
			info.Price = price(cfg, key, ce, known)
			r.entries[key] = &entry{prov: &pc, info: info}
		}
	}
	if cfg.Sandbox {
		for _, s := range sandbox.Specs() {
			key := model.Key{Provider: SandboxProvider, Model: s.Name}
			pr, ok := cfg.Prices[key.String()]
			if !ok {
				pr = SandboxPrice
				if s.WebSearch {
					pr.PerSearch = SandboxSearchPrice
				}
			}
			r.entries[key] = &entry{fixed: sandbox.New(s.Name, cfg.SandboxLatency, sandbox.WithPDFText(cfg.SandboxPDFText)), info: model.Info{
				Key:           key,
				DisplayName:   fmt.Sprintf("Sandbox (deterministic, no network): %s (%s)", s.Name, s.Purpose),
				Price:         pr,
				Sandbox:       true,
				ContextLength: 128_000,
				// sandbox::search answers web-search calls itself (Generate).
				WebSearch: s.WebSearch, WebSearchTool: s.WebSearch,
				// Every sandbox model reads PDFs and images (sandbox/documents.go).
				PDFInput: true, Vision: true,
			}}
		}
	}
	for _, e := range r.entries {
		r.infos = append(r.infos, e.info)
	}
	sort.Slice(r.infos, func(i, j int) bool { return r.infos[i].Key.String() < r.infos[j].Key.String() })
	return r, nil
}

// defaultTransport keeps enough idle connections per provider host for the
// service's concurrency: Go's default keeps 2, and every call past them
// opens (and TLS-handshakes) a new connection.
func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}

// price is key's price: the configured override, else the catalog's, else
// the default (unknown models are not free).
func price(cfg Config, key model.Key, ce CatalogEntry, known bool) model.Price {
	if p, ok := cfg.Prices[key.String()]; ok {
		return p
	}
	if p, ok := cfg.Prices[key.Model]; ok {
		return p
	}
	if p, ok := ce.price(); known && ok {
		return p
	}
	if cfg.DefaultPrice != (model.Price{}) {
		return cfg.DefaultPrice
	}
	return DefaultModelPrice
}

// Provider describes the provider named name (ports.Providers).
func (r *Registry) Provider(name string) (ports.ProviderInfo, bool) {
	if name == BuiltinProvider {
		return ports.ProviderInfo{Name: name, Type: BuiltinProvider, Keyless: true}, true
	}
	if name == SandboxProvider {
		for k := range r.entries {
			if k.Provider == SandboxProvider {
				return ports.ProviderInfo{Name: name, Type: SandboxProvider, Keyless: true}, true
			}
		}
		return ports.ProviderInfo{}, false
	}
	p, ok := r.providers[name]
	if !ok {
		return ports.ProviderInfo{}, false
	}
	return ports.ProviderInfo{Name: p.Name, Type: p.Type, Keyless: p.needsNoKey(), SystemKey: p.APIKey != ""}, true
}

// Forget drops the clients built on key keyID (ports.ClientCache).
func (r *Registry) Forget(keyID string) { r.clients.forget(keyID) }

// errNoKey is the error of a call that names no key to a provider that needs
// one and has none of its own.
func errNoKey(k model.Key) error {
	return fmt.Errorf("llm: %s: %w", k, &rotation.NoUsableKeyError{Provider: k.Provider})
}

// client returns the provider client of e for credential c, building and
// caching it on first use. A nil c (or one without KeyID) means the
// provider's own configuration: its key from the environment, or none when
// it is keyless.
func (r *Registry) client(e *entry, c *ports.Credential) (llms.Model, error) {
	if e.fixed != nil {
		return e.fixed, nil
	}
	ck, err := r.cacheKey(e, c)
	if err != nil {
		return nil, err
	}
	return r.clients.get(ck, func() (llms.Model, error) {
		token, err := r.token(e, ck, c)
		if err != nil {
			return nil, err
		}
		m, err := newClient(e, token, r.httpClient(e.prov))
		if err != nil {
			return nil, fmt.Errorf("llm: provider %s model %s: %w", e.prov.Name, e.info.Key.Model, err)
		}
		return m, nil
	})
}

// cacheKey names the cached clients of e for credential c: the credential's
// key and version, else the provider's own key, else none for a keyless
// provider. A provider that needs a key and has none is errNoKey.
func (r *Registry) cacheKey(e *entry, c *ports.Credential) (clientKey, error) {
	p := e.prov
	ck := clientKey{model: e.info.Key}
	switch {
	case c != nil && c.KeyID != "":
		ck.keyID, ck.version = c.KeyID, c.Version
	case p.APIKey != "":
		ck.keyID = systemKeyID
	case p.needsNoKey():
		ck.keyID = keylessKeyID
	default:
		return clientKey{}, errNoKey(e.info.Key)
	}
	return ck, nil
}

// token is the key a client named ck sends ("" for a keyless provider);
// a credential's plaintext is opened only here.
func (r *Registry) token(e *entry, ck clientKey, c *ports.Credential) (string, error) {
	switch ck.keyID {
	case systemKeyID:
		return e.prov.APIKey, nil
	case keylessKeyID:
		return "", nil
	}
	s, err := open(c)
	if err != nil {
		return "", fmt.Errorf("llm: %s: %w", e.info.Key, err)
	}
	return s.Reveal(), nil
}

// httpClient is the client of p's requests: the SSRF-safe one for a
// customer's endpoint.
func (r *Registry) httpClient(p *ProviderConfig) *http.Client {
	if p.Customer {
		return r.guarded
	}
	return r.hc
}

// open returns a credential's plaintext.
func open(c *ports.Credential) (ports.Secret, error) {
	if c == nil || c.Open == nil {
		return "", errors.New("the credential cannot be opened")
	}
	s, err := c.Open()
	if err != nil {
		// The cause comes from the cipher and never holds the plaintext.
		return "", fmt.Errorf("open key %s: %w", c.KeyID, err)
	}
	if s == "" {
		return "", fmt.Errorf("key %s is empty", c.KeyID)
	}
	return s, nil
}

// testPrompt is the cheap call that tests a key.
var testPrompt = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Reply with the word OK.")}

// TestKey makes a small real call to provider's first model with c's key
// (ports.KeyTester). The client is not cached: the key may be bad.
func (r *Registry) TestKey(ctx context.Context, provider string, c ports.Credential) error {
	p, ok := r.providers[provider]
	if !ok || len(p.Models) == 0 {
		if provider == SandboxProvider {
			return nil // nothing to reach: any key works
		}
		return fmt.Errorf("llm: %w: no provider %q is configured", ports.ErrUnknownModel, provider)
	}
	k := model.Key{Provider: provider, Model: p.Models[0]}
	s, err := open(&c)
	if err != nil {
		return fmt.Errorf("llm: %s: %w", k, err)
	}
	m, err := newClient(r.entries[k], s.Reveal(), r.httpClient(p))
	if err != nil {
		return fmt.Errorf("llm: %s: %w", k, err)
	}
	return r.testCall(ctx, k, m)
}

// testCall makes the cheap call that tests a key or an endpoint: a
// completion of at most 16 tokens.
func (r *Registry) testCall(ctx context.Context, k model.Key, m llms.Model) error {
	ctx, cancel := context.WithTimeout(ctx, min(r.timeout, 30*time.Second))
	defer cancel()
	if _, err := m.GenerateContent(ctx, testPrompt, llms.WithMaxTokens(16)); err != nil {
		return classify(ctx, k, err)
	}
	return nil
}

// Models lists the available models sorted by key.
func (r *Registry) Models() []model.Info {
	return append([]model.Info(nil), r.infos...)
}

// Model returns the model with key k, or an error wrapping
// ports.ErrUnknownModel.
func (r *Registry) Model(k model.Key) (model.Info, error) {
	e, err := r.entry(k)
	if err != nil {
		return model.Info{}, err
	}
	return e.info, nil
}

func (r *Registry) entry(k model.Key) (*entry, error) {
	if e, ok := r.entries[k]; ok {
		return e, nil
	}
	for key := range r.entries {
		if key.Provider == k.Provider {
			return nil, fmt.Errorf("llm: %w %s: provider %s has no model %q", ports.ErrUnknownModel, k, k.Provider, k.Model)
		}
	}
	if k.Provider == SandboxProvider {
		return nil, fmt.Errorf("llm: %w %s: the sandbox is not enabled (ENRICH_SANDBOX=true)", ports.ErrUnknownModel, k)
	}
	return nil, fmt.Errorf("llm: %w %s: no provider %q is configured", ports.ErrUnknownModel, k, k.Provider)
}

// Generate asks req.Model for a JSON answer to req.Messages, with the
// provider's web search tool when req.WebSearch. It returns the text as the
// model wrote it, valid or not: validation and retries belong to the
// caller. A failed call still reports what it spent, if anything.
func (r *Registry) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	if c := req.Credential; req.WebSearch && c != nil && c.Endpoint != nil {
		// An organization's own endpoint offers no search tool.
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errCannotSearch)
	}
	e, client, err := r.resolve(req)
	if err != nil {
		return ports.LLMResponse{}, err
	}
	if req.WebSearch && !(e.info.WebSearch && e.info.WebSearchTool) {
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w: %w", req.Model, ports.ErrInvalid, errCannotSearch)
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w", req.Model, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	resp, err := client.GenerateContent(ctx, msgs, generateOptions(e, req)...)
	var out ports.LLMResponse
	if resp != nil && len(resp.Choices) > 0 && resp.Choices[0] != nil {
		c := resp.Choices[0]
		u := Usage(c.GenerationInfo)
		out = ports.LLMResponse{Text: c.Content, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Searches: u.WebSearchCalls}
	} else if err == nil {
		return out, fmt.Errorf("llm: %s: %w: empty response", req.Model, ports.ErrLLMUnavailable)
	}
	if err != nil {
		return out, classify(ctx, req.Model, err)
	}
	if req.WebSearch && strings.TrimSpace(out.Text) == "" {
		return out, fmt.Errorf("llm: %s: %w: empty response", req.Model, ports.ErrLLMUnavailable)
	}
	return out, nil
}

// errCannotSearch is a call that asks a model to search when enrich calls no
// search tool for it.
var errCannotSearch = errors.New("the model cannot search the web")

var errRole = errors.New("unknown message role")

func messages(in []enrichment.Message) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(in))
	for _, m := range in {
		var role llms.ChatMessageType
		switch m.Role {
		case "system":
			role = llms.ChatMessageTypeSystem
		case "user", "human":
			role = llms.ChatMessageTypeHuman
		case "assistant", "ai":
			role = llms.ChatMessageTypeAI
		default:
			return nil, fmt.Errorf("%w %q: %w", errRole, m.Role, ports.ErrInvalid)
		}
		mc := llms.TextParts(role, m.Content)
		if len(m.Files) > 0 && role != llms.ChatMessageTypeHuman {
			return nil, fmt.Errorf("%w: only a user message carries files: %w", errPart, ports.ErrInvalid)
		}
		for _, f := range m.Files {
			mc.Parts = append(mc.Parts, llms.BinaryContent{MIMEType: f.MediaType, Data: f.Data})
		}
		out = append(out, mc)
	}
	return out, nil
}
