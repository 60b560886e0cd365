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
	// Resume says the run resumes a job that ran before (taken over from
	// a dead holder, handed back, or continued after a pause): it is
	// dispatched before the fresh jobs waiting, which have lost no work.
	Resume bool
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
	// Done, when set, says the dispatch started a run here, which lasts
	// until Done is closed: the queue holds one of its Handlers.Slots
	// until then, so that it takes no more jobs than this replica can run
	// and takes the next one as soon as a run ends.
	Done <-chan struct{}
}

// JobHandler is called by the queue for every dispatch of a job, on some
// replica. It returns within milliseconds, or waits briefly for a free
// worker; the run it starts goes on after it returns (Dispatch.Done).
type JobHandler func(ctx context.Context, j QueuedJob) (Dispatch, error)

// Handlers are what a queue calls.
type Handlers struct {
	// Dispatch is called for every dispatch of a queued job.
	Dispatch JobHandler
	// Sweep is called about every SweepEvery on every replica: it looks for
	// jobs whose holder died and enqueues them. (Not on one elected leader:
	// when the leader dies, a new one is elected only after its term lapses,
	// and the jobs it held would wait for that too.)
	Sweep      func(ctx context.Context) error
	SweepEvery time.Duration
	// Slots is how many runs the queue's dispatches may have going here at
	// once (Dispatch.Done): the runtime's worker count (0: no bound).
	Slots int
}

// JobQueue is the durable, multi-replica queue of job runs.
type JobQueue interface {
	JobEnqueuer
	// Start begins dispatching queued jobs, and sweeping, until Stop.
	Start(ctx context.Context, h Handlers) error
	// Cancel removes the queued entries of job id (idempotent).
	Cancel(ctx context.Context, jobID string) error
	// Stranded lists up to limit jobs still pending (never claimed) whose
	// only queued runs a dispatcher took before takenBefore and never
	// finished: the dispatcher's replica died between taking the run and
	// claiming the job. The sweep queues them again. A queue that lives
	// and dies with its process has none.
	Stranded(ctx context.Context, takenBefore time.Time, limit int) ([]QueuedJob, error)
	// Stop stops dispatching and waits for running handlers until ctx ends.
	Stop(ctx context.Context) error
}

// ErrFenced is returned by fenced writes of a worker that no longer owns the
// job (another replica took it over).
var ErrFenced = errors.New("job is owned by another worker")
