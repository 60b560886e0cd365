package app

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// JobService cancels, resumes and follows jobs, and keeps jobs from staying
// "running" after the process that ran them died.
type JobService struct {
	Jobs   ports.JobStore
	Runner ports.JobRunner
	Hub    *Hub
	Clock  ports.Clock
	Log    *slog.Logger

	// HeartbeatEvery is how often running jobs' heartbeats are refreshed.
	HeartbeatEvery time.Duration
	// StaleAfter is how old a heartbeat must be before the job is failed as
	// interrupted.
	StaleAfter time.Duration
	// Invalidations carries a cancellation to the instance that runs the job
	// (nil: this process is the only one).
	Invalidations ports.Invalidations
}

// Get returns one of the organization's jobs.
func (s *JobService) Get(ctx context.Context, p *access.Principal, id string) (*job.Job, error) {
	j, err := s.Jobs.GetJob(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "job %s not found", id)
	}
	return j, err
}

// Cancel cancels a pending, running or paused job: the job becomes
// cancelled, a cancelled event ends its stream, and its in-flight LLM calls
// see their context cancelled.
func (s *JobService) Cancel(ctx context.Context, p *access.Principal, id, reason string) (*job.Job, error) {
	before, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	j, err := s.Jobs.UpdateJob(ctx, id, func(j *job.Job) error {
		return j.Cancel(reason, s.Clock.Now())
	})
	if errors.Is(err, job.ErrTransition) {
		return nil, coded(ports.ErrConflict, "job_not_cancellable", "%v", err)
	}
	if err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	cancelled := map[string]any{"status": string(job.Cancelled), "reason": reason}
	switch {
	case s.Runner.Cancel(id):
		s.terminal(bg, id, []job.EventType{job.EventCancelled}, []map[string]any{cancelled})
	case s.Invalidations != nil && s.Clock.Now().Sub(before.HeartbeatAt) < s.StaleAfter:
		// Another instance runs the job: it stops the calls and writes the
		// cancelled event in its own numbering. Should it not within 2 s
		// (it died), write the event here.
		if err := s.Invalidations.Publish(bg, "job", id+":"+reason); err != nil {
			s.Log.Error("publish job cancellation", "job_id", id, "err", err)
		}
		if !s.awaitTerminal(bg, id, 2*time.Second) {
			s.terminal(bg, id, []job.EventType{job.EventCancelled}, []map[string]any{cancelled})
		}
	default:
		s.terminal(bg, id, []job.EventType{job.EventCancelled}, []map[string]any{cancelled})
	}
	s.Log.Info("job cancelled", "job_id", id, "org_id", p.OrgID, "reason", reason)
	return j, nil
}

// CancelLocal stops a job that another instance cancelled, if it runs here:
// its calls see their context cancelled and the cancelled event is written
// in this instance's numbering. payload is "<job id>:<reason>".
func (s *JobService) CancelLocal(ctx context.Context, payload string) {
	id, reason, _ := strings.Cut(payload, ":")
	if !s.Runner.Cancel(id) {
		return
	}
	s.Hub.Publish(ctx, id, job.EventCancelled, map[string]any{"status": string(job.Cancelled), "reason": reason})
	s.Log.Info("job cancelled through another instance", "job_id", id, "reason", reason)
}

// awaitTerminal reports whether the job's log shows a terminal event within d.
func (s *JobService) awaitTerminal(ctx context.Context, id string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var after int64
	for {
		evs, err := s.Hub.Wait(ctx, id, after)
		if err != nil {
			return false
		}
		for _, ev := range evs {
			after = ev.Seq
			if ev.Type.Terminal() {
				return true
			}
		}
	}
}

// Continue resumes a paused job.
func (s *JobService) Continue(ctx context.Context, p *access.Principal, id string) (*job.Job, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, err
	}
	j, err := s.Jobs.UpdateJob(ctx, id, func(j *job.Job) error {
		return j.Apply(job.ActionContinue, s.Clock.Now())
	})
	if errors.Is(err, job.ErrTransition) {
		return nil, coded(ports.ErrConflict, "job_not_paused", "%v", err)
	}
	return j, err
}

// Events returns the job's events after seq, waiting until there is at least
// one or ctx ends. The caller checked the job's organization with Get.
func (s *JobService) Events(ctx context.Context, id string, after int64) ([]job.Event, error) {
	return s.Hub.Wait(ctx, id, after)
}

// terminal publishes a job's last events here if it runs here, else appends
// them to the durable log directly.
func (s *JobService) terminal(ctx context.Context, id string, types []job.EventType, data []map[string]any) {
	for i, t := range types {
		if _, ok := s.Hub.Publish(ctx, id, t, data[i]); !ok {
			if err := s.Hub.AppendDurable(ctx, id, types[i:], data[i:]); err != nil {
				s.Log.Error("append terminal event", "job_id", id, "err", err)
			}
			return
		}
	}
}

// Maintain refreshes the heartbeats of the jobs running here and fails the
// jobs whose heartbeat went stale (their process died), until ctx ends.
func (s *JobService) Maintain(ctx context.Context) {
	t := time.NewTicker(s.HeartbeatEvery)
	defer t.Stop()
	for {
		s.Reap(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ids := s.Runner.Running(); len(ids) > 0 {
				if err := s.Jobs.Heartbeat(ctx, ids, s.Clock.Now()); err != nil && ctx.Err() == nil {
					s.Log.Error("job heartbeat", "err", err)
				}
			}
		}
	}
}

// Reap fails every job whose heartbeat is older than StaleAfter and that does
// not run here, with error code interrupted.
func (s *JobService) Reap(ctx context.Context) int {
	stale, err := s.Jobs.ListStale(ctx, s.Clock.Now().Add(-s.StaleAfter))
	if err != nil {
		if ctx.Err() == nil {
			s.Log.Error("list stale jobs", "err", err)
		}
		return 0
	}
	local := s.Runner.Running()
	n := 0
	for _, j := range stale {
		if slices.Contains(local, j.ID) {
			continue
		}
		msg := "the job was interrupted (its server stopped) and was not resumed"
		_, err := s.Jobs.UpdateJob(ctx, j.ID, func(j *job.Job) error {
			return j.Fail(job.CodeInterrupted, msg, s.Clock.Now())
		})
		if err != nil {
			continue // finished or reaped meanwhile
		}
		n++
		s.terminal(ctx, j.ID, []job.EventType{job.EventError, job.EventFailed}, []map[string]any{
			{"error_message": msg, "error_code": string(job.CodeInterrupted)},
			{"status": string(job.Failed), "error_code": string(job.CodeInterrupted), "error_message": msg},
		})
		s.Log.Warn("interrupted job failed", "job_id", j.ID, "org_id", j.OrgID)
	}
	return n
}
