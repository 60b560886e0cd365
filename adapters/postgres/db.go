package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/migrate"

	"github.com/entityenrich/enrich/migrations"
	"github.com/entityenrich/enrich/ports"
)

// PoolConfig sizes the connection pool.
type PoolConfig struct {
	// MaxConns bounds the open connections (default: 4 per core, at least 8).
	MaxConns int
}

// riverConns is the pool's room for River beyond Bun's connections.
const riverConns = 8

// DB is the database: Bun for queries, and the pgx pool underneath, which
// River works on.
type DB struct {
	*bun.DB
	Pool *pgxpool.Pool
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// string understood by pgx) and checks that it answers. One pgx pool serves
// both Bun (through database/sql) and River; idle connections are kept, so
// that a burst of requests does not open and close connections. For PGlite,
// add default_query_exec_mode=simple_protocol to the DSN (see test/pgtest).
func Open(ctx context.Context, dsn string, pc PoolConfig) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if pc.MaxConns <= 0 {
		pc.MaxConns = max(8, 4*runtime.GOMAXPROCS(0))
	}
	// database/sql holds the pool's connections it keeps open (idle ones
	// too), so the pool has room beyond them for River's fetches, notifier
	// and leader election, which use the pool directly.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = int32(pc.MaxConns + riverConns)
	}
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.ConnConfig.DialFunc = dialer().DialContext
	// pgvector's lookups find their settings in the session.
	cfg.AfterConnect = pgvectorSession
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	sqldb := stdlib.OpenDBFromPool(pool)
	// database/sql keeps only 2 idle connections unless told: keep them all.
	sqldb.SetMaxOpenConns(pc.MaxConns)
	sqldb.SetMaxIdleConns(pc.MaxConns)
	db := &DB{DB: bun.NewDB(sqldb, pgdialect.New()), Pool: pool}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	return db, nil
}

// Close closes Bun's handle and the pool.
func (db *DB) Close() error {
	err := db.DB.Close()
	db.Pool.Close()
	return err
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
func Migrate(ctx context.Context, db *bun.DB) error {
	_, err := MigrateApplied(ctx, db)
	return err
}

// MigrateApplied is Migrate that also says what it applied: the names of
// our migrations, then River's as "river NNN name", in order (none when the
// database was up to date).
func MigrateApplied(ctx context.Context, db *bun.DB) (applied []string, err error) {
	migrateMu.Lock()
	defer migrateMu.Unlock()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("postgres: migrate: take lock: %w", err)
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
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("postgres: migrate: init: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	for _, mg := range group.Migrations {
		applied = append(applied, mg.Name+"_"+mg.Comment)
	}
	// River's tables, at the version the queue's River expects.
	rm, err := rivermigrate.New(riverdatabasesql.New(db.DB), &rivermigrate.Config{Logger: quietLog})
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate river: %w", err)
	}
	res, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate river: %w", err)
	}
	for _, v := range res.Versions {
		applied = append(applied, fmt.Sprintf("river %03d %s", v.Version, v.Name))
	}
	return applied, nil
}

// quietLog drops River's migration chatter.
var quietLog = slog.New(slog.DiscardHandler)

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

// fail wraps the driver error of the operation what ("list records"): a
// connection-level failure becomes ErrUnavailable, data the server refuses
// (SQLSTATE classes 22 and 54: a NUL in text, a value too large)
// ErrInvalid; other errors keep their cause. It is for errors that neither
// notFound nor conflict fits.
func fail(err error, what string) error {
	if u := unavailable(err, what); u != nil {
		return u
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "54")) {
		return fmt.Errorf("postgres: %s: %w: %w", what, ports.ErrInvalid, err)
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
	return fail(err, what)
}

// inTx runs fn in a transaction on db: the caller's, when db already is one
// (a unit of work), so that no savepoint costs two more round trips; else a
// new one.
func inTx(ctx context.Context, db bun.IDB, fn func(ctx context.Context, tx bun.Tx) error) error {
	if tx, ok := db.(bun.Tx); ok {
		return fn(ctx, tx)
	}
	return db.RunInTx(ctx, nil, fn)
}
