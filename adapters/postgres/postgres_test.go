package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(helperDSN); dsn != "" {
		migrateProcess(dsn)
		return
	}
	pgtest.Main(m)
}

// backends are the servers every suite runs on. PGlite runs one query at a
// time, so the race of parallel transactions runs on native PostgreSQL only.
var backends = []struct {
	name     string
	dsn      func(t testing.TB) string
	parallel bool
}{
	{"native", pgtest.Native, true},
	{"pglite", pgtest.PGlite, false},
}

func open(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func migrated(t *testing.T, dsn string) *postgres.DB {
	t.Helper()
	db := open(t, dsn)
	if err := postgres.Migrate(context.Background(), db.DB); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			// One migrated database per backend: the suites use fresh ids and
			// organizations in every case.
			db := migrated(t, b.dsn(t))
			t.Run("OrgStore", func(t *testing.T) {
				contract.RunOrgStore(t, func(*testing.T) ports.OrgStore { return postgres.NewOrgStore(db) })
			})
			t.Run("UserStore", func(t *testing.T) {
				contract.RunUserStore(t, func(*testing.T) ports.UserStore { return postgres.NewUserStore(db) })
			})
			t.Run("APIKeyStore", func(t *testing.T) {
				contract.RunAPIKeyStore(t, func(*testing.T) ports.APIKeyStore { return postgres.NewAPIKeyStore(db) })
			})
			t.Run("RefreshTokenStore", func(t *testing.T) {
				contract.RunRefreshTokenStore(t, func(*testing.T) ports.RefreshTokenStore { return postgres.NewRefreshTokenStore(db) })
			})
			t.Run("AbuseStores", func(t *testing.T) {
				contract.RunLoginThrottleStore(t, func(*testing.T) ports.LoginThrottleStore { return postgres.NewLoginThrottleStore(db) })
				contract.RunDeniedTokenStore(t, func(*testing.T) ports.DeniedTokenStore { return postgres.NewDeniedTokenStore(db) })
				contract.RunInvitationStore(t, func(*testing.T) ports.InvitationStore { return postgres.NewInvitationStore(db) },
					func(t *testing.T) string { return createOrg(t, db) })
				contract.RunRefreshAccessTokens(t, func(*testing.T) ports.RefreshTokenStore { return postgres.NewRefreshTokenStore(db) })
			})
			if b.parallel {
				t.Run("RefreshTokenStoreConcurrency", func(t *testing.T) {
					contract.RunRefreshTokenStoreConcurrency(t, func(*testing.T) ports.RefreshTokenStore { return postgres.NewRefreshTokenStore(db) })
				})
			}
			t.Run("SchemaStore", func(t *testing.T) {
				contract.RunSchemaStore(t, func(*testing.T) ports.SchemaStore { return postgres.NewSchemaStore(db) })
				contract.RunSchemaLifecycle(t, func(*testing.T) ports.SchemaStore { return postgres.NewSchemaStore(db) })
			})
			t.Run("RecordStore", func(t *testing.T) {
				contract.RunRecordStore(t, func(*testing.T) ports.RecordStore { return postgres.NewRecordStore(db) })
				contract.RunRecordPurge(t, func(*testing.T) ports.RecordStore { return postgres.NewRecordStore(db) })
				contract.RunRecordDeletion(t, func(*testing.T) ports.RecordStore { return postgres.NewRecordStore(db) })
				contract.RunRecordConceptRepoint(t, func(*testing.T) ports.RecordStore { return postgres.NewRecordStore(db) })
			})
			t.Run("JobStore", func(t *testing.T) {
				contract.RunJobStore(t, func(*testing.T) ports.JobStore { return postgres.NewJobStore(db) })
			})
			if b.parallel {
				t.Run("JobStoreConcurrency", func(t *testing.T) {
					contract.RunJobStoreConcurrency(t, func(*testing.T) ports.JobStore { return postgres.NewJobStore(db) })
				})
			}
			t.Run("EventLog", func(t *testing.T) {
				contract.RunEventLog(t, func(*testing.T) ports.EventLog { return postgres.NewEventLog(db, jobcodec.Events{}) })
			})
			t.Run("UnitOfWork", func(t *testing.T) {
				contract.RunUnitOfWork(t, func(t *testing.T) contract.UnitOfWorkFixture { return uowFixture(t, db.DB) })
				contract.RunPurgeInUnitOfWork(t, func(t *testing.T) contract.UnitOfWorkFixture { return uowFixture(t, db.DB) })
				contract.RunRecordDeletionInUnitOfWork(t, func(t *testing.T) contract.UnitOfWorkFixture { return uowFixture(t, db.DB) })
			})
			if b.parallel {
				t.Run("UnitOfWorkConcurrency", func(t *testing.T) {
					contract.RunUnitOfWorkConcurrency(t, func(t *testing.T) contract.UnitOfWorkFixture { return uowFixture(t, db.DB) })
				})
			}
			t.Run("DatabaseStore", func(t *testing.T) {
				contract.RunDatabaseStore(t, func(*testing.T) contract.DatabaseFixture {
					return contract.DatabaseFixture{Store: postgres.NewDatabaseStore(db), Feed: postgres.NewFeedWriter(db),
						UoW: postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, nil)}
				})
			})
			t.Run("JobQueue", func(t *testing.T) {
				contract.RunJobQueue(t, func(t *testing.T) contract.QueueFixture {
					q, err := postgres.NewQueue(db, postgres.QueueConfig{}, slog.New(slog.DiscardHandler))
					if err != nil {
						t.Fatal(err)
					}
					uow := postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, func(tx bun.Tx) ports.JobEnqueuer { return q.TxEnqueuer(tx) })
					// Scheduled and snoozed runs wait for River's scheduler (every 5 s).
					return contract.QueueFixture{Queue: q, UoW: uow, Slack: 6 * time.Second}
				})
			})
		})
	}
}

// queryCounter counts the statements a bun.DB runs.
type queryCounter struct{ n atomic.Int64 }

func (c *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (c *queryCounter) AfterQuery(_ context.Context, _ *bun.QueryEvent) { c.n.Add(1) }

// TestBatchesAreOneStatement checks the hot paths: a batch of events and a
// flush of key usage are one statement each, not one per item.
func TestBatchesAreOneStatement(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db := migrated(t, pgtest.Native(t))
	var c queryCounter
	db.AddQueryHook(&c)

	var evs []job.Event
	for i := int64(1); i <= 100; i++ {
		evs = append(evs, job.Event{JobID: "j1", Seq: i, Type: job.EventAttempt, Payload: job.Attempt{Attempt: int(i)}, CreatedAt: time.Now()})
	}
	c.n.Store(0)
	is.NoErr(postgres.NewEventLog(db, jobcodec.Events{}).Append(ctx, evs))
	is.Equal(c.n.Load(), int64(1))

	c.n.Store(0)
	is.NoErr(postgres.NewAPIKeyStore(db).RecordUsage(ctx, []ports.KeyUsage{
		{KeyID: "k1", Count: 1, LastAt: time.Now()}, {KeyID: "k2", Count: 2, LastAt: time.Now()}, {KeyID: "k1", Count: 1, LastAt: time.Now()}}))
	is.Equal(c.n.Load(), int64(1))
}

func appliedMigrations(t *testing.T, db *bun.DB) int64 {
	t.Helper()
	n, err := db.NewSelect().Table("bun_migrations").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrateIsIdempotent(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			db := migrated(t, b.dsn(t))
			first := appliedMigrations(t, db.DB)
			is.True(first > 0)
			is.NoErr(postgres.Migrate(context.Background(), db.DB))
			is.Equal(appliedMigrations(t, db.DB), first)
		})
	}
}

// TestMigrateConcurrently migrates one empty database from two goroutines
// and, separately, from two processes at once: the second waits for the
// first and finds nothing to do.
func TestMigrateConcurrently(t *testing.T) {
	t.Run("goroutines", func(t *testing.T) {
		dsn := pgtest.Native(t)
		dbs := []*postgres.DB{open(t, dsn), open(t, dsn)}
		errs := make([]error, len(dbs))
		var wg sync.WaitGroup
		for i, db := range dbs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = postgres.Migrate(context.Background(), db.DB)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		checkMigratedOnce(t, dbs[0].DB)
	})
	t.Run("processes", func(t *testing.T) {
		dsn := pgtest.Native(t)
		cmds := make([]*exec.Cmd, 2)
		outs := make([]bytes.Buffer, len(cmds))
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0])
			cmds[i].Env = append(os.Environ(), helperDSN+"="+dsn)
			cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
			if err := cmds[i].Start(); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Errorf("process %d: %v\n%s", i, err, outs[i].String())
			}
		}
		checkMigratedOnce(t, open(t, dsn).DB)
	})
}

const helperDSN = "ENRICH_TEST_MIGRATE_DSN"

// migrateProcess is one of TestMigrateConcurrently's processes: the test
// binary started again with helperDSN set.
func migrateProcess(dsn string) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	if err == nil {
		err = postgres.Migrate(ctx, db.DB)
		db.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func checkMigratedOnce(t *testing.T, db *bun.DB) {
	t.Helper()
	is := is.New(t)
	var names []string
	is.NoErr(db.NewSelect().Table("bun_migrations").Column("name").Scan(context.Background(), &names))
	is.True(len(names) > 0)
	seen := map[string]bool{}
	for _, n := range names {
		is.True(!seen[n]) // each migration applied once
		seen[n] = true
	}
	n, err := db.NewSelect().Table("jobs").Count(context.Background())
	is.NoErr(err) // the schema is there
	is.Equal(n, int64(0))
}

func TestOpenFailsOnUnreachableServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	if _, err := postgres.Open(ctx, "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", postgres.PoolConfig{}); err == nil {
		t.Fatal("Open succeeded without a server")
	}
}

// createOrg stores a new organization and returns its id.
func createOrg(t *testing.T, db *postgres.DB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := "org_" + hex.EncodeToString(b[:])
	if err := postgres.NewOrgStore(db).CreateOrg(context.Background(), &access.Organization{ID: id, Name: "Invited", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return id
}
