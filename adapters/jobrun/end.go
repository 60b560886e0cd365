package jobrun

import (
	"context"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// finish ends the run: the job's last events, records and state in one
// commit, under the run's fence.
func (e *Engine) finish(ctx context.Context, r *run, out ports.Outcome) {
	bg := context.WithoutCancel(ctx)
	cause := context.Cause(ctx)
	// unbilled are the run's ledger entries that only the end can write:
	// those held before the stream was owned, those the Runner returned,
	// and (after Seal) those the stream had not written yet. When the end
	// does not store them, the stream writes them on their own: every
	// answered call is billed, whoever ends the job.
	r.pubMu.Lock()
	unbilled := append(r.heldUsage, withTask(out.Usage, r.typ)...)
	r.heldUsage = nil
	r.pubMu.Unlock()
	defer func() { e.Stream.Charge(r.id, unbilled) }()
	create, ok := e.settleRow(bg, r, cause)
	if !ok {
		return // nothing of the job exists
	}
	end, ok := e.endingOf(bg, r, cause, out)
	if !ok {
		return
	}
	evs, spent := e.seal(bg, r, create, end.drafts)
	unbilled = append(unbilled, spent...)
	if len(evs) == 0 {
		e.dropped(ctx, r)
		return
	}
	err := e.storeEnd(bg, r, create, end, evs, out, unbilled)
	if err == nil {
		unbilled = nil // stored with the end
	}
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
			drafts = job.PartialCancellation(cc.Reason, out.Completed.Result)
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
	return ending{apply: func(j *job.Job, now time.Time) error { return j.Pause(until, now) },
		drafts: []job.Draft{job.NewDraft(out.Pause.Event)},
		paused: out.Failure == nil, until: until}
}

// seal takes the run's last events from its stream, numbered, with the
// end's drafts after them, and the ledger entries the stream had not
// written. A run that stores its row with its end (create) wrote nothing
// before: every event it published goes in the end, numbered from 1.
func (e *Engine) seal(ctx context.Context, r *run, create bool, drafts []job.Draft) ([]job.Event, []usage.Entry) {
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

// storeEnd writes the job's end (its state, its last events, records and
// their schema events when the end keeps them, and the ledger entries
// spent) in one commit, retried
// while the store is unreachable. The awaiting caller of a run that
// creates its row with its end is told at once of an outage.
func (e *Engine) storeEnd(ctx context.Context, r *run, create bool, end ending, evs []job.Event, out ports.Outcome,
	spent []usage.Entry) error {
	je := ports.JobEnd{Job: new(r.job), From: r.job.State, Create: create, Events: evs, Usage: spent}
	if end.records {
		// The entity-layer writes and the schema events go with their
		// records, or not at all.
		je.Records, je.Sync, je.SchemaEvents = out.Records, out.Sync, out.SchemaEvents
		je.Concepts = ports.ConceptWritesOf(out.Records)
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
		if qerr := e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: r.id, OrgID: r.org, At: end.until, Resume: true}); qerr != nil {
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
	_, spent := e.Stream.Seal(ctx, r.id, nil) // unwritten events are dropped: the next worker redoes them
	e.Stream.Sealed(r.id, nil, ports.ErrJobShutdown)
	e.Stream.Charge(r.id, spent) // but the calls were paid for
	_, err := e.Jobs.UpdateJob(ctx, r.id, func(j *job.Job) error {
		if !j.Holds(r.attempt) {
			return ports.ErrFenced
		}
		j.LeaseUntil = e.Clock.Now()
		return nil
	})
	if err == nil {
		err = e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: r.id, OrgID: r.org, Resume: true})
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
			end, _ := job.EndedOf(ev)
			e.Observer.JobEnded(t, end.State, end.Code)
		}
	}
}
