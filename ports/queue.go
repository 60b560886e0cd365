package ports

import (
	"context"
	"errors"
	"time"
)

// QueuedJob is one job handed to the durable queue.
type QueuedJob struct {
	JobID string
	OrgID string
	// At is when the run should be dispatched; zero means now.
	At time.Time
}

// JobEnqueuer puts jobs on the queue. Inside UnitOfWork.InTx the enqueue
// commits with the transaction.
type JobEnqueuer interface {
	Enqueue(ctx context.Context, j QueuedJob) error
}

// Dispatch is what a queue handler decides about a run it was handed.
type Dispatch struct {
	// Snooze, when positive, hands the job back to the queue to be
	// dispatched again after this long (the job is owned elsewhere, or there
	// is no capacity here). Zero means the queue is done with the job.
	Snooze time.Duration
}

// JobHandler is called by the queue for every dispatch of a job, on some
// replica. It must return quickly: long work runs elsewhere.
type JobHandler func(ctx context.Context, j QueuedJob) (Dispatch, error)

// Handlers are what a queue calls.
type Handlers struct {
	// Dispatch is called for every dispatch of a queued job.
	Dispatch JobHandler
	// Sweep is called about every SweepEvery on one replica of all (the
	// queue's leader): it looks for jobs whose holder died and enqueues them.
	Sweep      func(ctx context.Context) error
	SweepEvery time.Duration
}

// JobQueue is the durable, multi-replica queue of job runs.
type JobQueue interface {
	JobEnqueuer
	// Start begins dispatching queued jobs, and sweeping, until Stop.
	Start(ctx context.Context, h Handlers) error
	// Cancel removes the queued entries of job id (idempotent).
	Cancel(ctx context.Context, jobID string) error
	// Stop stops dispatching and waits for running handlers until ctx ends.
	Stop(ctx context.Context) error
}

// ErrFenced is returned by fenced writes of a worker that no longer owns the
// job (another replica took it over).
var ErrFenced = errors.New("job is owned by another worker")
