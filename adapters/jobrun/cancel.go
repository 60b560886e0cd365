package jobrun

import (
	"context"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// Cancel cancels the organization's pending, running or paused job: the job
// becomes cancelled, a cancelled event ends its stream, and its in-flight
// LLM calls see their context cancelled. A job running here ends itself; a
// job held elsewhere is asked to end itself, or fenced off by the cancel's
// own commit, and its replica is told to stop. ErrNotFound when the
// organization has no such job; job.ErrTransition when it cannot be
// cancelled.
func (e *Engine) Cancel(ctx context.Context, orgID, id, reason string) error {
	bg := context.WithoutCancel(ctx)
	wait, cancel := context.WithTimeout(bg, 10*time.Second) // the run's last commit may be retried in an outage
	defer cancel()
	if e.cancelUnstored(wait, orgID, id, reason) {
		return nil
	}
	j, err := e.Jobs.GetJob(ctx, orgID, id)
	if err != nil {
		return err
	}
	here := e.cancelHere(wait, id, reason)
	if here {
		// A run that had just paused its job ended before it saw the
		// cancel: the paused job is ended like one held nowhere.
		if j, err := e.Jobs.GetJob(bg, orgID, id); err == nil && j.State == job.Paused {
			here = false
		}
	}
	if here || e.askHolder(wait, j, reason) {
		return nil
	}
	err = e.end(bg, id, func(j *job.Job, now time.Time) error { return j.Cancel(reason, now) }, job.Cancellation(reason))
	if err != nil {
		return err
	}
	if e.Invalidations != nil {
		if err := e.Invalidations.Publish(bg, "job", id); err != nil {
			e.Log.Warn("tell the job's replica to stop", "job_id", id, "err", err)
		}
	}
	// A pending job's queued dispatch has nothing left to do.
	if err := e.Queue.Cancel(bg, id); err != nil {
		e.Log.Warn("drop the job's queued dispatch", "job_id", id, "err", err)
	}
	return nil
}

// HolderCancelWait is how long a cancel waits for the replica holding a
// running job to end it itself before ending it over that replica's head.
const HolderCancelWait = 2 * time.Second

// askHolder asks the replica that holds running job j (a live lease) to
// cancel it itself, so that the run ends it with what it finished (a batch
// keeps its completed entities' records), and waits up to HolderCancelWait
// for the job to end. False when there is nobody to ask, or the holder did
// not end it in time: the caller then fences the job and ends it.
func (e *Engine) askHolder(ctx context.Context, j *job.Job, reason string) bool {
	if e.Invalidations == nil || j.State != job.Running || j.Owner == "" || !j.LeaseUntil.After(e.Clock.Now()) {
		return false
	}
	if err := e.Invalidations.Publish(ctx, "cancel", j.ID+"\n"+reason); err != nil {
		e.Log.Warn("ask the job's replica to cancel it", "job_id", j.ID, "err", err)
		return false
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for deadline := time.Now().Add(HolderCancelWait); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if cur, err := e.Jobs.GetJob(ctx, j.OrgID, j.ID); err == nil && cur.State.Terminal() {
			return true
		}
	}
	e.Log.Info("the job's replica did not cancel it in time; cancelling it here", "job_id", j.ID, "owner", j.Owner)
	return false
}

// cancelUnstored cancels a deferred run of org's whose row is not stored
// yet and waits for its end (which stores the job, cancelled); false when
// there is no such run here, or its row is stored (after waiting for a
// store in flight): cancel it as any other.
func (e *Engine) cancelUnstored(ctx context.Context, org, id, reason string) bool {
	e.mu.Lock()
	r := e.running[id]
	e.mu.Unlock()
	if r == nil || !r.deferred || r.org != org {
		return false
	}
	if r.row.Load() == rowCreating {
		select {
		case <-r.stored:
		case <-ctx.Done():
		}
		return false
	}
	r.cancel(&ports.JobCancelled{Reason: reason})
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	return true
}

// CancelRequested cancels a job running here at another replica's request
// (Cancel asks the holder first); the run ends it as cancelled. The request
// is id, a newline and the reason.
func (e *Engine) CancelRequested(request string) {
	id, reason, _ := strings.Cut(request, "\n")
	e.mu.Lock()
	r := e.running[id]
	e.mu.Unlock()
	if r != nil {
		r.cancel(&ports.JobCancelled{Reason: reason})
	}
}

// cancelHere cancels a job running here and waits until its end is stored;
// false when the job does not run here.
func (e *Engine) cancelHere(ctx context.Context, id, reason string) bool {
	e.mu.Lock()
	r := e.running[id]
	e.mu.Unlock()
	if r == nil {
		return false
	}
	r.cancel(&ports.JobCancelled{Reason: reason})
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	return true
}

var _ ports.JobRunner = (*Engine)(nil)
