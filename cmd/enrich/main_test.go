package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/fernet/fernet-go"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestAdminGrantSysadmin(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	ctx := context.Background()
	e, err := enrich.NewEmbedded(ctx, enrich.Config{DatabaseURL: dsn, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	is.NoErr(err)
	_, err = e.Access.Register(ctx, "ops@example.com", "long enough pw", "Ops")
	is.NoErr(err)
	is.NoErr(e.Close())

	t.Setenv("DATABASE_URL", dsn)
	t.Setenv("ENRICH_JWT_SECRET", strings.Repeat("y", 40))
	run := func(args ...string) (int, string) {
		var out, errs bytes.Buffer
		code := execute(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &errs}, nil)
		return code, out.String()
	}
	code, out := run("admin", "grant-sysadmin", "OPS@example.com")
	is.Equal(code, 0)
	is.Equal(out, "ops@example.com is_sysadmin=true\n")
	code, out = run("admin", "revoke-sysadmin", "ops@example.com")
	is.Equal(code, 0)
	is.Equal(out, "ops@example.com is_sysadmin=false\n")
	code, _ = run("admin", "grant-sysadmin", "nobody@example.com")
	is.Equal(code, 1)
	code, _ = run("admin", "promote", "x")
	is.Equal(code, 2)
}

// TestAdminReencrypt: after a new encryption key is put first, reencrypt
// seals the stored keys with it, and then the old key can go.
func TestAdminReencrypt(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	ctx := context.Background()
	oldKey, newKey := newFernetKey(t), newFernetKey(t)
	cfg := enrich.Config{DatabaseURL: dsn, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast", EncryptionKeys: oldKey,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Providers: []llm.ProviderConfig{{Name: "paid", Type: llm.TypeOpenAI, BaseURL: "http://127.0.0.1:9/v1", Models: []string{"m"}}}}
	e, err := enrich.NewEmbedded(ctx, cfg)
	is.NoErr(err)
	admin := &access.Principal{OrgID: "ops", Role: access.Operator, Scopes: access.DefaultScopes(), SysAdmin: true}
	_, err = e.ProviderKeys.Create(ctx, admin, app.GlobalKeys, app.NewProviderKey{Provider: "paid", APIKey: "sk-reencrypt-me-1234"})
	is.NoErr(err)
	// An organization's own provider's key is re-sealed too; a provider
	// without a key has nothing to re-seal.
	owner := &access.Principal{OrgID: "org-reencrypt", Role: access.Owner, Scopes: access.DefaultScopes()}
	_, err = e.OrgProviders.Create(ctx, owner, app.NewOrgProvider{Name: "own", BaseURL: "https://llm.example.com/v1", APIKey: "sk-reencrypt-me-5678"})
	is.NoErr(err)
	_, err = e.OrgProviders.Create(ctx, owner, app.NewOrgProvider{Name: "keyless", BaseURL: "https://llm.example.com/v1"})
	is.NoErr(err)
	is.NoErr(e.Close())

	t.Setenv("DATABASE_URL", dsn)
	t.Setenv("ENRICH_JWT_SECRET", strings.Repeat("y", 40))
	t.Setenv("ENRICH_PROVIDER_PAID_TYPE", "openai")
	t.Setenv("ENRICH_PROVIDER_PAID_BASE_URL", "http://127.0.0.1:9/v1")
	t.Setenv("ENRICH_PROVIDER_PAID_MODELS", "m")
	run := func(keys string) (int, string) {
		t.Setenv("ENRICH_ENCRYPTION_KEYS", keys)
		var out, errs bytes.Buffer
		code := execute(ctx, []string{"admin", "reencrypt"}, stdio{in: strings.NewReader(""), out: &out, err: &errs}, nil)
		return code, out.String()
	}
	code, out := run(newKey + "," + oldKey)
	is.Equal(code, 0)
	is.Equal(out, "resealed=2 failed=0\n")
	code, out = run(newKey) // the old key is gone: nothing left to reseal, nothing unreadable
	is.Equal(code, 0)
	is.Equal(out, "resealed=0 failed=0\n")
	code, out = run(newFernetKey(t)) // a stranger's key opens nothing
	is.Equal(code, 1)
	is.Equal(out, "resealed=0 failed=2\n")
}

func newFernetKey(t *testing.T) string {
	t.Helper()
	var k fernet.Key
	if err := k.Generate(); err != nil {
		t.Fatal(err)
	}
	return k.Encode()
}
