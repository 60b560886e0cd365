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
	// SweepEvery is how often each replica looks for jobs whose
	// holder died (default 5 s).
	SweepEvery time.Duration
	// RunIdle is how long a run's goroutine waits for the next run before
	// it exits (default 10 s).
	RunIdle time.Duration
	// UnclaimedAfter is how long a continued job may stay running with no
	// holder before the sweep queues it again (default LeaseTTL): a
	// continue's dispatch claims it within milliseconds when a worker is
	// free, so one that waited a lease lost its dispatch.
	UnclaimedAfter time.Duration
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
	// heldUsage are ledger entries charged before the stream was owned:
	// they go to it with the held events, or with the job's end.
	heldUsage []usage.Entry
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
	e.UnclaimedAfter = cmp.Or(e.UnclaimedAfter, e.LeaseTTL)
	e.mu.Lock()
	e.running, e.perOrg, e.freed, e.idle = map[string]*run{}, map[string]int{}, make(chan struct{}), make(chan func())
	e.base, e.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.renew()
	}()
	return e.Queue.Start(e.base, ports.Handlers{Dispatch: e.Dispatch, Sweep: e.Sweep, SweepEvery: e.SweepEvery, Slots: e.Workers})
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

// launch runs a claimed job in the background. A job whose row is stored
// owns its event stream at once, before anyone can follow it from here;
// otherwise the caller tells the run when it is (Engine.stored), or, for a
// deferred row, the DeferCreate timer or the run's end stores it.
func (e *Engine) launch(j *job.Job, prior []job.Event, prepared any, row rowStart) *run {
	ctx, cancel := context.WithCancelCause(e.base)
	r := &run{id: j.ID, org: j.OrgID, attempt: j.Attempt, job: *j, cancel: cancel, done: make(chan struct{}),
		stored: make(chan struct{}), stalled: make(chan struct{}), tracker: job.NewTracker(j.Type), typ: j.Type, deferred: row == rowDeferred}
	for _, ev := range prior {
		r.tracker.Observe(ev)
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
			if e.running[j.ID] == r { // never a later run of the job's
				delete(e.running, j.ID)
			}
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
		Publish: func(p job.Payload) { e.publish(r, r.tracker.Stamp(job.NewDraft(p))) },
		Charge:  func(u usage.Entry) { e.charge(r, u) }}
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
		runs := e.held()
		if len(runs) == 0 {
			continue
		}
		ids := make([]string, 0, len(runs))
		for id := range runs {
			ids = append(ids, id)
		}
		ctx, cancel := context.WithTimeout(e.base, e.LeaseTTL/3)
		lost, err := e.Jobs.RenewLeases(ctx, e.Owner, ids, e.Clock.Now().Add(e.LeaseTTL))
		cancel()
		if err != nil {
			e.Log.Warn("job leases not renewed", "jobs", len(ids), "err", err)
			continue
		}
		// Only the runs listed are stopped: a run that ended meanwhile
		// (its job paused, then continued) may have been followed here by
		// the job's next run, which holds the job.
		for _, id := range lost {
			runs[id].cancel(ports.ErrJobLost)
		}
	}
}

// held lists the runs here whose rows are stored, by job id: those whose
// leases are to renew.
func (e *Engine) held() map[string]*run {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]*run, len(e.running))
	for id, r := range e.running {
		if r.isStored() {
			out[id] = r
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
