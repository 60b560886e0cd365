package jobrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Deps are the ports the runtime runs on.
type Deps struct {
	UoW    ports.UnitOfWork
	Jobs   ports.JobStore
	Events ports.EventLog
	Queue  ports.JobQueue
	Stream ports.EventStream
	Clock  ports.Clock
	Log    *slog.Logger
	// Invalidations tells the replica that runs a job that it was cancelled
	// (nil: this process is the only one; the owner also finds out when it
	// renews its lease).
	Invalidations ports.Invalidations
	// Observer is told when a job ends here (nil: nobody).
	Observer ports.JobObserver
}

// Config tunes the runtime. Zero fields take the defaults (Default...).
type Config struct {
	// Owner names this replica in job leases.
	Owner string
	// LeaseTTL is how long a claim lasts unless renewed (renewed every
	// third of it).
	LeaseTTL time.Duration
	// Workers and PerOrg bound the jobs running here, in all and per
	// organization. A new job past them waits up to SlotWait for a worker
	// here to free up (default 250 ms), then is queued, pending, for any
	// replica's worker.
	Workers, PerOrg int
	SlotWait        time.Duration
	// MaxAttempts bounds how many workers may take a job; past it the job
	// fails with code interrupted.
	MaxAttempts int
	// DeferCreate is how long a job whose creator waits for its end
	// (SubmitAwaited) runs before its row is written (default 50 ms;
	// negative: at once, like any job). A run that ends sooner writes its
	// job with its end, in one commit instead of two. Nobody else knows of
	// such a job before it ends, so nobody misses its row.
	DeferCreate time.Duration
	// ReleaseAtShutdown hands running jobs back (lease cleared) at shutdown,
	// to resume elsewhere; when false (memory storage, which dies with the
	// process) they fail with code shutdown.
	ReleaseAtShutdown bool
	// SweepEvery is how often the queue's leader looks for jobs whose
	// holder died (default 5 s).
	SweepEvery time.Duration
	// RunIdle is how long a run's goroutine waits for the next run before
	// it exits (default 10 s).
	RunIdle time.Duration
}

// Runners is the table from job type to the Runner of its jobs. A job of a
// type it lacks fails with code internal_error.
type Runners map[job.Type]ports.Runner

// New returns the runtime on d, tuned by c, running each type of job with
// its Runner in runners. Start begins its work.
func New(d Deps, c Config, runners Runners) *Engine {
	return &Engine{Deps: d, Config: c, byType: maps.Clone(runners)}
}

// Engine runs jobs as durable work. A job is created in one commit, claimed
// at once by a free worker here or queued for any replica's; a worker holds
// it with a lease and a fencing token (the job's attempt) and ends it with
// its records, state and last events in one commit. The queue's periodic
// sweep finds jobs whose holder died (lease lapsed) and queues them; the
// replica that a queued job reaches takes it over and resumes it.
type Engine struct {
	Deps
	Config
	byType Runners

	mu      sync.Mutex
	running map[string]*run
	perOrg  map[string]int
	total   int
	freed   chan struct{} // closed and replaced when a worker slot frees
	idle    chan func()   // run goroutines waiting for the next run (spawn)
	runners struct{ live, idle atomic.Int32 }
	closing bool
	wg      sync.WaitGroup
	base    context.Context
	stopAll context.CancelFunc
}

type run struct {
	id, org string
	attempt int
	job     job.Job // as claimed: what the run's end is fenced against
	cancel  context.CancelCauseFunc
	done    chan struct{}
	tracker *job.Tracker
	typ     job.Type
	// stored is closed once the job's row is stored; storeErr, set before,
	// says it could not be (the run then writes nothing).
	stored   chan struct{}
	storeErr error
	// stalled is closed, with stallErr set before, when the end of a run
	// whose row is not stored yet meets an unreachable store: its awaiting
	// caller is answered at once (unavailable) while the end is retried.
	stalled   chan struct{}
	stallOnce sync.Once
	stallErr  error
	// awaiters are the contexts of Await's callers still to be told how
	// the row's store went, or of a stall (tellAwaiters). Await used to
	// start a goroutine per caller for it, whose wake-up at the job's end
	// was one more hand-off on a blocking request's path.
	awaitMu  sync.Mutex
	awaiters []context.CancelCauseFunc
	// deferred: the row is stored by whoever takes row first: the
	// DeferCreate timer (rowCreating) or the run's end (rowEnding), which
	// stores the job with its end.
	deferred bool
	row      atomic.Int32

	pubMu sync.Mutex
	owned bool        // the event stream is owned: events go to it
	held  []job.Draft // events published before the stream was owned
}

// The states of a deferred run's row.
const (
	rowWaiting int32 = iota
	rowCreating
	rowEnding
)

// rowStart says how a launched run's job row is stored.
type rowStart int

const (
	rowStored   rowStart = iota // stored before the launch
	rowStoring                  // being stored by the launcher, who tells Engine.stored
	rowDeferred                 // stored after DeferCreate, or with the job's end
)

// isStored reports whether the job's row is stored.
func (r *run) isStored() bool {
	select {
	case <-r.stored:
		return r.storeErr == nil
	default:
		return false
	}
}

// Engine defaults, used for the fields left zero (the root Config fills
// them with these too).
const (
	DefaultLeaseTTL    = 10 * time.Second
	DefaultWorkers     = 32
	DefaultOrgWorkers  = 8
	DefaultJobAttempts = 5
	DefaultSweepEvery  = 5 * time.Second
	DefaultSlotWait    = 250 * time.Millisecond
	DefaultDeferCreate = 50 * time.Millisecond
)

// Start begins dispatching and renewing leases; Stop ends it.
func (e *Engine) Start(ctx context.Context) error {
	e.LeaseTTL = cmp.Or(e.LeaseTTL, DefaultLeaseTTL)
	e.Workers = cmp.Or(e.Workers, DefaultWorkers)
	e.PerOrg = cmp.Or(e.PerOrg, DefaultOrgWorkers)
	e.MaxAttempts = cmp.Or(e.MaxAttempts, DefaultJobAttempts)
	e.SweepEvery = cmp.Or(e.SweepEvery, DefaultSweepEvery)
	e.SlotWait = cmp.Or(e.SlotWait, DefaultSlotWait)
	e.DeferCreate = cmp.Or(e.DeferCreate, DefaultDeferCreate)
	e.mu.Lock()
	e.running, e.perOrg, e.freed, e.idle = map[string]*run{}, map[string]int{}, make(chan struct{}), make(chan func())
	e.base, e.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.renew()
	}()
	return e.Queue.Start(e.base, ports.Handlers{Dispatch: e.Dispatch, Sweep: e.Sweep, SweepEvery: e.SweepEvery})
}

// Sweep queues every job whose holder's lease lapsed, so that some replica
// takes it over.
func (e *Engine) Sweep(ctx context.Context) error {
	lapsed, err := e.Jobs.ListLapsed(ctx, e.Clock.Now(), 500)
	if err != nil {
		e.Log.Warn("sweep for interrupted jobs", "err", err)
		return err
	}
	for _, j := range lapsed {
		if err := e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: j.ID, OrgID: j.OrgID}); err != nil {
			return err
		}
	}
	if len(lapsed) > 0 {
		e.Log.Info("interrupted jobs queued for takeover", "jobs", len(lapsed))
	}
	paused, err := e.Jobs.ListPauseLapsed(ctx, e.Clock.Now(), 500)
	if err != nil {
		e.Log.Warn("sweep for timed-out pauses", "err", err)
		return err
	}
	for _, j := range paused {
		if err := e.timeOut(ctx, j.ID); err != nil {
			return err
		}
	}
	return nil
}

// timeOut cancels a paused job whose pause timed out, with a cancelled
// event saying so. A job continued or ended meanwhile is left alone.
func (e *Engine) timeOut(ctx context.Context, id string) error {
	err := e.end(ctx, id, func(j *job.Job, now time.Time) error {
		if !j.PauseLapsed(now) {
			return fmt.Errorf("%w: the job is %s, not a timed-out pause", job.ErrTransition, j.State)
		}
		return j.Cancel(job.PauseTimedOut, now)
	}, job.Cancellation(job.PauseTimedOut))
	switch {
	case err == nil:
		e.Log.Info("paused job cancelled: its pause timed out", "job_id", id)
		return nil
	case errors.Is(err, job.ErrTransition), errors.Is(err, ports.ErrNotFound):
		return nil
	}
	e.Log.Warn("timed-out pause not cancelled", "job_id", id, "err", err)
	return err
}

// Continue moves a paused job back to running in one commit with its
// job_continued event (the answers) and its queue entry, so that a worker on
// any replica takes it and its Runner resumes from the pause. A pause that
// timed out is ended (cancelled) instead, and the error is ErrTransition.
func (e *Engine) Continue(ctx context.Context, id string, answers job.Answers) (*job.Job, error) {
	var out *job.Job
	lapsed := false
	err := e.retry(ctx, func() error {
		return e.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
			j, err := r.Jobs.UpdateJob(ctx, id, func(j *job.Job) error {
				lapsed = j.PauseLapsed(e.Clock.Now())
				return j.Continue(e.Clock.Now())
			})
			if err != nil {
				return err
			}
			out = j
			last, err := r.Events.Last(ctx, id)
			if err != nil {
				return err
			}
			if answers == nil {
				answers = job.Answers{}
			}
			d := job.NewTracker(j.Type).Stamp(job.NewDraft(job.JobContinued{Answers: answers, Round: j.Continues}))
			if err := r.Events.Append(ctx, job.Number(id, last, e.Clock.Now(), []job.Draft{d})); err != nil {
				return err
			}
			return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: j.OrgID})
		})
	})
	if err != nil {
		if lapsed {
			if terr := e.timeOut(context.WithoutCancel(ctx), id); terr != nil {
				e.Log.Warn("timed-out pause not cancelled at continue", "job_id", id, "err", terr)
			}
		}
		return nil, err
	}
	e.Stream.Written(id)
	e.Log.Info("job continued", "job_id", id, "answers", len(answers))
	return out, nil
}

// Running lists the ids of the jobs running here.
func (e *Engine) Running() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.running))
	for id := range e.running {
		out = append(out, id)
	}
	return out
}

// reserve takes a worker slot for org; false when there is none.
func (e *Engine) reserve(org string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ok, _ := e.reserveLocked(org)
	return ok
}

// reserveLocked takes a slot, or returns a channel closed when one frees.
func (e *Engine) reserveLocked(org string) (bool, <-chan struct{}) {
	if e.closing || e.total >= e.Workers || e.perOrg[org] >= e.PerOrg {
		return false, e.freed
	}
	e.total++
	e.perOrg[org]++
	return true, nil
}

// reserveWithin takes a worker slot for org, waiting up to SlotWait for one
// to free: a burst past the limits is run here as soon as it can be, rather
// than through the queue's slower pick-up. The error is ctx's.
func (e *Engine) reserveWithin(ctx context.Context, org string) (bool, error) {
	var deadline <-chan time.Time
	for {
		e.mu.Lock()
		ok, freed := e.reserveLocked(org)
		closing := e.closing
		e.mu.Unlock()
		if ok || closing {
			return ok, nil
		}
		if deadline == nil {
			t := time.NewTimer(e.SlotWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-freed:
		case <-deadline:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

func (e *Engine) release(org string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.total--
	if e.perOrg[org]--; e.perOrg[org] <= 0 {
		delete(e.perOrg, org)
	}
	close(e.freed)
	e.freed = make(chan struct{})
}

// Submit creates job id of type t for the organization, pending, with its
// stored request (encoded by JobRequests: the source of truth a worker
// taking the job over reads), and runs it like Create (prepared is the Runner's plan for a
// run here). No capacity anywhere is 503 capacity.
func (e *Engine) Submit(ctx context.Context, id, orgID string, t job.Type, request []byte, prepared any) (*job.Job, error) {
	return e.submit(ctx, id, orgID, t, request, prepared, false)
}

// SubmitAwaited is Submit for a caller that waits for the job's end (a
// blocking route) before it tells anyone the job's id: a job that starts
// here has its row written only after DeferCreate, or with its end when it
// ends sooner. The caller follows it with Await.
func (e *Engine) SubmitAwaited(ctx context.Context, id, orgID string, t job.Type, request []byte, prepared any) (*job.Job, error) {
	return e.submit(ctx, id, orgID, t, request, prepared, true)
}

func (e *Engine) submit(ctx context.Context, id, orgID string, t job.Type, request []byte, prepared any, awaited bool) (*job.Job, error) {
	now := e.Clock.Now()
	j := &job.Job{ID: id, OrgID: orgID, Type: t, State: job.Pending, Request: request, CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}
	if err := e.create(ctx, j, prepared, awaited); err != nil {
		return nil, err
	}
	return j, nil
}

// Create stores a new job in one commit. With a free worker here (waiting
// up to SlotWait for one), the job is claimed in that commit and starts at
// once (should this replica die, the sweep finds its lease lapsed);
// otherwise it is queued in that commit and waits, pending, for any
// replica's worker.
func (e *Engine) Create(ctx context.Context, j *job.Job, prepared any) error {
	return e.create(ctx, j, prepared, false)
}

func (e *Engine) create(ctx context.Context, j *job.Job, prepared any, awaited bool) error {
	local, err := e.reserveWithin(ctx, j.OrgID)
	if err != nil {
		return err
	}
	if local {
		if err := j.Claim(e.Owner, e.Clock.Now(), e.LeaseTTL); err != nil {
			e.release(j.OrgID)
			return err
		}
		if awaited && e.DeferCreate > 0 {
			r := e.launch(new(*j), nil, prepared, rowDeferred)
			time.AfterFunc(e.DeferCreate, func() { e.storeDeferred(r) })
			return nil
		}
		// The run starts now, so that its first calls overlap the commit
		// (one statement, which commits on its own); it writes nothing,
		// and its events wait in the run, until the row is stored.
		r := e.launch(new(*j), nil, prepared, rowStoring)
		err = e.Jobs.CreateJob(ctx, j)
		e.stored(r, err)
		return err
	}
	return e.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if err := r.Jobs.CreateJob(ctx, j); err != nil {
			return err
		}
		return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: j.ID, OrgID: j.OrgID})
	})
}

// stall tells the run's awaiting caller, once, that its end meets an
// unreachable store (err).
func (r *run) stall(err error) {
	r.stallOnce.Do(func() {
		r.stallErr = err
		close(r.stalled)
		r.tellAwaiters()
	})
}

// markStored closes stored (storeErr set before, if the store failed) and
// tells the awaiting callers.
func (r *run) markStored() {
	close(r.stored)
	r.tellAwaiters()
}

// tellAwaiters tells the awaiting callers (tell) once the store or a stall
// happened, and then forgets them.
func (r *run) tellAwaiters() {
	r.awaitMu.Lock()
	defer r.awaitMu.Unlock()
	if len(r.awaiters) > 0 && r.tell(r.awaiters[0]) {
		for _, c := range r.awaiters[1:] {
			r.tell(c)
		}
		r.awaiters = nil
	}
}

// tell cancels an awaiting caller's context when the run stalled or its
// row could not be stored, and reports whether either the store or a
// stall happened (the caller needs telling no more).
func (r *run) tell(cancel context.CancelCauseFunc) bool {
	select {
	case <-r.stalled:
		cancel(fmt.Errorf("%w: %w", ports.ErrJobStalled, r.stallErr))
		return true
	default:
	}
	select {
	case <-r.stored:
		if r.storeErr != nil {
			cancel(fmt.Errorf("%w: %w", ports.ErrJobNotStored, r.storeErr))
		}
		return true
	default:
		return false
	}
}

// storeDeferred writes the row of a deferred run that has not ended after
// DeferCreate; from then on the run is like any other.
func (e *Engine) storeDeferred(r *run) {
	if !r.row.CompareAndSwap(rowWaiting, rowCreating) {
		return // the run's end stores it
	}
	ctx := context.WithoutCancel(e.base) // a shutdown hands the job back: it needs its row
	e.stored(r, e.retry(ctx, func() error { return e.Jobs.CreateJob(ctx, new(r.job)) }))
}

// Await returns a context for following job id to its end (ctx's, unless
// the job is a deferred run here: then it also ends, with a cause wrapping
// ports.ErrJobNotStored, when the job's row cannot be stored, so that the follower
// does not wait for events that will never be; or wrapping ports.ErrJobStalled,
// when the store cannot be reached to store it, so that the follower is
// answered at once rather than after the end's retries).
func (e *Engine) Await(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	e.mu.Lock()
	r := e.running[id]
	e.mu.Unlock()
	if r == nil || !r.deferred {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r.awaitMu.Lock()
	if !r.tell(cancel) {
		r.awaiters = append(r.awaiters, cancel)
	}
	r.awaitMu.Unlock()
	return ctx, func() { cancel(nil) }
}

// stored tells a run started before its job's row was stored how the store
// went: the run owns its event stream from now on, or it stops.
func (e *Engine) stored(r *run, err error) {
	if err != nil {
		r.storeErr = err
		r.cancel(ports.ErrJobNotStored)
	} else {
		e.own(r, 0)
	}
	r.markStored()
}

// own makes the run the writer of its job's events, numbered after seq
// after, and hands the stream what the run published until now.
func (e *Engine) own(r *run, after int64) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	e.Stream.Own(r.id, r.attempt, after, e.lost(r))
	for _, d := range r.held {
		e.Stream.Publish(r.id, d)
	}
	r.held, r.owned = nil, true
}

// lost is told by the stream that the run's events cannot be written here
// any more.
func (e *Engine) lost(r *run) func(error) {
	return func(err error) {
		if errors.Is(err, ports.ErrFenced) {
			r.cancel(ports.ErrJobLost)
			return
		}
		r.cancel(&ports.JobStorageFailed{Err: err})
	}
}

// publish gives the job's stream an event of the run, or keeps it until the
// run owns the stream.
func (e *Engine) publish(r *run, d job.Draft) {
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if !r.owned {
		r.held = append(r.held, d)
		return
	}
	e.Stream.Publish(r.id, d)
}

// Dispatch is the queue's handler: it takes a pending job or one whose
// holder died. A job that a live holder has is left to it.
func (e *Engine) Dispatch(ctx context.Context, q ports.QueuedJob) (ports.Dispatch, error) {
	e.mu.Lock()
	_, here := e.running[q.JobID]
	e.mu.Unlock()
	if here {
		return ports.Dispatch{}, nil
	}
	if !e.reserve(q.OrgID) {
		return ports.Dispatch{Snooze: time.Second}, nil // no capacity here: stays pending
	}
	// A dispatch that finds the job ended or held (the sweep raced its
	// holder's renewal, or a job queued twice) is settled by a plain read,
	// without a transaction.
	if cur, err := e.Jobs.GetJob(ctx, q.OrgID, q.JobID); err == nil {
		switch {
		case cur.State.Terminal():
			e.release(q.OrgID)
			return ports.Dispatch{}, nil
		case cur.State == job.Paused:
			e.release(q.OrgID)
			if cur.PauseLapsed(e.Clock.Now()) {
				return ports.Dispatch{}, e.timeOut(ctx, cur.ID)
			}
			if wait := cur.PauseUntil.Sub(e.Clock.Now()); !cur.PauseUntil.IsZero() && wait > 0 {
				return ports.Dispatch{Snooze: wait}, nil // the pause's timeout, early
			}
			return ports.Dispatch{}, nil
		case cur.Leased(e.Clock.Now()):
			e.release(q.OrgID)
			return ports.Dispatch{}, nil // held; the sweep queues it again if its holder dies
		}
	}
	var prior *job.Job
	exhausted := false
	j, err := e.Jobs.UpdateJob(ctx, q.JobID, func(j *job.Job) error {
		c := *j
		prior = &c
		if j.Exhausted(e.MaxAttempts, e.Clock.Now()) {
			exhausted = true
			return nil
		}
		return j.Claim(e.Owner, e.Clock.Now(), e.LeaseTTL)
	})
	switch {
	case errors.Is(err, job.ErrEnded), errors.Is(err, ports.ErrNotFound):
		e.release(q.OrgID)
		return ports.Dispatch{}, nil
	case errors.Is(err, job.ErrLeased), errors.Is(err, job.ErrPaused):
		e.release(q.OrgID)
		return ports.Dispatch{}, nil
	case err != nil:
		e.release(q.OrgID)
		return ports.Dispatch{}, err
	case exhausted:
		e.release(q.OrgID)
		msg := fmt.Sprintf("the job was interrupted %d times (its workers stopped) and was not resumed again", prior.Attempt)
		if err := e.end(ctx, q.JobID, func(j *job.Job, now time.Time) error { return j.Fail(job.CodeInterrupted, msg, now) },
			job.Failure(job.CodeInterrupted, msg)); err != nil && !errors.Is(err, job.ErrTransition) {
			return ports.Dispatch{}, err
		}
		return ports.Dispatch{}, nil
	}
	evs, err := e.priorEvents(ctx, j.ID)
	if err != nil {
		// Let the lease lapse; the sweep brings the job back.
		e.release(q.OrgID)
		return ports.Dispatch{}, err
	}
	e.launch(j, evs, nil, rowStored)
	return ports.Dispatch{}, nil
}

func (e *Engine) priorEvents(ctx context.Context, id string) ([]job.Event, error) {
	var out []job.Event
	for {
		evs, err := e.Events.List(ctx, id, int64(len(out)), 1000)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if len(evs) < 1000 {
			return out, nil
		}
	}
}

// launch runs a claimed job in the background. A job whose row is stored
// owns its event stream at once, before anyone can follow it from here;
// otherwise the caller tells the run when it is (Engine.stored), or, for a
// deferred row, the DeferCreate timer or the run's end stores it.
func (e *Engine) launch(j *job.Job, prior []job.Event, prepared any, row rowStart) *run {
	ctx, cancel := context.WithCancelCause(e.base)
	r := &run{id: j.ID, org: j.OrgID, attempt: j.Attempt, job: *j, cancel: cancel, done: make(chan struct{}),
		stored: make(chan struct{}), stalled: make(chan struct{}), tracker: job.NewTracker(j.Type), typ: j.Type, deferred: row == rowDeferred}
	for _, ev := range prior {
		r.tracker.Observe(ev.Type, ev.Fields())
	}
	e.mu.Lock()
	e.running[j.ID] = r
	e.mu.Unlock()
	switch row {
	case rowStored:
		var after int64
		if len(prior) > 0 {
			after = prior[len(prior)-1].Seq
		}
		e.own(r, after)
		r.markStored()
	case rowDeferred:
		// Followers here wait on the stream, not on the log, while the run
		// keeps its events until the row is stored (own, or its end).
		e.Stream.Own(r.id, r.attempt, 0, e.lost(r))
		e.Stream.Private(r.id)
	}
	e.spawn(func() {
		defer close(r.done)
		defer func() {
			e.mu.Lock()
			delete(e.running, j.ID)
			e.mu.Unlock()
			e.release(j.OrgID)
			cancel(nil)
		}()
		e.execute(ctx, r, j, prior, prepared)
	})
	return r
}

// defaultRunIdle is RunIdle's default.
const defaultRunIdle = 10 * time.Second

// spawn runs fn on an idle run goroutine, or on a new one. A run grows its
// goroutine's stack (JSON, the provider client, regexps), and a fresh
// goroutine for every job paid for that growth again each time; a reused
// one starts where the last run left it. Idle goroutines exit after RunIdle
// or when the engine stops (Stop waits for them).
func (e *Engine) spawn(fn func()) {
	select {
	case e.idle <- fn:
		return
	default:
	}
	idle := cmp.Or(e.RunIdle, defaultRunIdle)
	e.wg.Add(1)
	e.runners.live.Add(1)
	go func() {
		defer e.wg.Done()
		defer e.runners.live.Add(-1)
		t := time.NewTimer(idle)
		defer t.Stop()
		for {
			fn()
			t.Reset(idle)
			e.runners.idle.Add(1)
			select {
			case fn = <-e.idle:
				e.runners.idle.Add(-1)
			case <-t.C:
				e.runners.idle.Add(-1)
				return
			case <-e.base.Done():
				e.runners.idle.Add(-1)
				return
			}
		}
	}()
}

func (e *Engine) execute(ctx context.Context, r *run, j *job.Job, prior []job.Event, prepared any) {
	var after int64
	if len(prior) > 0 {
		after = prior[len(prior)-1].Seq
	}
	w := &ports.Work{Job: j, Prior: prior, Prepared: prepared, Tracker: r.tracker,
		Publish: func(p job.Payload) { e.publish(r, r.tracker.Stamp(job.NewDraft(p))) }}
	w.Answers, w.Continued = job.LastContinue(prior)
	continuing := len(prior) > 0 && prior[len(prior)-1].Type == job.EventJobContinued
	if j.Attempt > 1 && len(prior) > 0 && !continuing {
		w.Publish(job.JobResumed{Attempt: j.Attempt, AfterEvent: after})
		e.Log.Info("job resumed", "job_id", j.ID, "attempt", j.Attempt, "after_event", after)
	}
	runner := e.byType[j.Type]
	var out ports.Outcome
	if runner == nil {
		out.Failure = &ports.Failure{Code: job.CodeInternal, Msg: fmt.Sprintf("no runner for jobs of type %q", j.Type)}
	} else {
		out = runner.Run(ctx, w)
	}
	e.finish(ctx, r, out)
}

// finish ends the run: the job's last events, records and state in one
// commit, under the run's fence.
func (e *Engine) finish(ctx context.Context, r *run, out ports.Outcome) {
	bg := context.WithoutCancel(ctx)
	cause := context.Cause(ctx)
	create, ok := e.settleRow(bg, r, cause)
	if !ok {
		return // nothing of the job exists
	}
	end, ok := e.endingOf(bg, r, cause, out)
	if !ok {
		return
	}
	evs := e.seal(bg, r, create, end.drafts)
	if len(evs) == 0 {
		e.dropped(ctx, r)
		return
	}
	err := e.storeEnd(bg, r, create, end, evs, out)
	if create && !e.storedWithEnd(bg, r, err) {
		e.Stream.Sealed(r.id, nil, err)
		return // nothing of the job exists; its follower is told (Await)
	}
	e.Stream.Sealed(r.id, evs, err)
	e.afterEnd(bg, r, end, evs, err)
}

// settleRow waits until the run's job row is stored, unless the run's end
// is to store it (create). A deferred run stopped by a shutdown that hands
// jobs back stores its row first: the next holder needs it. ok is false
// when the row could not be stored: nothing of the job exists.
func (e *Engine) settleRow(ctx context.Context, r *run, cause error) (create, ok bool) {
	create = r.deferred && r.row.CompareAndSwap(rowWaiting, rowEnding)
	if create && errors.Is(cause, ports.ErrJobShutdown) && e.ReleaseAtShutdown {
		e.stored(r, e.retry(ctx, func() error { return e.Jobs.CreateJob(ctx, new(r.job)) }))
		create = false
	}
	if !create {
		<-r.stored
		if r.storeErr != nil {
			e.Stream.Sealed(r.id, nil, r.storeErr)
			return false, false
		}
	}
	return create, true
}

// ending is how a run ends its job: the state change and the last events,
// whether the Outcome's records go with them, and a pause's deadline.
type ending struct {
	apply   func(j *job.Job, now time.Time) error
	drafts  []job.Draft
	records bool
	paused  bool
	until   time.Time
}

// endingOf decides the run's end from its context's cause and its Outcome.
// ok is false when the run writes no end: its job was taken over, its
// events could not be stored (it is failed instead), or it is handed back
// at shutdown.
func (e *Engine) endingOf(ctx context.Context, r *run, cause error, out ports.Outcome) (ending, bool) {
	var cc *ports.JobCancelled
	var sc *ports.JobStorageFailed
	switch {
	case errors.Is(cause, ports.ErrJobLost):
		e.Stream.Sealed(r.id, nil, ports.ErrJobLost)
		e.Log.Info("job left to its new holder", "job_id", r.id, "attempt", r.attempt)
		return ending{}, false
	case errors.As(cause, &sc):
		e.Log.Error("job events could not be stored", "job_id", r.id, "err", sc.Err)
		e.failUnstorable(ctx, r, sc.Err)
		return ending{}, false
	case errors.As(cause, &cc):
		drafts := job.Cancellation(cc.Reason)
		if out.Partial {
			drafts[0] = drafts[0].Own()
			drafts[0].Data["result"] = out.Completed.Result
		}
		// A cancelled run's partial results are what finished before it.
		return ending{apply: func(j *job.Job, now time.Time) error { return j.Cancel(cc.Reason, now) }, drafts: drafts,
			records: out.Partial}, true
	case errors.Is(cause, ports.ErrJobShutdown) && e.ReleaseAtShutdown:
		e.handBack(ctx, r)
		return ending{}, false
	case errors.Is(cause, ports.ErrJobShutdown):
		msg := ports.ErrJobShutdown.Error()
		return ending{apply: func(j *job.Job, now time.Time) error { return j.Fail(job.CodeShutdown, msg, now) },
			drafts: job.Failure(job.CodeShutdown, msg)}, true
	case out.Pause != nil:
		return e.pauseEnding(out), true
	case out.Failure != nil:
		f := out.Failure
		return ending{apply: func(j *job.Job, now time.Time) error { return j.Fail(f.Code, f.Msg, now) },
			drafts: job.Failure(f.Code, f.Msg)}, true
	}
	return ending{apply: func(j *job.Job, now time.Time) error { return j.Complete(out.Result, now) },
		drafts: []job.Draft{job.NewDraft(out.Completed)}, records: true}, true
}

// pauseEnding pauses the job until its Pause's timeout
// (ports.DefaultPauseTimeout when none), with the pause's event.
func (e *Engine) pauseEnding(out ports.Outcome) ending {
	timeout := out.Pause.Timeout
	if timeout <= 0 {
		timeout = ports.DefaultPauseTimeout
	}
	until := e.Clock.Now().Add(timeout)
	d := job.NewDraft(out.Pause.Event).Own()
	d.Data["status"], d.Data["is_paused"] = string(job.Paused), true // whatever the payload says
	return ending{apply: func(j *job.Job, now time.Time) error { return j.Pause(until, now) }, drafts: []job.Draft{d},
		paused: out.Failure == nil, until: until}
}

// seal takes the run's last events from its stream, numbered, with the
// end's drafts after them. A run that stores its row with its end (create)
// wrote nothing before: every event it published goes in the end, numbered
// from 1.
func (e *Engine) seal(ctx context.Context, r *run, create bool, drafts []job.Draft) []job.Event {
	if !create {
		return e.Stream.Seal(ctx, r.id, r.tracker.StampAll(drafts))
	}
	r.pubMu.Lock()
	held := r.held
	r.held, r.owned = nil, true
	r.pubMu.Unlock()
	return e.Stream.Seal(ctx, r.id, append(held, r.tracker.StampAll(drafts)...))
}

// dropped ends a run whose stream dropped the job just now (fenced off, or
// its events refused): the run's context learns why at once.
func (e *Engine) dropped(ctx context.Context, r *run) {
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	var sc *ports.JobStorageFailed
	if errors.As(context.Cause(ctx), &sc) {
		e.failUnstorable(context.WithoutCancel(ctx), r, sc.Err)
		return
	}
	e.Stream.Sealed(r.id, nil, ports.ErrJobLost)
	e.Log.Info("job left to its new holder", "job_id", r.id, "attempt", r.attempt)
}

// storeEnd writes the job's end (its state, its last events, its records
// when the end keeps them, and the run's usage) in one commit, retried
// while the store is unreachable. The awaiting caller of a run that
// creates its row with its end is told at once of an outage.
func (e *Engine) storeEnd(ctx context.Context, r *run, create bool, end ending, evs []job.Event, out ports.Outcome) error {
	je := ports.JobEnd{Job: new(r.job), From: r.job.State, Create: create, Events: evs, Usage: withTask(out.Usage, r.typ)}
	if end.records {
		je.Records = out.Records
	}
	if err := end.apply(je.Job, e.Clock.Now()); err != nil {
		return err
	}
	return e.retry(ctx, func() error {
		err := e.UoW.EndJob(ctx, je)
		if create && errors.Is(err, ports.ErrUnavailable) {
			r.stall(err)
		}
		return err
	})
}

// afterEnd follows up on a stored end (err says how storing it went).
func (e *Engine) afterEnd(ctx context.Context, r *run, end ending, evs []job.Event, err error) {
	switch {
	case err == nil && end.paused:
		// The job is not over: its followers read its log from now on,
		// where the continue's event and the next holder's will come.
		e.Stream.Delivered(r.id)
		e.Log.Info("job paused", "job_id", r.id, "until", end.until)
		// The sweep cancels the pause once it lapsed; a dispatch at the
		// deadline does it sooner (best effort: the sweep stays the rule).
		if qerr := e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: r.id, OrgID: r.org, At: end.until}); qerr != nil {
			e.Log.Warn("pause timeout not scheduled; the sweep will end it", "job_id", r.id, "err", qerr)
		}
	case err == nil:
		e.Log.Info("job ended", "job_id", r.id, "events", len(evs))
		e.ended(r.typ, evs)
	case errors.Is(err, ports.ErrFenced), errors.Is(err, job.ErrTransition):
		e.Log.Info("job ended by another holder", "job_id", r.id, "err", err)
	default:
		e.Log.Error("job end could not be stored", "job_id", r.id, "err", err)
		e.failUnstorable(ctx, r, err)
	}
}

// storedWithEnd settles the row of a run that stored its job with its end
// (endErr is how that went): when the end was refused, the job is stored
// as it started, so that it can be failed truthfully. False when the job
// could not be stored at all.
func (e *Engine) storedWithEnd(ctx context.Context, r *run, endErr error) bool {
	if endErr == nil {
		r.markStored()
		return true
	}
	err := e.retry(ctx, func() error { return e.Jobs.CreateJob(ctx, new(r.job)) })
	if err != nil {
		e.Log.Error("job could not be stored", "job_id", r.id, "err", err, "end_err", endErr)
		r.storeErr = err
	}
	r.markStored()
	return err == nil
}

// withTask names the job's type as the task of the usage entries that name
// none.
func withTask(entries []usage.Entry, t job.Type) []usage.Entry {
	for i := range entries {
		if entries[i].Task == "" {
			entries[i].Task = string(t)
		}
	}
	return entries
}

// failUnstorable fails a job whose events or record the store refused, with
// events numbered after the last durable one (what was refused was never
// delivered to anyone).
func (e *Engine) failUnstorable(ctx context.Context, r *run, cause error) {
	msg := "the job's results could not be stored"
	if errors.Is(cause, ports.ErrUnavailable) {
		msg = "the job's results could not be stored: the database stayed unreachable"
	}
	err := e.retry(ctx, func() error {
		return e.UoW.InTx(ctx, func(ctx context.Context, repos ports.Repos) error {
			if _, err := repos.Jobs.UpdateJob(ctx, r.id, func(j *job.Job) error {
				if j.Attempt != r.attempt {
					return ports.ErrFenced
				}
				j.Fence(e.Clock.Now())
				return j.Fail(job.CodeStorage, msg, e.Clock.Now())
			}); err != nil {
				return err
			}
			last, err := repos.Events.Last(ctx, r.id)
			if err != nil {
				return err
			}
			return repos.Events.Append(ctx, job.Number(r.id, last, e.Clock.Now(), r.tracker.StampAll(job.Failure(job.CodeStorage, msg))))
		})
	})
	if err != nil {
		e.Log.Error("job could not be failed; its lease will lapse and another worker will take it", "job_id", r.id, "err", err)
	} else if e.Observer != nil {
		e.Observer.JobEnded(r.typ, job.Failed, job.CodeStorage)
	}
	e.Stream.Written(r.id)
}

// handBack clears the lease of a job stopped by shutdown, so that the next
// worker resumes it at once.
func (e *Engine) handBack(ctx context.Context, r *run) {
	e.Stream.Seal(ctx, r.id, nil) // what is unwritten is dropped: the next worker redoes it
	e.Stream.Sealed(r.id, nil, ports.ErrJobShutdown)
	_, err := e.Jobs.UpdateJob(ctx, r.id, func(j *job.Job) error {
		if !j.Holds(r.attempt) {
			return ports.ErrFenced
		}
		j.LeaseUntil = e.Clock.Now()
		return nil
	})
	if err == nil {
		err = e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: r.id, OrgID: r.org})
	}
	if err != nil && !errors.Is(err, ports.ErrFenced) {
		e.Log.Warn("job not handed back; its lease will lapse", "job_id", r.id, "err", err)
	}
}

// end writes a job's last events and state as someone who does not run it
// (a canceller, or a dispatcher giving up): the fencing token moves on, so
// that a worker still running it can write nothing more.
func (e *Engine) end(ctx context.Context, id string, apply func(j *job.Job, now time.Time) error, drafts []job.Draft) error {
	var out *job.Job
	err := e.retry(ctx, func() error {
		return e.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
			j, err := r.Jobs.UpdateJob(ctx, id, func(j *job.Job) error {
				now := e.Clock.Now()
				if err := apply(j, now); err != nil {
					return err
				}
				j.Fence(now)
				return nil
			})
			if err != nil {
				return err
			}
			out = j
			last, err := r.Events.Last(ctx, id)
			if err != nil {
				return err
			}
			return r.Events.Append(ctx, job.Number(id, last, e.Clock.Now(), job.NewTracker(j.Type).StampAll(drafts)))
		})
	})
	if err == nil {
		e.Stream.Written(id)
		if e.Observer != nil {
			e.Observer.JobEnded(out.Type, out.State, out.ErrorCode)
		}
	}
	return err
}

// ended tells the observer how a run's job ended, from its terminal event.
func (e *Engine) ended(t job.Type, evs []job.Event) {
	if e.Observer == nil {
		return
	}
	for _, ev := range evs {
		if ev.Type.Terminal() {
			st, _ := ev.Field("status").(string)
			code, _ := ev.Field("error_code").(string)
			e.Observer.JobEnded(t, job.State(st), job.ErrorCode(code))
		}
	}
}

// retry calls fn until it succeeds, fails for good, or storage stayed
// unavailable for a minute.
func (e *Engine) retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	backoff := 20 * time.Millisecond
	for {
		err := fn()
		if err == nil || !errors.Is(err, ports.ErrUnavailable) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return err
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// renew moves the leases of the jobs running here, and stops those whose
// claim ended elsewhere (a cancel on another replica, or a takeover).
func (e *Engine) renew() {
	t := time.NewTicker(e.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-e.base.Done():
			return
		case <-t.C:
		}
		ids := e.held()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(e.base, e.LeaseTTL/3)
		lost, err := e.Jobs.RenewLeases(ctx, e.Owner, ids, e.Clock.Now().Add(e.LeaseTTL))
		cancel()
		if err != nil {
			e.Log.Warn("job leases not renewed", "jobs", len(ids), "err", err)
			continue
		}
		for _, id := range lost {
			e.Lost(id)
		}
	}
}

// held lists the jobs running here whose rows are stored: those whose
// leases are to renew.
func (e *Engine) held() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.running))
	for id, r := range e.running {
		if r.isStored() {
			out = append(out, id)
		}
	}
	return out
}

// Lost stops the run of a job that another replica ended or took over.
func (e *Engine) Lost(id string) {
	e.mu.Lock()
	r := e.running[id]
	e.mu.Unlock()
	if r != nil {
		r.cancel(ports.ErrJobLost)
	}
}

// Stop refuses new work, lets running jobs finish until ctx ends, then stops
// them (handing them back, or failing them with code shutdown).
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	e.mu.Unlock()
	qerr := e.Queue.Stop(ctx)
	done := make(chan struct{})
	go func() {
		for {
			if len(e.Running()) == 0 {
				close(done)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		e.mu.Lock()
		for _, r := range e.running {
			r.cancel(ports.ErrJobShutdown)
		}
		e.mu.Unlock()
	}
	e.stopAll()
	e.wg.Wait()
	if err == nil {
		err = qerr
	}
	return err
}
