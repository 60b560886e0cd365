package jobrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Submit creates job id of type t for the organization, pending, with its
// stored request (the source of truth a worker taking the job over reads),
// and runs it like Create (prepared is the Runner's plan for a run here).
// No capacity anywhere is ports.ErrCapacity.
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
	e.Stream.Charge(r.id, r.heldUsage)
	r.held, r.heldUsage, r.owned = nil, nil, true
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

// charge gives the job's stream the ledger entry of an answered call of the
// run, or keeps it until the run owns the stream (or ends).
func (e *Engine) charge(r *run, u usage.Entry) {
	u.OrgID, u.JobID = cmp.Or(u.OrgID, r.org), cmp.Or(u.JobID, r.id)
	u.Task = cmp.Or(u.Task, string(r.typ))
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if !r.owned {
		r.heldUsage = append(r.heldUsage, u)
		return
	}
	e.Stream.Charge(r.id, []usage.Entry{u})
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
