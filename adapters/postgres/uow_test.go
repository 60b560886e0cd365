package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

// queueRow is a job queued by testQueue, in its own table: it is written in
// the unit's transaction, the way the production queue (River) inserts its
// jobs, so it exists only if the unit commits.
type queueRow struct {
	bun.BaseModel `bun:"table:uow_test_queue"`

	N     int64  `bun:"n,pk,autoincrement"`
	JobID string `bun:"job_id,notnull"`
	OrgID string `bun:"org_id,notnull"`
}

type testQueue struct{ tx bun.Tx }

func (q testQueue) Enqueue(ctx context.Context, j ports.QueuedJob) error {
	_, err := q.tx.NewInsert().Model(&queueRow{JobID: j.JobID, OrgID: j.OrgID}).Exec(ctx)
	return err
}

// uowFixture is a UnitOfWork on db whose queue is testQueue.
func uowFixture(t *testing.T, db *bun.DB) contract.UnitOfWorkFixture {
	t.Helper()
	if _, err := db.NewCreateTable().Model((*queueRow)(nil)).IfNotExists().Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	return contract.UnitOfWorkFixture{
		UoW: postgres.NewUnitOfWork(db, jobcodec.Events{}, func(tx bun.Tx) ports.JobEnqueuer { return testQueue{tx} }),
		Repos: ports.Repos{Orgs: postgres.NewOrgStore(db), Users: postgres.NewUserStore(db), Keys: postgres.NewAPIKeyStore(db),
			Schemas: postgres.NewSchemaStore(db), Records: postgres.NewRecordStore(db), Jobs: postgres.NewJobStore(db),
			Events: postgres.NewEventLog(db, jobcodec.Events{}), RefreshTokens: postgres.NewRefreshTokenStore(db), Usage: postgres.NewUsageLedger(db)},
		Delivered: func(t *testing.T) []ports.QueuedJob {
			var rows []queueRow
			if err := db.NewSelect().Model(&rows).Order("n ASC").Scan(context.Background()); err != nil {
				t.Fatal(err)
			}
			out := make([]ports.QueuedJob, len(rows))
			for i, r := range rows {
				out[i] = ports.QueuedJob{JobID: r.JobID, OrgID: r.OrgID}
			}
			return out
		},
	}
}

// TestUnitOfWorkRetries: a unit that fails with a serialization failure or a
// deadlock runs again; one that keeps failing gives up with that error.
func TestUnitOfWorkRetries(t *testing.T) {
	ctx := context.Background()
	db := migrated(t, pgtest.Native(t))
	u := postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, nil)
	for _, code := range []string{"40001", "40P01"} {
		t.Run(code, func(t *testing.T) {
			is := is.New(t)
			calls := 0
			err := u.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				calls++
				is.Equal(r.Queue, nil) // no queue given
				if calls == 1 {
					return &pgconn.PgError{Code: code}
				}
				return nil
			})
			is.NoErr(err)
			is.Equal(calls, 2)

			calls = 0
			err = u.InTx(ctx, func(context.Context, ports.Repos) error {
				calls++
				return &pgconn.PgError{Code: code}
			})
			var pg *pgconn.PgError
			is.True(errors.As(err, &pg))
			is.Equal(pg.Code, code)
			is.Equal(calls, 4) // then it gives up
		})
	}
	t.Run("other errors run once", func(t *testing.T) {
		is := is.New(t)
		calls := 0
		err := u.InTx(ctx, func(context.Context, ports.Repos) error {
			calls++
			return &pgconn.PgError{Code: "23505"}
		})
		is.True(err != nil)
		is.Equal(calls, 1)
	})
}

// TestUnitOfWorkUnavailable: a database that cannot be reached is
// ports.ErrUnavailable, and fn never runs.
func TestUnitOfWorkUnavailable(t *testing.T) {
	is := is.New(t)
	// Port 1 on loopback: nothing listens there.
	sqldb, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	is.NoErr(err)
	db := bun.NewDB(sqldb, pgdialect.New())
	defer db.Close()
	called := false
	err = postgres.NewUnitOfWork(db, jobcodec.Events{}, nil).InTx(context.Background(), func(context.Context, ports.Repos) error {
		called = true
		return nil
	})
	is.True(errors.Is(err, ports.ErrUnavailable))
	is.True(!called)
}
