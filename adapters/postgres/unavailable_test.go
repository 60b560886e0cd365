package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// TestOutageIsUnavailable: with the database cut off (a proxy closes every
// connection and refuses new ones), reads and writes fail with
// ErrUnavailable, promptly; once it is back, they work again.
func TestOutageIsUnavailable(t *testing.T) {
	is := is.New(t)
	proxy, dsn := pgtest.ProxyDSN(t, pgtest.Native(t))
	db := migrated(t, dsn)
	records, schemas := postgres.NewRecordStore(db), postgres.NewSchemaStore(db)
	ctx := context.Background()
	_, err := records.GetRecord(ctx, "org", "nope")
	is.True(errors.Is(err, ports.ErrNotFound))

	proxy.Cut()
	start := time.Now()
	_, err = records.GetRecord(ctx, "org", "nope")
	t.Logf("read while cut: %v", err)
	is.True(errors.Is(err, ports.ErrUnavailable)) // a read
	now := time.Now()
	err = schemas.CreateSchema(ctx, &schema.Schema{ID: "s1", OrgID: "org", Name: "n", Content: []byte(`{}`), CreatedAt: now, UpdatedAt: now})
	is.True(errors.Is(err, ports.ErrUnavailable)) // a write
	is.True(!errors.Is(err, ports.ErrConflict))
	is.True(time.Since(start) < 10*time.Second) // refused, not hung

	proxy.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = records.GetRecord(ctx, "org", "nope")
		if errors.Is(err, ports.ErrNotFound) || time.Now().After(deadline) {
			break
		}
		is.True(errors.Is(err, ports.ErrUnavailable)) // stale pooled connections are still an outage
		time.Sleep(100 * time.Millisecond)
	}
	is.True(errors.Is(err, ports.ErrNotFound))
}

// TestTerminatedSessionIsUnavailable: a session ended by the server
// (pg_terminate_backend, as in a restart) fails its next query with
// ErrUnavailable, not an internal error.
func TestTerminatedSessionIsUnavailable(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	db := migrated(t, dsn)
	db.SetMaxOpenConns(1)
	admin := open(t, dsn)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	is.NoErr(err)
	defer conn.Close()
	var pid int
	is.NoErr(conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = admin.ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid)
	is.NoErr(err)
	// pg_terminate_backend only signals: wait until the session is gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		is.NoErr(admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ?", pid).Scan(&n))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d still there 10 s after it was terminated", pid)
		}
	}
	var one int
	err = conn.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	t.Logf("query on a terminated session: %v", err)
	is.True(err != nil)
	is.True(!errors.Is(err, sql.ErrNoRows))
	is.True(postgres.IsUnavailable(err)) // the raw driver error
}
