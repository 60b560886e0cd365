package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables that steer the harness.
const (
	// EnvDSN is the DSN of a database on the native server that the harness
	// connects to in order to create and drop test databases.
	EnvDSN = "ENRICH_TEST_PG_DSN"
	// EnvRequireNative set to 1 turns an unreachable native server from a skip
	// into a failure.
	EnvRequireNative = "ENRICH_REQUIRE_NATIVE_PG"
)

// defaultAdminDSNs are tried in order when EnvDSN is not set.
var defaultAdminDSNs = []string{
	"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=5",
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5",
}

// staleAfter is the age past which a test database left by a crashed run is
// dropped.
const staleAfter = 6 * time.Hour

var native struct {
	once  sync.Once
	admin string // the admin DSN that answered
	err   error
}

// Native returns the DSN of a new, empty database on the native PostgreSQL
// server, dropped when t ends.
func Native(t testing.TB) string {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	native.once.Do(func() { native.admin, native.err = findAdmin(ctx) })
	if native.err != nil {
		if os.Getenv(EnvRequireNative) == "1" {
			t.Fatalf("pgtest: native PostgreSQL is required (%s=1) but unreachable: %v", EnvRequireNative, native.err)
		}
		t.Skipf("pgtest: SKIPPING: native PostgreSQL is unreachable (%v). Start it (make test-deps) or set %s; "+
			"set %s=1 to make this a failure", native.err, EnvDSN, EnvRequireNative)
	}
	admin := native.admin
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to native PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)

	name := fmt.Sprintf("enrich_t_%d_%s", time.Now().Unix(), randomHex(6))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabase(ctx, admin, name); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// skipShort skips t under go test -short: the short run (make test-short)
// is the inner loop that needs no database.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: needs PostgreSQL; skipped by -short")
	}
}

// findAdmin returns the first admin DSN that answers, and drops the test
// databases of runs that crashed long ago.
func findAdmin(ctx context.Context) (string, error) {
	dsns := defaultAdminDSNs
	if d := os.Getenv(EnvDSN); d != "" {
		dsns = []string{d}
	}
	var errs []string
	for _, dsn := range dsns {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		sweep(ctx, conn, dsn)
		_ = conn.Close(ctx)
		return dsn, nil
	}
	return "", fmt.Errorf("%s", strings.Join(errs, "; "))
}

// sweep drops enrich_t_<unix>_* databases older than staleAfter. Errors are
// ignored: the sweep only tidies.
func sweep(ctx context.Context, conn *pgx.Conn, admin string) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'enrich\_t\_%'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		ts, _, ok := strings.Cut(strings.TrimPrefix(n, "enrich_t_"), "_")
		sec, err := strconv.ParseInt(ts, 10, 64)
		if !ok || err != nil || time.Since(time.Unix(sec, 0)) < staleAfter {
			continue
		}
		_ = dropDatabase(ctx, admin, n)
	}
}

func dropDatabase(ctx context.Context, admin, name string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// FORCE (PostgreSQL 13+) ends the sessions that tests left open.
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// withDatabase returns dsn with its database replaced by name. It accepts the
// URL and the key=value forms.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvDSN, err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// In the key=value form the last setting of a key wins.
	return dsn + " dbname=" + name, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
