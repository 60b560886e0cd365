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
