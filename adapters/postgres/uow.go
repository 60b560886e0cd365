package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.UnitOfWork = (*UnitOfWork)(nil)

// txAttempts is how many times InTx runs a unit that keeps failing with a
// serialization failure or a deadlock before it gives up.
const txAttempts = 4

// UnitOfWork runs units of work as PostgreSQL transactions at the default
// isolation (READ COMMITTED): a unit that must see a stable view of several
// rows locks them first (OrgStore.LockOrg, UpdateUser's FOR UPDATE).
type UnitOfWork struct {
	db    *bun.DB
	codec ports.EventCodec
	queue func(tx bun.Tx) ports.JobEnqueuer
	ends  *group[pendingEnd] // the group commit of job ends
}

// pendingEnd is one job's end, as its statements.
type pendingEnd struct {
	stmts []endStmt
	what  string
	from  job.State
	// linked is a linked end's: its own statements (stmts without the
	// entity layer's) and the end, for endWithSync when the links it was
	// rendered against changed.
	linked *linkedEnd
}

type linkedEnd struct {
	end  ports.JobEnd
	base []endStmt
}

// NewUnitOfWork returns a UnitOfWork on db that stores events in codec's
// form. queue, when not nil, gives the enqueuer that writes into the unit's
// transaction (so a job is queued if and only if the unit commits); when
// nil, Repos.Queue is nil.
func NewUnitOfWork(db *bun.DB, codec ports.EventCodec, queue func(tx bun.Tx) ports.JobEnqueuer) *UnitOfWork {
	u := &UnitOfWork{db: db, codec: codec, queue: queue}
	u.ends = &group[pendingEnd]{
		all: func(ends []pendingEnd) error {
			var stmts []endStmt
			for _, e := range ends {
				stmts = append(stmts, e.stmts...)
			}
			return u.execEnd(pendingEnd{stmts: stmts, what: "end jobs"})
		},
		one: u.execEnd,
	}
	return u
}

// InTx runs fn in one transaction with every store bound to it, commits when
// fn returns nil, and rolls back when fn returns an error (returned as it is)
// or panics (the panic goes on). A unit that fails with a serialization
// failure or a deadlock (SQLSTATE 40001, 40P01) is run again, up to
// txAttempts times in all, after a short random pause. An error that says
// the database cannot be reached also matches ports.ErrUnavailable; it is
// not retried, since a commit whose answer was lost may have happened.
func (u *UnitOfWork) InTx(ctx context.Context, fn func(ctx context.Context, r ports.Repos) error) error {
	for attempt := 1; ; attempt++ {
		err := u.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return fn(ctx, u.repos(tx))
		})
		if err == nil {
			return nil
		}
		if attempt < txAttempts && retryable(err) && pause(ctx, attempt) == nil {
			continue
		}
		return txErr(err, "unit of work")
	}
}

func (u *UnitOfWork) repos(tx bun.Tx) ports.Repos {
	r := ports.Repos{
		Orgs: NewOrgStore(tx), Users: NewUserStore(tx), Keys: NewAPIKeyStore(tx), Schemas: NewSchemaStore(tx),
		Records: NewRecordStore(tx), Jobs: NewJobStore(tx), Events: NewEventLog(tx, u.codec), RefreshTokens: NewRefreshTokenStore(tx),
		Usage: NewUsageLedger(tx), Invitations: NewInvitationStore(tx), Feed: NewFeedWriter(tx),
		Databases: NewDatabaseStore(tx),
		Entities:  EntityWriter{tx: tx},
		Outbox:    NewNotifications(tx),
		Vocabulary: vocabulary{ConceptStore: NewConceptStore(tx), ConceptLinks: NewConceptLinks(tx),
			ConceptReviews: NewConceptReviews(tx)},
	}
	if u.queue != nil {
		r.Queue = u.queue(tx)
	}
	return r
}

// vocabulary is ports.VocabularyWriter on a unit's transaction: the
// stores' own statements, bound to it.
type vocabulary struct {
	*ConceptStore
	*ConceptLinks
	*ConceptReviews
}

var _ ports.VocabularyWriter = vocabulary{}

// retryable reports whether err is a serialization failure or a deadlock,
// which PostgreSQL resolves by aborting one transaction that may simply run
// again.
func retryable(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && (pg.Code == "40001" || pg.Code == "40P01")
}

// pause waits a random few milliseconds, more after each attempt, so that
// the transactions that collided do not collide again.
func pause(ctx context.Context, attempt int) error {
	d := time.Duration(1<<attempt)*time.Millisecond + rand.N(5*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errNotHeld is the SQLSTATE that enrich_require_held raises (see the
// end_job migration).
const errNotHeld = "EJ409"

// EndJob stores a job's end in one round trip and one commit: a fenced
// UPDATE of the job, counted by enrich_require_held, which raises when the
// job is not held any more (with end.Create, the job's INSERT instead), then
// the records, the usage and the events, sent as one batch (endbatch.go),
// which PostgreSQL runs as one implicit transaction, so the raise (or any
// refusal) leaves nothing written. Ends that arrive while another is being
// written share its successor's batch and commit (group).
func (u *UnitOfWork) EndJob(ctx context.Context, end ports.JobEnd) error {
	j := end.Job
	what := fmt.Sprintf("end job %s attempt %d", j.ID, j.Attempt)
	stmts, err := endStmts(end, u.codec)
	if err != nil {
		return err
	}
	if reason, ok := refusedText(stmts); !ok {
		return fmt.Errorf("postgres: %s: %s in text: %w", what, reason, ports.ErrInvalid)
	}
	p := pendingEnd{stmts: stmts, what: what, from: end.From}
	if len(end.Sync) > 0 && len(end.Records) > 0 {
		linked, ok, err := linkedStmts(end.Sync)
		if err != nil {
			return err
		}
		if reason, ok := refusedText(linked); !ok {
			return fmt.Errorf("postgres: %s: %s in text: %w", what, reason, ports.ErrInvalid)
		}
		if !ok {
			// Its own transaction: one round trip more (the locked read).
			return u.endWithSync(context.WithoutCancel(ctx), end, stmts, what)
		}
		p.linked = &linkedEnd{end: end, base: stmts}
		p.stmts = append(append([]endStmt(nil), stmts...), linked...)
	}
	return u.ends.submit(p)
}

func (u *UnitOfWork) execEnd(e pendingEnd) error {
	what, from := e.what, e.from
	err := sendBatch(context.Background(), u.db.DB, e.stmts)
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == errStaleFeeds && e.linked != nil {
		// The registrations changed since the decision read them: render
		// again at the links read under lock.
		return u.endWithSync(context.Background(), e.linked.end, e.linked.base, what)
	}
	if errors.As(err, &pg) && pg.Code == errNotHeld {
		return fmt.Errorf("postgres: %s from %s: %w", what, from, ports.ErrFenced)
	}
	if err != nil {
		return conflict(err, what)
	}
	return nil
}
