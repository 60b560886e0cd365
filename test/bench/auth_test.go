package bench_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/test/pgtest"
)

// BenchmarkAuthenticate measures authenticating one request with a valid
// access key, with the auth cache (a hit) and without it (a storage read),
// on memory and on PostgreSQL.
func BenchmarkAuthenticate(b *testing.B) {
	for _, be := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"memory", func(testing.TB) string { return "" }},
		{"postgres", func(t testing.TB) string { return pgtest.Native(t) }},
	} {
		for _, cached := range []bool{true, false} {
			name := be.name + "/uncached"
			if cached {
				name = be.name + "/cached"
			}
			b.Run(name, func(b *testing.B) { benchAuth(b, be.dsn(b), cached) })
		}
	}
}

func benchAuth(b *testing.B, dsn string, cached bool) {
	ctx := context.Background()
	ttl := time.Duration(0)
	if cached {
		ttl = time.Hour
	}
	e, err := enrich.NewEmbedded(ctx, enrich.Config{DatabaseURL: dsn, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		AuthCacheTTL: ttl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	sess, err := e.Access.Register(ctx, "auth@example.com", "benchmark password", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	role := access.Editor
	_, key, err := e.Access.CreateKey(ctx, p, app.NewKeyInput{Name: "bench", Role: &role})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Access.AuthenticateKey(ctx, key); err != nil { // warm the cache
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := e.Access.AuthenticateKey(ctx, key); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}
