package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/migrate"

	"github.com/entityenrich/enrich/migrations"
	"github.com/entityenrich/enrich/ports"
)

// Open connects to the database at dsn (a postgres:// URL or key=value
// string understood by pgx) and checks that it answers. For PGlite, add
// default_query_exec_mode=simple_protocol to the DSN (see test/pgtest).
func Open(ctx context.Context, dsn string) (*bun.DB, error) {
	sqldb, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db := bun.NewDB(sqldb, pgdialect.New())
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	return db, nil
}

// migrateLockKey is the pg_advisory_lock key that serialises Migrate between
// processes (advisory locks are per database). bun's own lock is a table row
// that stays taken after a crash; an advisory lock ends with its session.
var migrateLockKey = func() int64 {
	h := fnv.New64a()
	h.Write([]byte("github.com/entityenrich/enrich/migrations"))
	return int64(h.Sum64())
}()

// migrateMu serialises Migrate within a process as well: on PGlite every
// connection shares one session, where an advisory lock is re-entrant and so
// excludes nobody.
var migrateMu sync.Mutex

// Migrate applies the migrations that the database lacks. Two processes may
// call it at once: the second waits for the first and then finds nothing to
// do. It needs two connections from db's pool (one holds the lock).
func Migrate(ctx context.Context, db *bun.DB) (err error) {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", migrateLockKey); err != nil {
		return fmt.Errorf("postgres: migrate: take lock: %w", err)
	}
	defer func() {
		// A cancelled ctx must not leave the session holding the lock.
		_, uerr := conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrateLockKey)
		if uerr != nil && err == nil {
			err = fmt.Errorf("postgres: migrate: release lock: %w", uerr)
		}
	}()

	ms := migrate.NewMigrations()
	if err := ms.Discover(migrations.FS); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: init: %w", err)
	}
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// notFound turns sql.ErrNoRows into ErrNotFound and a connection-level
// failure into ErrUnavailable; other errors keep their cause. what describes
// the operation ("get job x").
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("postgres: %s: %w", what, ports.ErrNotFound)
	}
	if u := unavailable(err, what); u != nil {
		return u
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// conflict turns a unique violation into ErrConflict and a connection-level
// failure into ErrUnavailable.
func conflict(err error, what string) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" {
		return fmt.Errorf("postgres: %s: %s: %w", what, pg.ConstraintName, ports.ErrConflict)
	}
	if u := unavailable(err, what); u != nil {
		return u
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}
