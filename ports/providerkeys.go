package ports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
)

// ProviderKeyStore keeps LLM provider keys: organizations' own (OrgID set)
// and global ones (OrgID empty, system administrators'). Secrets are stored
// sealed (see Cipher); the store never sees a plaintext. An orgID argument
// of "" addresses the global keys; another organization's key is
// ErrNotFound.
type ProviderKeyStore interface {
	// CreateProviderKey stores k; an existing id is ErrConflict.
	CreateProviderKey(ctx context.Context, k *rotation.Key) error
	GetProviderKey(ctx context.Context, orgID, id string) (*rotation.Key, error)
	// ListProviderKeys returns the keys of orgID ("" for the global keys),
	// by provider, then oldest first.
	ListProviderKeys(ctx context.Context, orgID string) ([]*rotation.Key, error)
	// AllProviderKeys returns every key, of every organization and global,
	// by id (operators' maintenance: re-encryption).
	AllProviderKeys(ctx context.Context) ([]*rotation.Key, error)
	// UpdateProviderKey loads the key, calls fn, and stores the result
	// atomically; fn's error is returned as is and nothing is written.
	UpdateProviderKey(ctx context.Context, orgID, id string, fn func(*rotation.Key) error) (*rotation.Key, error)
	// DeleteProviderKey removes the key. A key orgID does not have (another
	// organization's, one that never existed, or one deleted already) is
	// ErrNotFound, as every other route answers for another organization's
	// objects: keys are deleted for good, so a second delete finds nothing.
	DeleteProviderKey(ctx context.Context, orgID, id string) error
	// PickProviderKey chooses a key for orgID by rotation.Ranked among the
	// organization's and the global keys of req.Provider, and records its
	// use (LastUsedAt = req.Now, Uses + 1), atomically: concurrent picks
	// never take the same idle key while another is free. With no usable
	// key it returns rotation's *NoUsableKeyError.
	PickProviderKey(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error)
}

// Cipher seals secrets at rest (provider keys) and opens them at call time.
type Cipher interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Secret is a plaintext credential on its way to a provider. It formats as
// "[redacted]" so that a log line, an error or a panic that prints it does
// not leak it.
type Secret string

// String hides the secret.
func (Secret) String() string { return "[redacted]" }

// GoString hides the secret from %#v.
func (Secret) GoString() string { return `"[redacted]"` }

// Format hides the secret from every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON hides the secret from encoding/json, and so from the JSON log
// handler, which marshals a value of a type it does not know.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// MarshalText hides the secret from encoders that use text (the text log
// handler, encoding/xml). encoding/json writes a map key of a string type as
// it is, so a Secret must never be a map key.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue hides the secret from log/slog, whichever handler writes it.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Reveal returns the plaintext, for the provider client only.
func (s Secret) Reveal() string { return string(s) }

// Credential names the key a call is paid with. The plaintext is not in it:
// Open returns it, and the LLM adapter calls Open only when it builds a
// provider client for this key and version (then caches the client).
type Credential struct {
	// KeyID is the stored key; "" means the provider's own configuration
	// (its key from the server's environment, or none for a keyless
	// provider).
	KeyID   string
	Version int
	Source  rotation.Source
	Open    func() (Secret, error)
	// Endpoint, when set, is the organization's own provider the call goes
	// to (the model is not the registry's; see ProviderStore). Open is
	// then the endpoint's key, and KeyID names the provider.
	Endpoint *Endpoint
}

// ProviderInfo says how a configured provider is reached.
type ProviderInfo struct {
	Name string
	Type string
	// Keyless providers need no key (ollama, the sandbox, or a provider
	// declared ENRICH_PROVIDER_<NAME>_KEYLESS=true). Their calls skip
	// rotation.
	Keyless bool
	// SystemKey means the server's environment gives the provider a key
	// (ENRICH_PROVIDER_<NAME>_API_KEY): the last global fallback.
	SystemKey bool
}

// Providers describes the configured providers.
type Providers interface {
	// Provider returns the provider named name; false when none is
	// configured.
	Provider(name string) (ProviderInfo, bool)
}

// KeyTester makes a cheap real call to a provider with a credential, to
// test a key. A refused key is an error wrapping ErrLLMAuth.
type KeyTester interface {
	TestKey(ctx context.Context, provider string, c Credential) error
}

// ClientCache drops the provider clients built on a key, when the key
// changes or leaves rotation.
type ClientCache interface {
	Forget(keyID string)
}

// Typed LLM failures beyond those of the LLM port.
var (
	// ErrLLMAuth means the provider refused the key (HTTP 401 or 403): the
	// key leaves rotation.
	ErrLLMAuth = errors.New("provider refused the key")
	// ErrContextLength means the prompt does not fit the model's context.
	ErrContextLength = errors.New("prompt exceeds the model's context")
	// ErrModelRetired means the provider no longer serves the model.
	ErrModelRetired = errors.New("model retired")
)

// RateLimitError is a rate limit (HTTP 429) with the provider's
// Retry-After, zero when it gave none. It wraps ErrRateLimited.
type RateLimitError struct {
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (retry after %s)", ErrRateLimited, e.RetryAfter)
	}
	return ErrRateLimited.Error()
}

// Unwrap makes the error an ErrRateLimited.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// UsageLedger keeps one entry per LLM call. It is append-only: a job's
// entries are written as its calls are answered (with the job's events, or
// with its end) and never changed or removed.
type UsageLedger interface {
	// AppendUsage adds entries. It is idempotent: an entry whose id the
	// ledger holds is skipped, so that a write retried after an unclear
	// commit, or a call written with its checkpoint and again with the
	// job's end, is one row.
	AppendUsage(ctx context.Context, entries []usage.Entry) error
	// ListUsage returns orgID's entries created in [from, to), oldest
	// first.
	ListUsage(ctx context.Context, orgID string, from, to time.Time) ([]usage.Entry, error)
	// AggregateUsage totals the entries in s by g, as usage.Aggregate
	// does (same groups, same order), without loading them.
	AggregateUsage(ctx context.Context, s usage.Scope, g usage.Group) ([]usage.Total, error)
	// CountUsage counts the calls and tokens of the entries in s, as
	// usage.CountOf does, in one indexed query: the operator's quotas
	// read it (s names the organization, the key source and the window)
	// before every spend, so it must stay cheap.
	CountUsage(ctx context.Context, s usage.Scope) (usage.Count, error)
}
