package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

// queueName is the River queue of job runs.
const queueName = "enrich"

// runArgs are the River job args of one queued run: the job's id is all a
// worker needs, because the job row holds the request.
type runArgs struct {
	JobID string `json:"job_id"`
	OrgID string `json:"org_id"`
}

func (runArgs) Kind() string { return "enrich_job" }

// QueueConfig tunes the River queue.
type QueueConfig struct {
	// Workers bounds the dispatches handled at once on this replica. A
	// dispatch only claims or checks a job (milliseconds); the job itself
	// runs outside River, bounded by the app's own limits.
	Workers int
	// FetchCooldown is the least time between two fetches (default 5 ms).
	FetchCooldown time.Duration
	// FetchPollInterval is how often River polls when no NOTIFY arrives
	// (default 1 s).
	FetchPollInterval time.Duration
}

// Queue is the durable job queue on River. Jobs are inserted in the caller's
// Bun transaction with River's database/sql driver and worked with its pgx
// driver on the pool that Bun shares.
type Queue struct {
	db     *DB
	cfg    QueueConfig
	log    *slog.Logger
	insert *river.Client[*sql.Tx]

	mu   sync.Mutex
	work *river.Client[pgx.Tx]
}

var _ ports.JobQueue = (*Queue)(nil)

// NewQueue returns the River queue on db. River's tables are created by
// Migrate.
func NewQueue(db *DB, cfg QueueConfig, log *slog.Logger) (*Queue, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 50
	}
	if cfg.FetchCooldown <= 0 {
		cfg.FetchCooldown = 5 * time.Millisecond
	}
	if cfg.FetchPollInterval <= 0 {
		cfg.FetchPollInterval = time.Second
	}
	ins, err := river.NewClient(riverdatabasesql.New(db.DB.DB), &river.Config{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("postgres: river insert client: %w", err)
	}
	return &Queue{db: db, cfg: cfg, log: log, insert: ins}, nil
}

func insertOpts(j ports.QueuedJob) *river.InsertOpts {
	o := &river.InsertOpts{Queue: queueName, MaxAttempts: 25}
	if !j.At.IsZero() {
		o.ScheduledAt = j.At
	}
	return o
}

// Enqueue queues j in its own transaction.
func (q *Queue) Enqueue(ctx context.Context, j ports.QueuedJob) error {
	if _, err := q.insert.Insert(ctx, runArgs{JobID: j.JobID, OrgID: j.OrgID}, insertOpts(j)); err != nil {
		return fail(err, "enqueue job "+j.JobID)
	}
	return nil
}

// TxEnqueuer returns an enqueuer whose inserts commit with tx.
func (q *Queue) TxEnqueuer(tx bun.Tx) ports.JobEnqueuer { return txEnqueuer{q: q, tx: tx.Tx} }

type txEnqueuer struct {
	q  *Queue
	tx *sql.Tx
}

func (e txEnqueuer) Enqueue(ctx context.Context, j ports.QueuedJob) error {
	if _, err := e.q.insert.InsertTx(ctx, e.tx, runArgs{JobID: j.JobID, OrgID: j.OrgID}, insertOpts(j)); err != nil {
		return fail(err, "enqueue job "+j.JobID)
	}
	return nil
}

// sweepArgs are the args of the periodic sweep, which River's leader inserts.
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "enrich_sweep" }

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	sweep func(ctx context.Context) error
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	// A failed sweep is not retried: the next one comes soon.
	if err := w.sweep(ctx); err != nil {
		return river.JobCancel(err)
	}
	return nil
}

type runWorker struct {
	river.WorkerDefaults[runArgs]
	h ports.JobHandler
}

// Timeout bounds one dispatch; the job itself runs outside River.
func (w *runWorker) Timeout(*river.Job[runArgs]) time.Duration { return 10 * time.Second }

func (w *runWorker) Work(ctx context.Context, j *river.Job[runArgs]) error {
	d, err := w.h(ctx, ports.QueuedJob{JobID: j.Args.JobID, OrgID: j.Args.OrgID})
	if err != nil {
		return err
	}
	if d.Snooze > 0 {
		return river.JobSnooze(d.Snooze)
	}
	return nil
}

// Start begins working the queue on this replica. The sweep is a River
// periodic job: River's elected leader inserts it every h.SweepEvery (and at
// once when it starts leading), and any replica works it.
func (q *Queue) Start(ctx context.Context, h ports.Handlers) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{h: h.Dispatch})
	var periodic []*river.PeriodicJob
	if h.Sweep != nil && h.SweepEvery > 0 {
		river.AddWorker(workers, &sweepWorker{sweep: h.Sweep})
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(h.SweepEvery),
			func() (river.JobArgs, *river.InsertOpts) {
				return sweepArgs{}, &river.InsertOpts{Queue: queueName, MaxAttempts: 1}
			}, &river.PeriodicJobOpts{ID: "enrich_sweep", RunOnStart: true}))
	}
	c, err := river.NewClient(riverpgxv5.New(q.db.Pool), &river.Config{
		PeriodicJobs:      periodic,
		Logger:            q.log,
		Queues:            map[string]river.QueueConfig{queueName: {MaxWorkers: q.cfg.Workers}},
		Workers:           workers,
		FetchCooldown:     q.cfg.FetchCooldown,
		FetchPollInterval: q.cfg.FetchPollInterval,
		// A dispatch lasts milliseconds; one that outlives this was on a
		// replica that died, and River's rescuer hands it to another.
		RescueStuckJobsAfter: 15 * time.Second,
		JobTimeout:           10 * time.Second,
		// Finished runs (one or a few per job) are of no interest after an hour.
		CompletedJobRetentionPeriod: time.Hour,
	})
	if err != nil {
		return fmt.Errorf("postgres: river client: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("postgres: start river: %w", err)
	}
	q.mu.Lock()
	q.work = c
	q.mu.Unlock()
	return nil
}

// Cancel cancels the job's queued runs that have not started.
func (q *Queue) Cancel(ctx context.Context, jobID string) error {
	res, err := q.insert.JobList(ctx, river.NewJobListParams().Kinds(runArgs{}.Kind()).
		States(rivertype.JobStateAvailable, rivertype.JobStateScheduled, rivertype.JobStateRetryable, rivertype.JobStatePending).
		Where("args->>'job_id' = @job_id", river.NamedArgs{"job_id": jobID}).First(100))
	if err != nil {
		return fail(err, "list queued runs of job "+jobID)
	}
	for _, r := range res.Jobs {
		if _, err := q.insert.JobCancel(ctx, r.ID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return fail(err, "cancel queued run of job "+jobID)
		}
	}
	return nil
}

// Stop stops fetching and waits for running dispatches until ctx ends.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	c := q.work
	q.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Stop(ctx)
}
