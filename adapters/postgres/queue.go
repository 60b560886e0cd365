package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	// Workers bounds the dispatches handled at once on this replica when
	// the handlers name no Slots. A dispatch that starts a run holds its
	// River worker until the run ends (ports.Dispatch.Done), so River's
	// worker count is the replica's run slots: River fetches a job only
	// when a slot is free, and fetches at once when one frees.
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

	mu       sync.Mutex
	work     *river.Client[pgx.Tx]
	stopping chan struct{} // closed by Stop: dispatches stop holding their runs' slots
	sweeps   sync.WaitGroup
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
	return &Queue{db: db, cfg: cfg, log: log, insert: ins, stopping: make(chan struct{})}, nil
}

// River priorities of runs (1 is dispatched first).
const (
	priorityResume = 1
	priorityFresh  = 2
)

func insertOpts(j ports.QueuedJob) *river.InsertOpts {
	o := &river.InsertOpts{Queue: queueName, MaxAttempts: 25, Priority: priorityFresh}
	if j.Resume {
		o.Priority = priorityResume
	}
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

type runWorker struct {
	river.WorkerDefaults[runArgs]
	h        ports.JobHandler
	stopping <-chan struct{}
}

// Timeout: none. A dispatch that starts a run holds its worker for the run
// (Work), which the runtime bounds by its own lease, not River's timeout.
func (w *runWorker) Timeout(*river.Job[runArgs]) time.Duration { return -1 }

func (w *runWorker) Work(ctx context.Context, j *river.Job[runArgs]) error {
	d, err := w.h(ctx, ports.QueuedJob{JobID: j.Args.JobID, OrgID: j.Args.OrgID})
	if err != nil {
		return err
	}
	if d.Snooze > 0 {
		return river.JobSnooze(d.Snooze)
	}
	if d.Done != nil {
		// The run holds this worker, River's slot, until it ends: River
		// then fetches the next job at once (its producer fetches when a
		// slot frees after it had to skip a fetch).
		select {
		case <-d.Done:
		case <-ctx.Done():
		case <-w.stopping:
		}
	}
	return nil
}

// Start begins working the queue on this replica, and sweeping every
// h.SweepEvery (jittered) on this replica too: see ports.Handlers.
func (q *Queue) Start(ctx context.Context, h ports.Handlers) error {
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{h: h.Dispatch, stopping: q.stopping})
	slots := q.cfg.Workers
	if h.Slots > 0 {
		slots = h.Slots
	}
	c, err := river.NewClient(riverpgxv5.New(q.db.Pool), &river.Config{
		Logger:            q.log,
		Queues:            map[string]river.QueueConfig{queueName: {MaxWorkers: slots}},
		Workers:           workers,
		FetchCooldown:     q.cfg.FetchCooldown,
		FetchPollInterval: q.cfg.FetchPollInterval,
		// A River job holds its worker for its run, however long. A job
		// whose replica died is found by the runtime's sweep (its lease
		// lapsed, or Stranded), not by River's rescuer, whose default
		// (an hour) only tidies the rows such replicas left running.
		JobTimeout: -1,
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
	if h.Sweep != nil && h.SweepEvery > 0 {
		q.sweeps.Add(1)
		go q.sweep(ctx, h.Sweep, h.SweepEvery)
	}
	return nil
}

// sweep calls fn about every interval (jittered by up to a fifth, so that
// replicas do not sweep in step) until ctx ends or the queue stops.
func (q *Queue) sweep(ctx context.Context, fn func(context.Context) error, interval time.Duration) {
	defer q.sweeps.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-q.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		t := time.NewTimer(interval - interval/10 + rand.N(interval/5+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			q.log.Warn("sweep failed; the next one comes soon", "err", err)
		}
	}
}

// strandedSQL finds pending jobs whose only live River runs are running
// since before the first argument (taken by a dispatcher that never finished them) and none
// waits to be fetched.
const strandedSQL = `SELECT DISTINCT j.id, j.org_id FROM river_job r JOIN jobs j ON j.id = r.args->>'job_id'
WHERE r.kind = 'enrich_job' AND r.state = 'running' AND r.attempted_at < ? AND j.state = 'pending'
AND NOT EXISTS (SELECT 1 FROM river_job w WHERE w.kind = 'enrich_job' AND w.args->>'job_id' = j.id
  AND w.state IN ('available', 'scheduled', 'retryable', 'pending'))
LIMIT ?`

// Stranded lists pending jobs whose runs a dead dispatcher took.
func (q *Queue) Stranded(ctx context.Context, takenBefore time.Time, limit int) ([]ports.QueuedJob, error) {
	rows, err := q.db.DB.QueryContext(ctx, strandedSQL, utc(takenBefore), limit)
	if err != nil {
		return nil, fail(err, "list stranded jobs")
	}
	defer rows.Close()
	var out []ports.QueuedJob
	for rows.Next() {
		var j ports.QueuedJob
		if err := rows.Scan(&j.JobID, &j.OrgID); err != nil {
			return nil, fail(err, "list stranded jobs")
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(err, "list stranded jobs")
	}
	return out, nil
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

// Stop stops fetching and sweeping, and waits for running dispatches until
// ctx ends. The runs they started go on: the runtime ends them.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	c := q.work
	select {
	case <-q.stopping:
	default:
		close(q.stopping)
	}
	q.mu.Unlock()
	q.sweeps.Wait()
	if c == nil {
		return nil
	}
	return c.Stop(ctx)
}
