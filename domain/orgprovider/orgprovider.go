// Package orgprovider is an organization's own LLM provider: an
// OpenAI-compatible endpoint (base URL and an optional key) and the models
// the organization calls on it as <name>::<model>. The rules of its fields
// and of its model list live here; storage and calls are elsewhere.
package orgprovider

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TypeOpenAICompatible is the only type an organization can declare: any
// endpoint that speaks OpenAI's chat completions and models protocol.
const TypeOpenAICompatible = "openai_compatible"

// Types lists the types an organization's provider may have.
func Types() []string { return []string{TypeOpenAICompatible} }

// Limits of a provider's fields.
const (
	MaxName      = 64
	MaxBaseURL   = 2048
	MaxModelName = 200
	// MaxModels bounds a provider's model list (discovery imports at most
	// up to it).
	MaxModels = 500
	// MaxContextLength bounds a declared context size (tokens).
	MaxContextLength = 100_000_000
	// MaxPricePerMTok bounds a declared price: 10,000 USD per million
	// tokens, in micro-credits.
	MaxPricePerMTok = 10_000 * 1_000_000
)

// Field errors: each names the field it refuses (the app reports it).
var (
	ErrName          = errors.New("name")
	ErrBaseURL       = errors.New("base_url")
	ErrType          = errors.New("type")
	ErrModelName     = errors.New("models.name")
	ErrContextLength = errors.New("models.context_length")
	ErrPrice         = errors.New("models.price")
	ErrStrict        = errors.New("models.supports_strict_structured_output")
	// ErrDuplicateModel is a model name the provider already lists.
	ErrDuplicateModel = errors.New("duplicate model")
	// ErrTooManyModels is a model list past MaxModels.
	ErrTooManyModels = errors.New("too many models")
)

// FieldError is a refused field value; Unwrap gives the field's sentinel.
type FieldError struct {
	Field  error
	Reason string
}

func (e *FieldError) Error() string { return e.Field.Error() + ": " + e.Reason }

// Unwrap returns the field's sentinel.
func (e *FieldError) Unwrap() error { return e.Field }

func refuse(field error, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Model is one model of the provider.
type Model struct {
	ID   string
	Name string
	// ContextLength is the model's context size in tokens; 0 when unknown.
	ContextLength int
	// InputPerMTok and OutputPerMTok are prices in micro-credits per
	// million tokens; nil when not declared (then calls cost nothing in
	// the ledger: the organization pays its provider directly).
	InputPerMTok, OutputPerMTok *int64
	// Caps are the capabilities the organization declares for the model
	// (none by default: prompted JSON, validated as always).
	Caps Caps
	// Discovered marks a model imported from the endpoint's model list.
	Discovered bool
	CreatedAt  time.Time
}

// Caps are what an organization declares its model can do, as the
// catalog says of the server's models. Web search is not among them: no
// endpoint of this type has a search tool enrich calls.
type Caps struct {
	// ResponseSchema: the endpoint takes the OpenAI protocol's JSON-schema
	// response format; StrictOutput: with strict decoding (which needs
	// ResponseSchema).
	ResponseSchema, StrictOutput bool
	Vision, PDFInput             bool
	Reasoning, ToolCalls         bool
	AudioInput, VideoInput       bool
}

// Provider is an organization's own provider.
type Provider struct {
	ID      string
	OrgID   string
	Name    string
	Type    string
	BaseURL string
	// Sealed is the key, encrypted at rest; nil for an endpoint that takes
	// no key. Suffix is its last 4 characters (empty for a short key).
	Sealed []byte
	Suffix string
	// Version changes whenever the endpoint or the key does, so that
	// provider clients built on the old ones are not reused.
	Version   int
	Enabled   bool
	Models    []Model
	CreatedAt time.Time
	UpdatedAt time.Time

	// redacted: the sealed key was dropped from this copy (Redact).
	redacted bool
}

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// CheckName checks a provider's name, the prefix of its model keys
// (<name>::<model>): 1 to MaxName lower-case letters, digits, '_' and '-',
// starting with a letter or digit.
func CheckName(name string) error {
	switch {
	case name == "":
		return refuse(ErrName, "name is required")
	case len(name) > MaxName:
		return refuse(ErrName, "name must be at most %d characters", MaxName)
	case !validName.MatchString(name):
		return refuse(ErrName, "name must be lower-case letters, digits, '_' and '-', starting with a letter or digit (it prefixes model keys: <name>::<model>)")
	}
	return nil
}

// CheckType checks a provider type.
func CheckType(t string) error {
	if t != TypeOpenAICompatible {
		return refuse(ErrType, "type must be %q", TypeOpenAICompatible)
	}
	return nil
}

// CheckBaseURL checks an endpoint's base URL and returns it without a
// trailing slash: an absolute http or https URL with a host, no user
// information, query or fragment. Whether its address may be reached is
// decided when it is dialled, not here.
func CheckBaseURL(raw string) (string, error) {
	if raw == "" {
		return "", refuse(ErrBaseURL, "base_url is required")
	}
	if len(raw) > MaxBaseURL {
		return "", refuse(ErrBaseURL, "base_url must be at most %d characters", MaxBaseURL)
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsFunc(raw, unicode.IsControl) {
		return "", refuse(ErrBaseURL, "base_url must not contain spaces or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return "", refuse(ErrBaseURL, "base_url must be an absolute http or https URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", refuse(ErrBaseURL, "base_url must be an http or https URL")
	case u.Hostname() == "":
		return "", refuse(ErrBaseURL, "base_url must name a host")
	case u.User != nil:
		return "", refuse(ErrBaseURL, "base_url must not carry user information; send the key in api_key")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", refuse(ErrBaseURL, "base_url must not have a query or a fragment")
	}
	return strings.TrimRight(raw, "/"), nil
}

// CheckModel checks a model's name, context size, prices and capabilities.
func CheckModel(m Model) error {
	switch {
	case m.Name == "":
		return refuse(ErrModelName, "a model name is required")
	case !utf8.ValidString(m.Name):
		return refuse(ErrModelName, "a model name must be UTF-8")
	case len(m.Name) > MaxModelName:
		return refuse(ErrModelName, "a model name must be at most %d bytes", MaxModelName)
	case strings.TrimSpace(m.Name) != m.Name || strings.ContainsFunc(m.Name, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }):
		return refuse(ErrModelName, "a model name must not contain spaces or control characters")
	case m.ContextLength < 0 || m.ContextLength > MaxContextLength:
		return refuse(ErrContextLength, "context_length must be between 0 and %d", MaxContextLength)
	case m.Caps.StrictOutput && !m.Caps.ResponseSchema:
		return refuse(ErrStrict, "strict structured output needs supports_response_schema")
	}
	for _, p := range []*int64{m.InputPerMTok, m.OutputPerMTok} {
		if p != nil && (*p < 0 || *p > MaxPricePerMTok) {
			return refuse(ErrPrice, "prices must be between 0 and %d USD per million tokens", MaxPricePerMTok/1_000_000)
		}
	}
	return nil
}

// Model returns the provider's model named name.
func (p *Provider) Model(name string) (Model, bool) {
	for _, m := range p.Models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// ModelByID returns the provider's model with id.
func (p *Provider) ModelByID(id string) (Model, bool) {
	for _, m := range p.Models {
		if m.ID == id {
			return m, true
		}
	}
	return Model{}, false
}

// ErrNoModel is a model id the provider does not list.
var ErrNoModel = errors.New("no such model")

// ReplaceModel replaces the model with m's id, refusing an invalid model
// and a name another of the provider's models has (ErrDuplicateModel).
func (p *Provider) ReplaceModel(m Model) error {
	i := -1
	for j, old := range p.Models {
		switch {
		case old.ID == m.ID:
			i = j
		case old.Name == m.Name:
			return fmt.Errorf("%w: %s", ErrDuplicateModel, m.Name)
		}
	}
	if i < 0 {
		return fmt.Errorf("%w: %s", ErrNoModel, m.ID)
	}
	if err := CheckModel(m); err != nil {
		return err
	}
	p.Models[i] = m
	return nil
}

// RemoveModel removes the model with id (ErrNoModel when there is none).
func (p *Provider) RemoveModel(id string) error {
	for i, m := range p.Models {
		if m.ID == id {
			p.Models = append(p.Models[:i:i], p.Models[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrNoModel, id)
}

// AddModel adds m, refusing an invalid model, a name the provider already
// lists (ErrDuplicateModel) and a list past MaxModels (ErrTooManyModels).
func (p *Provider) AddModel(m Model) error {
	if err := CheckModel(m); err != nil {
		return err
	}
	if _, ok := p.Model(m.Name); ok {
		return fmt.Errorf("%w: %s", ErrDuplicateModel, m.Name)
	}
	if len(p.Models) >= MaxModels {
		return fmt.Errorf("%w: at most %d", ErrTooManyModels, MaxModels)
	}
	p.Models = append(p.Models, m)
	return nil
}

// Import adds the models named in names that the provider does not list
// yet, in order, skipping names that are not valid model names and
// stopping at MaxModels. It returns the models added.
func (p *Provider) Import(names []string, newID func() string, now time.Time) []Model {
	var added []Model
	for _, n := range names {
		if len(p.Models) >= MaxModels {
			break
		}
		m := Model{Name: n, Discovered: true, CreatedAt: now}
		if CheckModel(m) != nil {
			continue
		}
		if _, ok := p.Model(n); ok {
			continue
		}
		m.ID = newID()
		p.Models = append(p.Models, m)
		added = append(added, m)
	}
	return added
}

// SetBaseURL points the provider at another endpoint (a new version).
func (p *Provider) SetBaseURL(u string) {
	if u != p.BaseURL {
		p.BaseURL = u
		p.Version++
	}
}

// SetKey replaces the key (nil sealed: no key), a new version.
func (p *Provider) SetKey(sealed []byte, suffix string) {
	p.Sealed, p.Suffix, p.redacted = sealed, suffix, false
	p.Version++
}

// HasKey reports whether the provider has a key (calls carry it).
func (p *Provider) HasKey() bool { return len(p.Sealed) > 0 || p.redacted }

// Redact drops the sealed key from a copy shown to clients; HasKey still
// says whether there is one.
func (p *Provider) Redact() {
	p.redacted = p.HasKey()
	p.Sealed = nil
}
