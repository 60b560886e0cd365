package jobrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// Sweep queues every job whose holder's lease lapsed, so that some replica
// takes it over, and every continued job that no worker claimed within
// UnclaimedAfter; it ends pauses past their deadline.
func (e *Engine) Sweep(ctx context.Context) error {
	lapsed, err := e.Jobs.ListLapsed(ctx, e.Clock.Now(), 500)
	if err != nil {
		e.Log.Warn("sweep for interrupted jobs", "err", err)
		return err
	}
	for _, j := range lapsed {
		if err := e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: j.ID, OrgID: j.OrgID, Resume: true}); err != nil {
			return err
		}
	}
	if len(lapsed) > 0 {
		e.Log.Info("interrupted jobs queued for takeover", "jobs", len(lapsed))
	}
	// A dispatch waits for a worker here for at most half a lease: a run
	// taken longer ago whose job never started lost its dispatcher.
	stranded, err := e.Queue.Stranded(ctx, e.Clock.Now().Add(-e.LeaseTTL), 500)
	if err != nil {
		e.Log.Warn("sweep for stranded jobs", "err", err)
		return err
	}
	for _, q := range stranded {
		if err := e.Queue.Enqueue(ctx, ports.QueuedJob{JobID: q.JobID, OrgID: q.OrgID, Resume: true}); err != nil {
			return err
		}
	}
	if len(stranded) > 0 {
		e.Log.Info("jobs whose dispatcher died queued again", "jobs", len(stranded))
	}
	if err := e.sweepUnclaimed(ctx); err != nil {
		return err
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

// sweepUnclaimed queues again the continued jobs that nobody claimed within
// UnclaimedAfter: their dispatch was lost. Each is marked requeued in the
// commit of its queue entry, so that of the replicas' sweeps one queues it,
// once per UnclaimedAfter; a second entry is harmless (its dispatch finds
// the job held and does nothing).
func (e *Engine) sweepUnclaimed(ctx context.Context) error {
	cutoff := e.Clock.Now().Add(-e.UnclaimedAfter)
	unclaimed, err := e.Jobs.ListUnclaimed(ctx, cutoff, 500)
	if err != nil {
		e.Log.Warn("sweep for unclaimed jobs", "err", err)
		return err
	}
	queued := 0
	for _, j := range unclaimed {
		err := e.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
			if _, err := r.Jobs.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Requeue(cutoff, e.Clock.Now()) }); err != nil {
				return err
			}
			return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: j.ID, OrgID: j.OrgID, Resume: true})
		})
		switch {
		case err == nil:
			queued++
		case errors.Is(err, job.ErrTransition), errors.Is(err, ports.ErrNotFound):
			// claimed, ended or queued by another sweep meanwhile
		default:
			return err
		}
	}
	if queued > 0 {
		e.Log.Warn("continued jobs nobody claimed queued again", "jobs", queued)
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
			return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: j.OrgID, Resume: true})
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

// Dispatch is the queue's handler: it takes a pending job or one whose
// holder died. A job that a live holder has is left to it.
func (e *Engine) Dispatch(ctx context.Context, q ports.QueuedJob) (ports.Dispatch, error) {
	e.mu.Lock()
	prev := e.running[q.JobID]
	e.mu.Unlock()
	if prev != nil {
		if d, settled := e.afterRunHere(ctx, q, prev); settled {
			return d, nil
		}
	}
	if !e.reserveForDispatch(ctx, q.OrgID) {
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
	next := e.launch(j, evs, nil, rowStored)
	return ports.Dispatch{Done: next.done}, nil
}

// afterRunHere settles the dispatch of a job that run r still runs here:
// r holds it, or r was fenced off and the job is left to the sweep, as
// always. But a run stays listed here for a moment after its end is stored:
// a run that paused its job is still following its pause up when a
// continue, answered within milliseconds, has already queued the job again,
// and that dispatch must not be dropped, or the job stays running with
// nobody holding it. The stored job tells that case apart: r's own attempt,
// and no owner (r's pause released the job; a fence would have moved the
// attempt on). Then the dispatch waits for r to finish (up to half a lease,
// else it snoozes) and goes on (not settled).
func (e *Engine) afterRunHere(ctx context.Context, q ports.QueuedJob, r *run) (ports.Dispatch, bool) {
	cur, err := e.Jobs.GetJob(ctx, q.OrgID, q.JobID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return ports.Dispatch{}, true
	case err != nil:
		return ports.Dispatch{Snooze: time.Second}, true // offered again: the job may need a holder
	case cur.State.Terminal() || cur.Attempt != r.attempt || cur.Owner != "":
		return ports.Dispatch{}, true // r holds it, or it ended, or it is another holder's
	}
	t := time.NewTimer(e.LeaseTTL / 2)
	defer t.Stop()
	select {
	case <-r.done:
		return ports.Dispatch{}, false
	case <-t.C:
	case <-ctx.Done():
	}
	return ports.Dispatch{Snooze: time.Second}, true
}

// reserveForDispatch takes a worker slot for a queued job of org. The queue
// hands this replica no more jobs than it has slots, but jobs created here
// take slots too: then the dispatch waits for one to free, up to half a
// lease (the sweep takes a dispatch older than a lease for a dead one's).
// Past the organization's own limit it does not wait: the slot it would
// hold might serve another organization's job.
func (e *Engine) reserveForDispatch(ctx context.Context, org string) bool {
	var deadline <-chan time.Time
	for {
		e.mu.Lock()
		ok, freed := e.reserveLocked(org)
		full := e.total >= e.Workers && !e.closing
		e.mu.Unlock()
		if ok || !full {
			return ok
		}
		if deadline == nil {
			t := time.NewTimer(e.LeaseTTL / 2)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-freed:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
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
