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
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// Config configures a Registry.
type Config struct {
	Providers []ProviderConfig
	// Sandbox offers the sandbox::* models.
	Sandbox bool
	// SandboxLatency is added to every sandbox answer.
	SandboxLatency time.Duration
	// Prices override the built-in table, by "provider::model" key or by
	// bare model name (the key wins).
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
	// builtinPrices are list prices of well-known models, by model name.
	builtinPrices = map[string]model.Price{
		"gpt-4o":       {InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000},
		"gpt-4o-mini":  {InputPerMTok: 150_000, OutputPerMTok: 600_000},
		"gpt-4.1":      {InputPerMTok: 2_000_000, OutputPerMTok: 8_000_000},
		"gpt-4.1-mini": {InputPerMTok: 400_000, OutputPerMTok: 1_600_000},
		"gpt-4.1-nano": {InputPerMTok: 100_000, OutputPerMTok: 400_000},
	}
)

// Default base URLs. googleai and mistral are reached through their
// OpenAI-compatible endpoints: langchaingo's mistral client ignores the
// call's context (no cancellation) and its googleai client needs Google's
// gRPC SDK, while both services speak the OpenAI protocol.
const (
	openAIURL    = "https://api.openai.com/v1"
	googleAIURL  = "https://generativelanguage.googleapis.com/v1beta/openai"
	mistralURL   = "https://api.mistral.ai/v1"
	anthropicURL = "https://api.anthropic.com/v1"
	ollamaURL    = "http://127.0.0.1:11434"
)

// anthropicMaxTokens is sent because Anthropic's API requires max_tokens
// and langchaingo leaves it out when zero.
const anthropicMaxTokens = 8192

type entry struct {
	info    model.Info
	llm     llms.Model
	opts    []llms.CallOption
	sandbox bool
}

// Registry calls models by composite key and lists them. It is safe for
// concurrent use: its clients are created once by NewRegistry and never
// change.
type Registry struct {
	entries map[model.Key]*entry
	infos   []model.Info
	timeout time.Duration
}

var (
	_ ports.LLM          = (*Registry)(nil)
	_ ports.ModelCatalog = (*Registry)(nil)
)

// NewRegistry creates one client per declared provider and model, plus the
// sandbox models when cfg.Sandbox is set.
func NewRegistry(cfg Config) (*Registry, error) {
	r := &Registry{entries: map[model.Key]*entry{}, timeout: cfg.Timeout}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	doer := statusDoer{hc: hc}
	for _, p := range cfg.Providers {
		if err := p.validate(); err != nil {
			return nil, err
		}
		for _, m := range p.Models {
			key := model.Key{Provider: p.Name, Model: m}
			if _, dup := r.entries[key]; dup {
				return nil, fmt.Errorf("llm: model %s declared twice", key)
			}
			client, opts, err := newClient(p, m, doer)
			if err != nil {
				return nil, fmt.Errorf("llm: provider %s model %s: %w", p.Name, m, err)
			}
			r.entries[key] = &entry{llm: client, opts: opts, info: model.Info{
				Key:         key,
				DisplayName: fmt.Sprintf("%s (%s)", m, p.Name),
				Price:       price(cfg, key),
			}}
		}
	}
	if cfg.Sandbox {
		for _, s := range sandbox.Specs() {
			key := model.Key{Provider: SandboxProvider, Model: s.Name}
			pr, ok := cfg.Prices[key.String()]
			if !ok {
				pr = SandboxPrice
			}
			r.entries[key] = &entry{llm: sandbox.New(s.Name, cfg.SandboxLatency), sandbox: true, info: model.Info{
				Key:           key,
				DisplayName:   fmt.Sprintf("Sandbox (deterministic, no network): %s (%s)", s.Name, s.Purpose),
				Price:         pr,
				Sandbox:       true,
				ContextLength: 128_000,
			}}
		}
	}
	for _, e := range r.entries {
		r.infos = append(r.infos, e.info)
	}
	sort.Slice(r.infos, func(i, j int) bool { return r.infos[i].Key.String() < r.infos[j].Key.String() })
	return r, nil
}

func price(cfg Config, key model.Key) model.Price {
	if p, ok := cfg.Prices[key.String()]; ok {
		return p
	}
	if p, ok := cfg.Prices[key.Model]; ok {
		return p
	}
	if p, ok := builtinPrices[key.Model]; ok {
		return p
	}
	if cfg.DefaultPrice != (model.Price{}) {
		return cfg.DefaultPrice
	}
	return DefaultModelPrice
}

// newClient builds the langchaingo model of one provider and model, and the
// call options that provider needs on every call.
func newClient(p ProviderConfig, m string, doer statusDoer) (llms.Model, []llms.CallOption, error) {
	base := p.BaseURL
	switch p.Type {
	case TypeOpenAI, TypeGoogleAI, TypeMistral:
		if base == "" {
			base = map[string]string{TypeOpenAI: openAIURL, TypeGoogleAI: googleAIURL, TypeMistral: mistralURL}[p.Type]
		}
		token := p.APIKey
		if token == "" {
			if base == openAIURL || p.Type != TypeOpenAI {
				return nil, nil, fmt.Errorf("%s_API_KEY is required for %s", envPrefix+strings.ToUpper(p.Name), base)
			}
			// Self-hosted OpenAI-compatible servers often need no key,
			// but langchaingo refuses an empty one (and would otherwise
			// read OPENAI_API_KEY from the process environment).
			token = "unused"
		}
		c, err := openai.New(openai.WithBaseURL(base), openai.WithToken(token), openai.WithModel(m), openai.WithHTTPClient(doer))
		return c, nil, err
	case TypeAnthropic:
		if p.APIKey == "" {
			return nil, nil, fmt.Errorf("%s_API_KEY is required", envPrefix+strings.ToUpper(p.Name))
		}
		if base == "" {
			base = anthropicURL
		}
		c, err := anthropic.New(anthropic.WithBaseURL(base), anthropic.WithToken(p.APIKey), anthropic.WithModel(m), anthropic.WithHTTPClient(doer))
		return c, []llms.CallOption{llms.WithMaxTokens(anthropicMaxTokens)}, err
	case TypeOllama:
		if base == "" {
			base = ollamaURL
		}
		hc := &http.Client{Transport: doer}
		c, err := ollama.New(ollama.WithServerURL(base), ollama.WithModel(m), ollama.WithHTTPClient(hc))
		return c, nil, err
	}
	return nil, nil, fmt.Errorf("provider type %s not supported yet", p.Type)
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

// Generate asks req.Model for a JSON answer to req.Messages. It returns
// the text as the model wrote it, valid or not: validation and retries
// belong to the caller.
func (r *Registry) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	e, err := r.entry(req.Model)
	if err != nil {
		return ports.LLMResponse{}, err
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w", req.Model, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	opts := append([]llms.CallOption{llms.WithJSONMode()}, e.opts...)
	if e.sandbox {
		// Only for the sandbox: openai sends Metadata to the server.
		opts = append(opts, llms.WithMetadata(map[string]any{sandbox.MetadataSchema: req.Schema}))
	}
	resp, err := e.llm.GenerateContent(ctx, msgs, opts...)
	if err != nil {
		return ports.LLMResponse{}, classify(ctx, req.Model, err)
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return ports.LLMResponse{}, fmt.Errorf("llm: %s: %w: empty response", req.Model, ports.ErrLLMUnavailable)
	}
	c := resp.Choices[0]
	in, out := Usage(c.GenerationInfo)
	return ports.LLMResponse{Text: c.Content, InputTokens: in, OutputTokens: out}, nil
}

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
		out = append(out, llms.TextParts(role, m.Content))
	}
	return out, nil
}
