package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

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
	var out bytes.Buffer
	is.NoErr(run([]string{"admin", "grant-sysadmin", "OPS@example.com"}, &out))
	is.Equal(out.String(), "ops@example.com is_sysadmin=true\n")
	out.Reset()
	is.NoErr(run([]string{"admin", "revoke-sysadmin", "ops@example.com"}, &out))
	is.Equal(out.String(), "ops@example.com is_sysadmin=false\n")
	is.True(run([]string{"admin", "grant-sysadmin", "nobody@example.com"}, &out) != nil)
	is.True(run([]string{"admin", "promote", "x"}, &out) != nil)
}
