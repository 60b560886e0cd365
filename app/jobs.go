package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// JobService cancels, continues and follows jobs.
type JobService struct {
	Jobs     ports.JobStore
	EventLog ports.EventLog
	Engine   *Engine
	Stream   ports.EventStream
	Clock    ports.Clock
	Log      *slog.Logger
	// Invalidations tells the replica that runs a job that it was cancelled
	// (nil: this process is the only one; the owner also finds out when it
	// renews its lease).
	Invalidations ports.Invalidations
}

// Get returns one of the organization's jobs.
func (s *JobService) Get(ctx context.Context, p *access.Principal, id string) (*job.Job, error) {
	if err := access.Authorize(p, access.ActFollowJob); err != nil {
		return nil, err
	}
	j, err := s.Jobs.GetJob(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "job %s not found", id)
	}
	return j, err
}

// Cancel cancels a pending, running or paused job: the job becomes
// cancelled, a cancelled event ends its stream, and its in-flight LLM calls
// see their context cancelled. A job running here ends itself; a job held
// elsewhere is fenced off by the cancel's own commit, and its replica is told
// to stop.
func (s *JobService) Cancel(ctx context.Context, p *access.Principal, id, reason string) (*job.Job, error) {
	if err := access.Authorize(p, access.ActCancelJob); err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	wait, cancel := context.WithTimeout(bg, 10*time.Second) // the run's last commit may be retried in an outage
	defer cancel()
	if s.Engine.cancelUnstored(wait, p.OrgID, id, reason) {
		return s.cancelled(bg, p, id, reason)
	}
	j, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	here := s.Engine.CancelHere(wait, id, reason)
	if here {
		// A run that had just paused its job ended before it saw the
		// cancel: the paused job is ended like one held nowhere.
		if j, err := s.Jobs.GetJob(bg, p.OrgID, id); err == nil && j.State == job.Paused {
			here = false
		}
	}
	if !here && s.askHolder(wait, j, reason) {
		return s.cancelled(bg, p, id, reason)
	}
	if !here {
		err := s.Engine.end(bg, id, func(j *job.Job, now time.Time) error { return j.Cancel(reason, now) }, job.Cancellation(reason))
		if errors.Is(err, job.ErrTransition) {
			return nil, coded(ports.ErrConflict, "job_not_cancellable", "%v", err)
		}
		if err != nil {
			return nil, err
		}
		if s.Invalidations != nil {
			if err := s.Invalidations.Publish(bg, "job", id); err != nil {
				s.Log.Warn("tell the job's replica to stop", "job_id", id, "err", err)
			}
		}
		// A pending job's queued dispatch has nothing left to do.
		if err := s.Engine.Queue.Cancel(bg, id); err != nil {
			s.Log.Warn("drop the job's queued dispatch", "job_id", id, "err", err)
		}
	}
	return s.cancelled(bg, p, id, reason)
}

// HolderCancelWait is how long a cancel waits for the replica holding a
// running job to end it itself before ending it over that replica's head.
const HolderCancelWait = 2 * time.Second

// askHolder asks the replica that holds running job j (a live lease) to
// cancel it itself, so that the run ends it with what it finished (a batch
// keeps its completed entities' records), and waits up to HolderCancelWait
// for the job to end. False when there is nobody to ask, or the holder did
// not end it in time: the caller then fences the job and ends it.
func (s *JobService) askHolder(ctx context.Context, j *job.Job, reason string) bool {
	if s.Invalidations == nil || j.State != job.Running || j.Owner == "" || !j.LeaseUntil.After(s.Clock.Now()) {
		return false
	}
	if err := s.Invalidations.Publish(ctx, "cancel", j.ID+"\n"+reason); err != nil {
		s.Log.Warn("ask the job's replica to cancel it", "job_id", j.ID, "err", err)
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
		if cur, err := s.Jobs.GetJob(ctx, j.OrgID, j.ID); err == nil && cur.State.Terminal() {
			return true
		}
	}
	s.Log.Info("the job's replica did not cancel it in time; cancelling it here", "job_id", j.ID, "owner", j.Owner)
	return false
}

// cancelled answers a cancel with the job as it ended.
func (s *JobService) cancelled(ctx context.Context, p *access.Principal, id, reason string) (*job.Job, error) {
	j, err := s.Jobs.GetJob(ctx, p.OrgID, id)
	if err != nil {
		return nil, err
	}
	switch {
	case !j.State.Terminal():
		// The run was told but could not store its end yet (an outage).
		return nil, coded(ports.ErrUnavailable, "unavailable", "job %s is being cancelled; its end is not stored yet, try again", id)
	case j.State != job.Cancelled:
		_, terr := job.Next(j.State, job.ActionCancel)
		return nil, coded(ports.ErrConflict, "job_not_cancellable", "%v", terr)
	}
	s.Log.Info("job cancelled", "job_id", id, "org_id", p.OrgID, "reason", reason)
	return j, nil
}

// Continue resumes a paused job with the client's answers (nil: none): in
// one commit the job is running again, its job_continued event carries the
// answers, and it is queued for a worker on any replica, whose Runner
// resumes it on the same stream. A job that is not paused (or whose pause
// timed out) is 409 job_not_paused.
func (s *JobService) Continue(ctx context.Context, p *access.Principal, id string, answers job.Answers) (*job.Job, error) {
	if err := access.Authorize(p, access.ActContinueJob); err != nil {
		return nil, err
	}
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, err
	}
	if err := answers.Check(); err != nil {
		return nil, Invalid("answers", "%v", err)
	}
	for qid, a := range answers {
		for _, c := range []struct {
			field string
			v     any
		}{{"answers", qid}, {"answers." + qid + ".text", a.Text}, {"answers." + qid + ".option_ids", a.OptionIDs}} {
			if err := checkText(c.field, c.v); err != nil {
				return nil, err
			}
		}
	}
	j, err := s.Engine.Continue(ctx, id, answers)
	if errors.Is(err, job.ErrTransition) {
		return nil, coded(ports.ErrConflict, "job_not_paused", "%v", err)
	}
	return j, err
}

// Events returns the job's events after seq, waiting until there is at least
// one or ctx ends. The caller checked the job's organization with Get.
func (s *JobService) Events(ctx context.Context, id string, after int64) ([]job.Event, error) {
	return s.Stream.Wait(ctx, id, after)
}

// Ended reports whether a follower that saw events up to after has seen the
// job's end: the job is finished and no event follows after.
func (s *JobService) Ended(ctx context.Context, j *job.Job, after int64) (bool, error) {
	if !j.State.Terminal() || after <= 0 {
		return false, nil
	}
	last, err := s.EventLog.Last(ctx, j.ID)
	return err == nil && last <= after, err
}
