package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// KeyScope says whose provider keys a call manages.
type KeyScope int

const (
	// OrgKeys are the calling organization's own keys (owners).
	OrgKeys KeyScope = iota
	// GlobalKeys are the system-wide fallback keys (system administrators).
	GlobalKeys
)

// keyActions is each scope's action per operation.
var keyActions = map[KeyScope]map[string]access.Action{
	OrgKeys: {"list": access.ActListProviderKeys, "create": access.ActCreateProviderKey, "update": access.ActUpdateProviderKey,
		"delete": access.ActDeleteProviderKey, "enable": access.ActEnableProviderKey, "test": access.ActTestProviderKey},
	GlobalKeys: {"list": access.ActListGlobalKeys, "create": access.ActCreateGlobalKey, "update": access.ActUpdateGlobalKey,
		"delete": access.ActDeleteGlobalKey, "enable": access.ActEnableGlobalKey, "test": access.ActTestGlobalKey},
}

// ProviderKeyService manages LLM provider keys: organizations' own and the
// global ones. Secrets are sealed before they are stored and opened only to
// test a key or to build a provider client; they are never returned.
type ProviderKeyService struct {
	Keys      ports.ProviderKeyStore
	Cipher    ports.Cipher
	Providers ports.Providers
	Tester    ports.KeyTester
	// Clients, when set, drops a key's provider clients when it changes.
	Clients ports.ClientCache
	// Ledger, when set, gives each key listed what its calls cost.
	Ledger ports.UsageLedger
	Clock  ports.Clock
	IDs    ports.IDs
	Log    *slog.Logger
}

// NewProviderKeyService manages provider keys in keys. clients and ledger
// may be nil (see the fields).
func NewProviderKeyService(keys ports.ProviderKeyStore, cipher ports.Cipher, providers ports.Providers, tester ports.KeyTester,
	clients ports.ClientCache, ledger ports.UsageLedger, clock ports.Clock, ids ports.IDs, log *slog.Logger) *ProviderKeyService {
	return &ProviderKeyService{Keys: keys, Cipher: cipher, Providers: providers, Tester: tester, Clients: clients, Ledger: ledger,
		Clock: clock, IDs: ids, Log: log}
}

// NewProviderKey is a key to add.
type NewProviderKey struct {
	Provider string
	// ProviderID is the reference's spelling of Provider (JSON as sent):
	// a provider's name is accepted; its numeric ids name nothing here.
	ProviderID json.RawMessage
	// APIKey is the plaintext secret.
	APIKey    string
	Name      string
	ExpiresAt *time.Time
}

// ProviderKeyChange changes a key; nil fields stay as they are.
type ProviderKeyChange struct {
	Name *string
	// APIKey replaces the secret: the key is unchecked and back in rotation.
	APIKey  *string
	Enabled *bool
	// SetExpiry applies ExpiresAt (nil: never expires).
	SetExpiry bool
	ExpiresAt *time.Time
}

// KeyCheck is the verdict of a key test.
type KeyCheck struct {
	Key *rotation.Key
	// Status is valid, invalid (the provider refused the key) or error (the
	// provider could not say: unreachable, rate limited, timed out).
	Status    string
	Message   string
	CheckedAt time.Time
}

// Limits of provider-key fields (openapi.yaml writes the same; checked by
// adapters/httpapi's TestLimitsAgreeWithGo).
const (
	MaxProviderKeyName   = 100
	MaxProviderKeySecret = 4096
)

func (s *ProviderKeyService) authorize(p *access.Principal, scope KeyScope, op string) (orgID string, err error) {
	if err := access.Authorize(p, keyActions[scope][op]); err != nil {
		return "", err
	}
	if scope == GlobalKeys {
		return "", nil
	}
	return p.OrgID, nil
}

// public returns k without its sealed secret.
func public(k *rotation.Key) *rotation.Key {
	if k != nil {
		k.Sealed = nil
	}
	return k
}

// List returns the scope's keys, by provider, oldest first.
func (s *ProviderKeyService) List(ctx context.Context, p *access.Principal, scope KeyScope) ([]*rotation.Key, error) {
	orgID, err := s.authorize(p, scope, "list")
	if err != nil {
		return nil, err
	}
	ks, err := s.Keys.ListProviderKeys(ctx, orgID)
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		public(k)
	}
	if err := s.fillSpent(ctx, orgID, ks...); err != nil {
		return nil, err
	}
	return ks, nil
}

// fillSpent sets what each key's calls cost, from the ledger's totals per
// key: the organization's calls, or for global keys every organization's.
func (s *ProviderKeyService) fillSpent(ctx context.Context, orgID string, ks ...*rotation.Key) error {
	if s.Ledger == nil || len(ks) == 0 {
		return nil
	}
	totals, err := s.Ledger.AggregateUsage(ctx, usage.Scope{OrgID: orgID, To: s.Clock.Now().Add(time.Second)}, usage.ByKey)
	if err != nil {
		return err
	}
	spent := make(map[string]int64, len(totals))
	for _, t := range totals {
		spent[t.Key] = t.Cost
	}
	for _, k := range ks {
		if k != nil {
			k.Spent = spent[k.ID]
		}
	}
	return nil
}

func checkSecret(secret string) error {
	if secret == "" {
		return Invalid("api_key", "api_key is required")
	}
	if len(secret) > MaxProviderKeySecret {
		return Invalid("api_key", "api_key must be at most %d characters", MaxProviderKeySecret)
	}
	for _, r := range secret {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return Invalid("api_key", "api_key must not contain spaces or control characters")
		}
	}
	return nil
}

func checkKeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if len([]rune(name)) > MaxProviderKeyName {
		return "", Invalid("name", "name must be at most %d characters", MaxProviderKeyName)
	}
	return name, nil
}

// Create seals and stores a new key, in rotation and unchecked.
func (s *ProviderKeyService) Create(ctx context.Context, p *access.Principal, scope KeyScope, in NewProviderKey) (*rotation.Key, error) {
	orgID, err := s.authorize(p, scope, "create")
	if err != nil {
		return nil, err
	}
	if in.Provider, err = providerOf(in); err != nil {
		return nil, err
	}
	info, ok := s.Providers.Provider(in.Provider)
	if !ok {
		return nil, Invalid("provider", "unknown provider %q; GET /api/enrichment/options lists the configured ones", in.Provider)
	}
	if info.Keyless {
		return nil, Invalid("provider", "provider %s needs no key", in.Provider)
	}
	secret := strings.TrimSpace(in.APIKey)
	if err := checkSecret(secret); err != nil {
		return nil, err
	}
	name, err := checkKeyName(in.Name)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = in.Provider + " key"
	}
	now := s.Clock.Now()
	if in.ExpiresAt != nil && !in.ExpiresAt.After(now) {
		return nil, Invalid("expires_at", "expires_at must be in the future")
	}
	sealed, err := s.Cipher.Seal([]byte(secret))
	if err != nil {
		return nil, err
	}
	k := &rotation.Key{ID: s.IDs.NewID(), OrgID: orgID, Provider: in.Provider, Name: name, Suffix: rotation.SuffixOf(secret),
		Sealed: sealed, Version: 1, Enabled: true, Health: rotation.Unchecked, ExpiresAt: in.ExpiresAt, CreatedAt: now}
	if err := s.Keys.CreateProviderKey(ctx, k); err != nil {
		return nil, err
	}
	s.Log.InfoContext(ctx, "provider key created", "key_id", k.ID, "org_id", orgID, "provider", k.Provider)
	return public(k), nil
}

// providerOf reads the provider from provider or its reference spelling
// provider_id: a string names the provider; the reference's numeric ids
// point into a providers table this service does not have.
func providerOf(in NewProviderKey) (string, error) {
	id := bytes.TrimSpace(in.ProviderID)
	if len(id) == 0 || string(id) == "null" {
		if in.Provider == "" {
			return "", Invalid("provider", "provider is required (a configured provider's name, as in model keys)")
		}
		return in.Provider, nil
	}
	var name string
	if err := json.Unmarshal(id, &name); err != nil {
		return "", Invalid("provider_id", "provider_id: numeric provider ids are not supported; send the provider's name in provider (or provider_id)")
	}
	if in.Provider != "" && in.Provider != name {
		return "", Invalid("provider_id", "provider_id %q and provider %q name different providers", name, in.Provider)
	}
	return name, nil
}

// Update renames, re-keys, switches or re-dates a key.
func (s *ProviderKeyService) Update(ctx context.Context, p *access.Principal, scope KeyScope, id string, ch ProviderKeyChange) (*rotation.Key, error) {
	orgID, err := s.authorize(p, scope, "update")
	if err != nil {
		return nil, err
	}
	var name, secret string
	if ch.Name != nil {
		if name, err = checkKeyName(*ch.Name); err != nil {
			return nil, err
		}
		if name == "" {
			return nil, Invalid("name", "name must not be empty")
		}
	}
	var sealed []byte
	if ch.APIKey != nil {
		secret = strings.TrimSpace(*ch.APIKey)
		if err := checkSecret(secret); err != nil {
			return nil, err
		}
		if sealed, err = s.Cipher.Seal([]byte(secret)); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	if ch.SetExpiry && ch.ExpiresAt != nil && !ch.ExpiresAt.After(now) {
		return nil, Invalid("expires_at", "expires_at must be in the future")
	}
	k, err := s.Keys.UpdateProviderKey(ctx, orgID, id, func(k *rotation.Key) error {
		if ch.Name != nil {
			k.Name = name
		}
		if sealed != nil {
			k.Replace(sealed, rotation.SuffixOf(secret))
		}
		if ch.Enabled != nil {
			k.SetEnabled(*ch.Enabled)
		}
		if ch.SetExpiry {
			k.ExpiresAt = ch.ExpiresAt
		}
		return nil
	})
	if err != nil {
		return nil, s.notFound(err, id)
	}
	s.forget(k.ID)
	return public(k), s.fillSpent(ctx, orgID, k)
}

// Enable puts a disabled key back in rotation (a key the provider refused
// needs a successful test, or a new secret, as well).
func (s *ProviderKeyService) Enable(ctx context.Context, p *access.Principal, scope KeyScope, id string) (*rotation.Key, error) {
	orgID, err := s.authorize(p, scope, "enable")
	if err != nil {
		return nil, err
	}
	k, err := s.Keys.UpdateProviderKey(ctx, orgID, id, func(k *rotation.Key) error {
		k.SetEnabled(true)
		return nil
	})
	if err != nil {
		return nil, s.notFound(err, id)
	}
	return public(k), s.fillSpent(ctx, orgID, k)
}

// Delete removes a key for good. A key the caller's scope does not hold
// (another organization's, none, or one deleted already) is not_found, as
// every route answers for another organization's objects and as the other
// hard deletes (DELETE /api/providers/{id}) answer a second time.
func (s *ProviderKeyService) Delete(ctx context.Context, p *access.Principal, scope KeyScope, id string) error {
	orgID, err := s.authorize(p, scope, "delete")
	if err != nil {
		return err
	}
	if err := s.Keys.DeleteProviderKey(ctx, orgID, id); err != nil {
		return s.notFound(err, id)
	}
	s.forget(id)
	return nil
}

// Test makes a cheap real call with the key: a pass brings it (back) into
// rotation, a refusal takes it out; a provider that cannot answer leaves
// it as it was.
func (s *ProviderKeyService) Test(ctx context.Context, p *access.Principal, scope KeyScope, id string) (KeyCheck, error) {
	orgID, err := s.authorize(p, scope, "test")
	if err != nil {
		return KeyCheck{}, err
	}
	k, err := s.Keys.GetProviderKey(ctx, orgID, id)
	if err != nil {
		return KeyCheck{}, s.notFound(err, id)
	}
	c, err := s.test(ctx, k)
	if err != nil {
		return KeyCheck{}, err
	}
	return c, s.fillSpent(ctx, orgID, c.Key)
}

// TestAll tests every global key, one after another.
func (s *ProviderKeyService) TestAll(ctx context.Context, p *access.Principal) ([]KeyCheck, error) {
	if err := access.Authorize(p, access.ActTestAllGlobalKeys); err != nil {
		return nil, err
	}
	ks, err := s.Keys.ListProviderKeys(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]KeyCheck, 0, len(ks))
	for _, k := range ks {
		c, err := s.test(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	tested := make([]*rotation.Key, len(out))
	for i, c := range out {
		tested[i] = c.Key
	}
	return out, s.fillSpent(ctx, "", tested...)
}

func (s *ProviderKeyService) test(ctx context.Context, k *rotation.Key) (KeyCheck, error) {
	cred := credential(s.Cipher, k)
	terr := s.Tester.TestKey(ctx, k.Provider, *cred)
	now := s.Clock.Now()
	c := KeyCheck{Status: "valid", CheckedAt: now}
	record := func(u *rotation.Key) { u.Tested(terr == nil, now) }
	var rl *ports.RateLimitError
	switch {
	case terr == nil:
	case errors.Is(terr, ports.ErrLLMAuth):
		c.Status, c.Message = "invalid", "the provider refused the key"
	case errors.As(terr, &rl):
		// The provider could not say whether the key is good, but asked for
		// a pause: the key rests, as after a call's 429, and its health
		// does not change.
		c.Status, c.Message = "error", testFailure(terr)
		s.Log.WarnContext(ctx, "provider key test rate limited: the key rests", "key_id", k.ID, "provider", k.Provider, "err", terr)
		until := now.Add(DefaultRest)
		if rl.RetryAfter > 0 {
			until = now.Add(rl.RetryAfter)
		}
		record = func(u *rotation.Key) { u.Rest(until) }
	default:
		// The provider could not say: the key's health does not change.
		c.Status, c.Message = "error", testFailure(terr)
		s.Log.WarnContext(ctx, "provider key test failed", "key_id", k.ID, "provider", k.Provider, "err", terr)
		c.Key = public(k)
		return c, nil
	}
	got, err := s.Keys.UpdateProviderKey(ctx, k.OrgID, k.ID, func(u *rotation.Key) error {
		record(u)
		return nil
	})
	if err != nil {
		return KeyCheck{}, s.notFound(err, k.ID)
	}
	if rl == nil && got.Version != k.Version {
		s.forget(k.ID) // a resting key's clients are still of use
	}
	c.Key = public(got)
	return c, nil
}

// testFailure is the fixed public text of a test the provider did not
// answer; the adapter's own text goes to the log only.
func testFailure(err error) string {
	switch {
	case errors.Is(err, ports.ErrRateLimited):
		return "the provider is rate limiting; try again later"
	case errors.Is(err, ports.ErrLLMTimeout):
		return "the provider did not answer in time"
	case errors.Is(err, ports.ErrModelRetired):
		return "the provider no longer serves the model used for the test"
	}
	return "the provider could not be reached"
}

func (s *ProviderKeyService) notFound(err error, id string) error {
	if errors.Is(err, ports.ErrNotFound) {
		return coded(ports.ErrNotFound, "not_found", "provider key %s not found", id)
	}
	return err
}

func (s *ProviderKeyService) forget(id string) {
	if s.Clients != nil {
		s.Clients.Forget(id)
	}
}

// credential is the call credential of a stored key: its plaintext is
// opened only when the LLM adapter builds a client for it.
func credential(c ports.Cipher, k *rotation.Key) *ports.Credential {
	sealed := k.Sealed
	return &ports.Credential{KeyID: k.ID, Version: k.Version, Source: k.Source(), Open: func() (ports.Secret, error) {
		b, err := c.Open(sealed)
		if err != nil {
			return "", fmt.Errorf("open provider key: %w", err)
		}
		return ports.Secret(b), nil
	}}
}

// Reencrypt seals every stored key again with the first encryption key
// (enrich admin reencrypt), so that older encryption keys can then be
// dropped from ENRICH_ENCRYPTION_KEYS. It is an operator's command, run
// against the database, with no principal. Keys already sealed with the
// first key are left alone. A key that opens with no configured encryption
// key is counted in failed and left as it is; its id is logged, never its
// secret.
func (s *ProviderKeyService) Reencrypt(ctx context.Context) (resealed, failed int, err error) {
	ks, err := s.Keys.AllProviderKeys(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, k := range ks {
		sealed, err := reseal(s.Cipher, k.Sealed)
		if errors.Is(err, errUnopenable) {
			failed++
			s.Log.WarnContext(ctx, "provider key does not open with any encryption key", "key_id", k.ID, "err", err)
			continue
		}
		if err != nil {
			return resealed, failed, err
		}
		if sealed == nil {
			continue // sealed under the first key already
		}
		old := k.Sealed
		_, err = s.Keys.UpdateProviderKey(ctx, k.OrgID, k.ID, func(u *rotation.Key) error {
			// The secret is the same: no new version, cached clients stay.
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

// errUnopenable: no encryption key opens a sealed secret.
var errUnopenable = errors.New("no encryption key opens the secret")

// reseal returns sealed re-sealed under the cipher's first key, or nil when
// it is sealed under it already (a cipher that can tell); errUnopenable
// when no key opens it. The plaintext is cleared.
func reseal(c ports.Cipher, sealed []byte) ([]byte, error) {
	if cur, ok := c.(interface{ Current([]byte) bool }); ok && cur.Current(sealed) {
		return nil, nil
	}
	plain, err := c.Open(sealed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnopenable, err)
	}
	defer clear(plain)
	return c.Seal(plain)
}
