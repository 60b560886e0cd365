package ports

import (
	"context"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
)

// JobRunner runs jobs as durable work, across replicas: what the use cases
// see of the job runtime. A submitted job is stored, then run by the Runner
// of its type on this replica or another; it survives the death of the
// replica that runs it (another resumes it from its stored events).
type JobRunner interface {
	// Submit creates job id of type t for the organization, pending, with
	// its stored request (the source of truth a replica taking the job over
	// reads), and runs it here at once when a worker is free, or queues it
	// for any replica's. prepared is the Runner's plan for a run here
	// (Work.Prepared); nil makes the Runner read the request. No capacity
	// anywhere is ErrCapacity.
	Submit(ctx context.Context, id, orgID string, t job.Type, request []byte, prepared any) (*job.Job, error)
	// SubmitAwaited is Submit for a caller that waits for the job's end (a
	// blocking route) before it tells anyone the job's id: a job that starts
	// here may have its row written with its end, in one commit. The caller
	// follows it with Await.
	SubmitAwaited(ctx context.Context, id, orgID string, t job.Type, request []byte, prepared any) (*job.Job, error)
	// Await returns a context for following job id to its end: ctx's,
	// except that for a job submitted here with SubmitAwaited it also ends
	// when the job will never be stored (its cause wraps ErrJobNotStored)
	// or when its end meets an unreachable store (ErrJobStalled), so that
	// the follower does not wait for events that will not come soon.
	Await(ctx context.Context, id string) (context.Context, context.CancelFunc)
	// Cancel ends the organization's job id as cancelled, with reason: a
	// job running here ends itself (keeping what its Runner finished), a
	// job held by another replica is asked to, and otherwise the job is
	// fenced and ended over its holder's head. ErrNotFound when the
	// organization has no such job; job.ErrTransition when the job cannot
	// be cancelled (it ended). A nil error means the cancel was applied or
	// handed to the job's run; the caller reads the job to see its end.
	Cancel(ctx context.Context, orgID, id, reason string) error
	// Continue moves paused job id back to running with the client's
	// answers, in one commit with its job_continued event and its queue
	// entry; a replica's Runner then resumes it (Work.Continued). A job that
	// is not paused, or whose pause timed out (it is ended then), is
	// job.ErrTransition.
	Continue(ctx context.Context, id string, answers job.Answers) (*job.Job, error)
	// Running lists the ids of the jobs running in this process.
	Running() []string
}

// Errors of JobRunner.Await's context (context.Cause).
var (
	// ErrJobNotStored: the row of an awaited job could not be stored; the
	// run stopped and nothing of the job exists.
	ErrJobNotStored = errors.New("the job could not be stored")
	// ErrJobStalled: the end of an awaited job, which also stores the job,
	// meets an unreachable store. The run goes on retrying: the job and its
	// results are stored if the store comes back in time, and it can be
	// looked up by its id then.
	ErrJobStalled = errors.New("the job's end cannot be stored now")
)

// Causes of a run's context ending (context.Cause of the ctx a Runner is
// given). A Runner need not tell them apart: it returns, and the runtime
// ends the job as the cause says.
var (
	// ErrJobLost: another replica ended the job or took it over; this run's
	// writes are fenced off.
	ErrJobLost = errors.New("the job is held elsewhere now")
	// ErrJobShutdown: the process stopped while the job ran; the job is
	// handed back to resume elsewhere, or failed with code shutdown.
	ErrJobShutdown = errors.New("the server stopped while the job ran")
)

// JobCancelled is the cause of a run's context when a client cancelled the
// job.
type JobCancelled struct{ Reason string }

func (c *JobCancelled) Error() string { return "cancelled: " + c.Reason }

// JobStorageFailed is the cause of a run's context when the job's events
// could not be stored (Err says why); the job fails with code
// storage_error.
type JobStorageFailed struct{ Err error }

func (c *JobStorageFailed) Error() string { return c.Err.Error() }
func (c *JobStorageFailed) Unwrap() error { return c.Err }

// Runner runs one type of job for the job runtime.
type Runner interface {
	Run(ctx context.Context, w *Work) Outcome
}

// Work is one worker's hold on a job, handed to the job's Runner.
type Work struct {
	Job *job.Job
	// Prior are the job's events written before this worker took it over
	// (none for a fresh job): a resumed run skips the work they show done.
	Prior []job.Event
	// Publish sends an event of the job to its followers.
	Publish func(p job.Payload)
	// Charge writes the ledger entry of one answered LLM call durably, as
	// the answer arrives: with the job's next events (a call's checkpoint
	// event published after it goes in the same write or a later one) or
	// with its end, and on its own when the job ended elsewhere or the
	// write was fenced, so that every answered call is billed once whoever
	// ends the job. nil (a run outside the runtime): the Runner returns its
	// entries in Outcome.Usage instead.
	Charge func(e usage.Entry)
	// Prepared is what the Runner prepared when it created the job in this
	// process (nil for a job taken over): it need not read and plan again.
	Prepared any
	// Tracker stamps the common progress block on every event Publish
	// sends; the Runner tells it the job's size (SetTotalModels).
	Tracker *job.Tracker
	// Continued is set when the job was paused and continued: Answers are
	// the continue's answers (empty when it sent none), read from the last
	// job_continued event of Prior.
	Continued bool
	Answers   job.Answers
}

// Outcome is how a run ended. Exactly one of the cases holds: Failure set
// (the job fails), Pause set (the job pauses until a continue), or Result
// set (it completes, with its records).
type Outcome struct {
	Pause   *Pause
	Result  []byte
	Records []*enrichment.Record
	// Sync are the entity-layer writes of Records, stored with them (the
	// database_* events announcing their outcomes were published by the
	// run before its end).
	Sync []EntityWrite
	// Database is the entity layer's outcome of each record it decided on
	// (by record id): saved, partial or rejected. The rejected ones have
	// no write in Sync.
	Database  map[string]dbsync.Outcome
	Completed job.JobCompleted
	Failure   *Failure
	// Usage is the run's LLM calls not handed to Work.Charge, written to
	// the ledger with the job's end whatever the end (the calls were made
	// and paid for).
	Usage []usage.Entry
	// SchemaEvents are the schema events of the Records (app's
	// SchemaEvents decorator fills them), queued with the records when
	// the end stores them (JobEnd.SchemaEvents).
	SchemaEvents []SchemaEvent
	// Partial says a run a client cancelled has results worth keeping (a
	// batch's finished entities): its Records are stored with the
	// cancellation, and Completed.Result is the cancelled event's result.
	Partial bool
}

// Pause ends a run by pausing its job: Event is written (a pause event:
// its status is paused), the lease is released and the worker freed, all in the commit of
// the pause. POST /api/llm/continue resumes the job on any replica (its
// Runner then sees Work.Continued and the answers); a pause nobody answers
// within Timeout (DefaultPauseTimeout when zero) is cancelled.
type Pause struct {
	Event   job.PausePayload
	Timeout time.Duration
}

// DefaultPauseTimeout is how long a pause waits for a continue by default.
const DefaultPauseTimeout = 10 * time.Minute

// Failure is a typed job failure.
type Failure struct {
	Code job.ErrorCode
	Msg  string
}
