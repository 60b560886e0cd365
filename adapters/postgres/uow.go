package postgres

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

// UnitOfWork runs functions in one PostgreSQL transaction.
type UnitOfWork struct {
	db    *bun.DB
	queue func(tx bun.Tx) ports.JobEnqueuer
}

var _ ports.UnitOfWork = (*UnitOfWork)(nil)

// NewUnitOfWork returns a unit of work on db; queue, when set, gives the
// enqueuer bound to a transaction.
func NewUnitOfWork(db *bun.DB, queue func(tx bun.Tx) ports.JobEnqueuer) *UnitOfWork {
	return &UnitOfWork{db: db, queue: queue}
}

// InTx runs fn in a transaction with every store bound to it.
func (u *UnitOfWork) InTx(ctx context.Context, fn func(ctx context.Context, r ports.Repos) error) error {
	return u.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		r := ports.Repos{Orgs: NewOrgStore(tx), Users: NewUserStore(tx), Keys: NewAPIKeyStore(tx), Schemas: NewSchemaStore(tx),
			Records: NewRecordStore(tx), Jobs: NewJobStore(tx), Events: NewEventLog(tx), RefreshTokens: NewRefreshTokenStore(tx)}
		if u.queue != nil {
			r.Queue = u.queue(tx)
		}
		return fn(ctx, r)
	})
}
