package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

type seqIDs struct{ n int }

func (s *seqIDs) NewID() string { s.n++; return "id" + string(rune('a'+s.n)) }

type providers map[string]ports.ProviderInfo

func (p providers) Provider(name string) (ports.ProviderInfo, bool) { i, ok := p[name]; return i, ok }

// tester accepts the secrets in good and refuses the others.
type tester struct{ good map[string]bool }

func (t tester) TestKey(_ context.Context, _ string, c ports.Credential) error {
	s, err := c.Open()
	if err != nil {
		return err
	}
	if !t.good[s.Reveal()] {
		return ports.ErrLLMAuth
	}
	return nil
}

func newCipher(t *testing.T, keys ...string) *crypto.Fernet {
	t.Helper()
	f, err := crypto.NewFernet(keys)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fernetKey(t *testing.T) string {
	t.Helper()
	k, err := crypto.GenerateFernetKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var (
	owner  = &access.Principal{OrgID: "org1", Role: access.Owner, Scopes: access.DefaultScopes()}
	editor = &access.Principal{OrgID: "org1", Role: access.Editor, Scopes: access.DefaultScopes()}
	admin  = &access.Principal{OrgID: "org1", Role: access.Operator, Scopes: access.DefaultScopes(), SysAdmin: true}
)

func newService(t *testing.T, store ports.ProviderKeyStore, c ports.Cipher) *app.ProviderKeyService {
	return &app.ProviderKeyService{Keys: store, Cipher: c,
		Providers: providers{"paid": {Name: "paid", Type: "openai"}, "local": {Name: "local", Keyless: true}},
		Tester:    tester{good: map[string]bool{"sk-good-secret-1234": true}},
		Clock:     fixedClock{time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}, IDs: &seqIDs{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestProviderKeyServiceRules(t *testing.T) {
	ctx := context.Background()
	store := memory.NewProviderKeyStore()
	s := newService(t, store, newCipher(t, fernetKey(t)))
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		p     *access.Principal
		scope app.KeyScope
		in    app.NewProviderKey
		code  string // "" means created
		err   error
	}{
		{"owner adds a key", owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: " sk-good-secret-1234 "}, "", nil},
		{"editor may not", editor, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"}, "", access.ErrForbidden},
		{"owner may not add global keys", owner, app.GlobalKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"}, "", access.ErrForbidden},
		{"sysadmin adds a global key", admin, app.GlobalKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"}, "", nil},
		{"unknown provider", owner, app.OrgKeys, app.NewProviderKey{Provider: "nope", APIKey: "sk-x"}, "invalid_request", ports.ErrInvalid},
		{"keyless provider", owner, app.OrgKeys, app.NewProviderKey{Provider: "local", APIKey: "sk-x"}, "invalid_request", ports.ErrInvalid},
		{"empty secret", owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "  "}, "invalid_request", ports.ErrInvalid},
		{"secret with a space", owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk a"}, "invalid_request", ports.ErrInvalid},
		{"expired at birth", owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-x", ExpiresAt: &past}, "invalid_request", ports.ErrInvalid},
		{"the reference's provider_id naming the provider", owner, app.OrgKeys,
			app.NewProviderKey{ProviderID: []byte(`"paid"`), APIKey: "sk-good-secret-1234"}, "", nil},
		{"provider and provider_id agreeing", owner, app.OrgKeys,
			app.NewProviderKey{Provider: "paid", ProviderID: []byte(`"paid"`), APIKey: "sk-good-secret-1234"}, "", nil},
		{"a numeric provider_id names nothing here", owner, app.OrgKeys,
			app.NewProviderKey{ProviderID: []byte(`3`), APIKey: "sk-x"}, "invalid_request", ports.ErrInvalid},
		{"provider and provider_id disagreeing", owner, app.OrgKeys,
			app.NewProviderKey{Provider: "paid", ProviderID: []byte(`"other"`), APIKey: "sk-x"}, "invalid_request", ports.ErrInvalid},
		{"no provider at all", owner, app.OrgKeys, app.NewProviderKey{APIKey: "sk-x"}, "invalid_request", ports.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			k, err := s.Create(ctx, tc.p, tc.scope, tc.in)
			if tc.err != nil {
				is.True(errors.Is(err, tc.err))
				if e, ok := app.AsError(err); ok && tc.code != "" {
					is.Equal(e.Code, tc.code)
				}
				return
			}
			is.NoErr(err)
			is.Equal(k.Suffix, "1234")
			is.Equal(k.Sealed, nil) // never handed out
			is.Equal(k.Health, rotation.Unchecked)
			is.Equal(k.Source() == rotation.Global, tc.scope == app.GlobalKeys)
			stored, err := store.GetProviderKey(ctx, k.OrgID, k.ID)
			is.NoErr(err)
			is.True(len(stored.Sealed) > 0 && !bytes.Contains(stored.Sealed, []byte("sk-good-secret-1234")))
		})
	}
}

func TestProviderKeyTest(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := newService(t, memory.NewProviderKeyStore(), newCipher(t, fernetKey(t)))
	good, err := s.Create(ctx, owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"})
	is.NoErr(err)
	bad, err := s.Create(ctx, owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-bad-secret-9876"})
	is.NoErr(err)
	c, err := s.Test(ctx, owner, app.OrgKeys, good.ID)
	is.NoErr(err)
	is.Equal(c.Status, "valid")
	is.Equal(c.Key.Health, rotation.Valid)
	c, err = s.Test(ctx, owner, app.OrgKeys, bad.ID)
	is.NoErr(err)
	is.Equal(c.Status, "invalid")
	is.True(!c.Key.Usable(time.Now()))
	// Replacing the secret brings it back, unchecked.
	secret := "sk-good-secret-1234"
	k, err := s.Update(ctx, owner, app.OrgKeys, bad.ID, app.ProviderKeyChange{APIKey: &secret})
	is.NoErr(err)
	is.Equal(k.Health, rotation.Unchecked)
	is.True(k.Version > bad.Version)
	_, err = s.Test(ctx, &access.Principal{OrgID: "org2", Role: access.Owner, Scopes: access.DefaultScopes()}, app.OrgKeys, good.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
}

func TestReencrypt(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	oldKey, newKey := fernetKey(t), fernetKey(t)
	store := memory.NewProviderKeyStore()
	before := newService(t, store, newCipher(t, oldKey))
	k1, err := before.Create(ctx, owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"})
	is.NoErr(err)
	_, err = before.Create(ctx, admin, app.GlobalKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-other-secret-5678"})
	is.NoErr(err)

	after := newService(t, store, newCipher(t, newKey, oldKey))
	n, failed, err := after.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(failed, 0)
	n, _, err = after.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(n, 0) // already under the first key

	// The old encryption key can go: everything opens with the new one alone.
	only := newCipher(t, newKey)
	all, err := store.AllProviderKeys(ctx)
	is.NoErr(err)
	for _, k := range all {
		_, err := only.Open(k.Sealed)
		is.NoErr(err)
	}
	stored, err := store.GetProviderKey(ctx, "org1", k1.ID)
	is.NoErr(err)
	is.Equal(stored.Version, 1) // same secret: no new version

	// A key no configured encryption key opens is counted, not fatal.
	stranger := newService(t, store, newCipher(t, fernetKey(t)))
	n, failed, err = stranger.Reencrypt(ctx)
	is.NoErr(err)
	is.Equal(n, 0)
	is.Equal(failed, 2)
}

// TestProviderKeyDeleteNotFound: deleting another organization's key is
// not_found (the key stays), as is a key that never existed and one's own
// key once deleted (keys are deleted for good).
func TestProviderKeyDeleteNotFound(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	s := newService(t, memory.NewProviderKeyStore(), newCipher(t, fernetKey(t)))
	k, err := s.Create(ctx, owner, app.OrgKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-good-secret-1234"})
	is.NoErr(err)
	stranger := &access.Principal{OrgID: "org2", Role: access.Owner, Scopes: access.DefaultScopes()}
	notFound := func(err error) {
		t.Helper()
		e, ok := app.AsError(err)
		is.True(ok)
		is.Equal(e.Code, "not_found")
		is.True(errors.Is(err, ports.ErrNotFound))
	}
	notFound(s.Delete(ctx, stranger, app.OrgKeys, k.ID))
	notFound(s.Delete(ctx, owner, app.OrgKeys, "no-such-key"))
	ks, err := s.List(ctx, owner, app.OrgKeys)
	is.NoErr(err)
	is.Equal(len(ks), 1) // the key stays
	is.NoErr(s.Delete(ctx, owner, app.OrgKeys, k.ID))
	notFound(s.Delete(ctx, owner, app.OrgKeys, k.ID))
}
