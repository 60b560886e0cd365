package llm

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Provider types ENRICH_PROVIDER_<NAME>_TYPE accepts.
const (
	TypeOpenAI    = "openai"
	TypeAnthropic = "anthropic"
	TypeGoogleAI  = "googleai"
	TypeMistral   = "mistral"
	TypeOllama    = "ollama"
)

// SandboxProvider is the provider name of the built-in models. Declaring a
// provider of that name is an error, so that sandbox::* always means them.
const SandboxProvider = "sandbox"

// ProviderConfig declares one provider: its models are reachable as
// <Name>::<model>.
type ProviderConfig struct {
	Name    string
	Type    string
	BaseURL string
	APIKey  string
	Models  []string
	// Keyless declares that the provider needs no key
	// (ENRICH_PROVIDER_<NAME>_KEYLESS=true), like a self-hosted server;
	// ollama is keyless by nature. Calls to a keyless provider send no
	// Authorization header at all.
	Keyless bool
	// Customer marks a provider whose base URL comes from an organization
	// rather than from the server's operators: its calls go through the
	// SSRF-safe client (Config.GuardedHTTPClient), so it can reach only
	// public addresses. Providers declared in the environment are the
	// operators' and may point at private addresses.
	Customer bool
	// Concurrency, when positive, bounds the calls in flight to the
	// provider from one process (ENRICH_PROVIDER_<NAME>_CONCURRENCY),
	// instead of the server-wide ENRICH_LLM_CONCURRENCY.
	Concurrency int
}

// needsNoKey reports whether calls may go without a key.
func (p ProviderConfig) needsNoKey() bool { return p.Keyless || p.Type == TypeOllama }

// String hides the API key, so that a config can be logged.
func (p ProviderConfig) String() string {
	key := ""
	if p.APIKey != "" {
		key = "***"
		if len(p.APIKey) > 8 {
			key += p.APIKey[len(p.APIKey)-4:]
		}
	}
	return fmt.Sprintf("%s(type=%s base_url=%s api_key=%s keyless=%v models=%s)", p.Name, p.Type, p.BaseURL, key, p.Keyless, strings.Join(p.Models, ","))
}

const envPrefix = "ENRICH_PROVIDER_"

var envSuffixes = []struct{ suffix, field string }{
	{"_BASE_URL", "base_url"},
	{"_API_KEY", "api_key"},
	{"_MODELS", "models"},
	{"_TYPE", "type"},
	{"_KEYLESS", "keyless"},
	{"_CONCURRENCY", "concurrency"},
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)

// ProvidersFromEnv reads ENRICH_PROVIDER_<NAME>_TYPE, _BASE_URL, _API_KEY,
// _MODELS (comma-separated), _KEYLESS (true or false) and _CONCURRENCY from environ (os.Environ() form). NAME is
// lower-cased into the provider name: ENRICH_PROVIDER_LOCAL_MODELS=qwen3
// gives the key local::qwen3. The result is sorted by name. A variable with
// the prefix but none of the suffixes is an error, so that a typo
// (ENRICH_PROVIDER_LOCAL_MODEL) is not silently ignored.
func ProvidersFromEnv(environ []string) ([]ProviderConfig, error) {
	byName := map[string]*ProviderConfig{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, envPrefix) {
			continue
		}
		rest := strings.TrimPrefix(k, envPrefix)
		field, name := "", ""
		for _, s := range envSuffixes {
			if n, ok := strings.CutSuffix(rest, s.suffix); ok {
				field, name = s.field, strings.ToLower(n)
				break
			}
		}
		if field == "" {
			return nil, fmt.Errorf("llm: unknown variable %s: want %s<NAME>_TYPE, _BASE_URL, _API_KEY, _MODELS, _KEYLESS or _CONCURRENCY", k, envPrefix)
		}
		if !validName.MatchString(name) {
			return nil, fmt.Errorf("llm: %s: provider name %q must be letters, digits and underscores", k, name)
		}
		p := byName[name]
		if p == nil {
			p = &ProviderConfig{Name: name}
			byName[name] = p
		}
		v = strings.TrimSpace(v)
		switch field {
		case "type":
			p.Type = strings.ToLower(v)
		case "base_url":
			p.BaseURL = v
		case "api_key":
			p.APIKey = v
		case "models":
			p.Models = splitModels(v)
		case "concurrency":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("llm: %s: want a number of calls (0 or more), not %q", k, v)
			}
			p.Concurrency = n
		case "keyless":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("llm: %s: want true or false, not %q", k, v)
			}
			p.Keyless = b
		}
	}
	out := make([]ProviderConfig, 0, len(byName))
	for _, p := range byName {
		if err := p.validate(); err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func splitModels(v string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range strings.Split(v, ",") {
		m = strings.TrimSpace(m)
		if m != "" && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// validate checks what can be checked without constructing a client.
func (p ProviderConfig) validate() error {
	env := envPrefix + strings.ToUpper(p.Name)
	switch {
	case p.Name == SandboxProvider, p.Name == BuiltinProvider:
		return fmt.Errorf("llm: provider name %q is reserved for the built-in models", p.Name)
	case !validName.MatchString(p.Name):
		return fmt.Errorf("llm: provider name %q must be letters, digits and underscores", p.Name)
	case p.Type == "":
		return fmt.Errorf("llm: %s_TYPE is not set (openai, anthropic, googleai, mistral or ollama)", env)
	case len(p.Models) == 0:
		return fmt.Errorf("llm: %s_MODELS lists no model", env)
	}
	switch p.Type {
	case TypeOpenAI, TypeAnthropic, TypeGoogleAI, TypeMistral, TypeOllama:
	default:
		return fmt.Errorf("llm: %s_TYPE: unknown provider type %q (want openai, anthropic, googleai, mistral or ollama)", env, p.Type)
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("llm: %s_BASE_URL %q is not an http(s) URL", env, p.BaseURL)
		}
	}
	if p.Keyless && p.APIKey != "" {
		return fmt.Errorf("llm: %s_KEYLESS and %s_API_KEY are both set: a keyless provider sends no key", env, env)
	}
	for _, m := range p.Models {
		if strings.Contains(m, "::") {
			return fmt.Errorf("llm: %s_MODELS: model name %q must not contain ::", env, m)
		}
	}
	return nil
}
