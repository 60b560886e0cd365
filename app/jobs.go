package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// JobService cancels, continues and follows jobs.
type JobService struct {
	Jobs      ports.JobStore
	EventLog  ports.EventLog
	JobRunner ports.JobRunner
	Stream    ports.EventStream
	Log       *slog.Logger
}

// NewJobService follows, cancels and continues the jobs of jobs and
// events, run by jr.
func NewJobService(jobs ports.JobStore, events ports.EventLog, jr ports.JobRunner, stream ports.EventStream,
	log *slog.Logger) *JobService {
	return &JobService{Jobs: jobs, EventLog: events, JobRunner: jr, Stream: stream, Log: log}
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
// see their context cancelled (the job runtime ends it, wherever it runs).
func (s *JobService) Cancel(ctx context.Context, p *access.Principal, id, reason string) (*job.Job, error) {
	if err := access.Authorize(p, access.ActCancelJob); err != nil {
		return nil, err
	}
	err := s.JobRunner.Cancel(ctx, p.OrgID, id, reason)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return nil, coded(ports.ErrNotFound, "not_found", "job %s not found", id)
	case errors.Is(err, job.ErrTransition):
		return nil, coded(ports.ErrConflict, "job_not_cancellable", "%v", err)
	case err != nil:
		return nil, err
	}
	return s.cancelled(context.WithoutCancel(ctx), p, id, reason)
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
	j, err := s.JobRunner.Continue(ctx, id, answers)
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
