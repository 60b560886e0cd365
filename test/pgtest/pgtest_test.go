package pgtest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func one[T any](t *testing.T, c *pgx.Conn, sql string) T {
	t.Helper()
	var v T
	if err := c.QueryRow(context.Background(), sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestNativeGivesAFreshDatabaseAndDropsIt(t *testing.T) {
	is := is.New(t)
	var name string
	t.Run("use", func(t *testing.T) {
		is := is.New(t)
		c := connect(t, pgtest.Native(t))
		name = one[string](t, c, "SELECT current_database()")
		is.True(strings.HasPrefix(name, "enrich_t_"))
		is.Equal(one[int64](t, c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), int64(0))
		_, err := c.Exec(context.Background(), "CREATE TABLE t (id int)")
		is.NoErr(err)
		// A connection left open does not stop the drop.
	})
	admin := connect(t, pgtest.Native(t))
	is.Equal(one[int64](t, admin, "SELECT count(*) FROM pg_database WHERE datname = '"+name+"'"), int64(0))
}

func TestPGliteGivesAnIsolatedSchemaWithPgvector(t *testing.T) {
	is := is.New(t)
	var dsns []string
	for i := 0; i < 2; i++ {
		t.Run("use", func(t *testing.T) {
			is := is.New(t)
			dsn := pgtest.PGlite(t)
			is.True(strings.Contains(dsn, "default_query_exec_mode=simple_protocol"))
			dsns = append(dsns, dsn)
			c := connect(t, dsn)
			is.True(strings.Contains(one[string](t, c, "SELECT version()"), "PostgreSQL 18"))
			schema := one[string](t, c, "SELECT current_schema()")
			is.True(strings.HasPrefix(schema, "t_"))
			is.Equal(one[int64](t, c, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"), int64(0))
			_, err := c.Exec(context.Background(), "CREATE TABLE items (id int)") // lands in the test's schema
			is.NoErr(err)
			is.Equal(one[int64](t, c, "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"), int64(1))
		})
	}
	is.Equal(len(dsns), 2)
	is.True(dsns[0] != dsns[1]) // a new schema for each test
}

// TestPGliteParallelTestsGetTheirOwnServers checks that tests running at the
// same time never share a server (its one session would mix their
// search_path).
func TestPGliteParallelTestsGetTheirOwnServers(t *testing.T) {
	var mu sync.Mutex
	hosts := map[string]bool{}
	// Each test holds its server until the other holds one too, so the two
	// overlap whatever the order they start in.
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	t.Run("group", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			t.Run("parallel", func(t *testing.T) {
				t.Parallel()
				cfg, err := pgx.ParseConfig(pgtest.PGlite(t))
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				hosts[fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)] = true
				mu.Unlock()
				arrived.Done()
				select {
				case <-both:
				case <-time.After(2 * time.Minute):
					t.Fatal("the other test never held its server at the same time")
				}
			})
		}
	})
	if len(hosts) != 2 {
		t.Fatalf("parallel tests used %d servers, want 2", len(hosts))
	}
}

// TestPGliteWithPassesSettings: a server of its own takes the PostgreSQL
// settings it is given; the pooled servers keep PGlite's defaults.
func TestPGliteWithPassesSettings(t *testing.T) {
	is := is.New(t)
	c := connect(t, pgtest.PGliteWith(t, "shared_buffers=64MB", "work_mem=7MB"))
	is.Equal(one[string](t, c, "SHOW shared_buffers"), "64MB")
	is.Equal(one[string](t, c, "SHOW work_mem"), "7MB")
	is.True(strings.HasPrefix(one[string](t, c, "SELECT current_schema()"), "t_"))
	d := connect(t, pgtest.PGlite(t))
	is.Equal(one[string](t, d, "SHOW work_mem"), "4MB")
}
