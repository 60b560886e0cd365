package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// SampleService generates samples as a job (POST
// /api/schema/sample/generate/stream and /sync): it submits the jobs its
// SampleGenerator runs.
type SampleService struct {
	*SampleGenerator
	JobRunner ports.JobRunner
	Stream    ports.EventStream
	JobSvc    *JobService
}

// NewSampleService submits the jobs gen runs to jr.
func NewSampleService(gen *SampleGenerator, jr ports.JobRunner, stream ports.EventStream, jobs *JobService) *SampleService {
	return &SampleService{SampleGenerator: gen, JobRunner: jr, Stream: stream, JobSvc: jobs}
}

// Start validates the request and creates the sample generation job.
func (s *SampleService) Start(ctx context.Context, p *access.Principal, req SampleRequest) (*job.Job, error) {
	if err := access.Authorize(p, access.ActGenerateSamples); err != nil {
		return nil, err
	}
	pl, err := s.prepare(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	if _, err := s.Calls.pickKeys(ctx, p.OrgID, []model.Info{pl.model}); err != nil {
		return nil, err
	}
	req.Language = &pl.language // resolved: a worker that takes the job over has no header
	body, err := s.Requests.EncodeSample(req)
	if err != nil {
		return nil, err
	}
	j, err := s.JobRunner.Submit(ctx, s.IDs.NewID(), p.OrgID, job.TypeSampleGeneration, body, pl)
	if err != nil {
		return nil, err
	}
	s.Log.Info("sample generation queued", "job_id", j.ID, "org_id", p.OrgID, "samples", pl.count, "model", pl.model.Key.String())
	return j, nil
}

// SampleResult is what the blocking variant returns: the samples job's
// model_completed payload, with the job's id.
type SampleResult struct {
	JobID        string
	Success      bool
	Model        string
	Samples      []map[string]any
	Requested    int
	Note         string
	InputTokens  int
	OutputTokens int
	Cost         int64
	CostUSD      float64
	ProcessingMS int64
}

// Sync generates samples and waits for them; it always auto-answers, so the
// job never pauses. When ctx ends first the job is cancelled (ErrSyncTimeout
// for a deadline); a failed or cancelled job is a *JobEnded.
func (s *SampleService) Sync(ctx context.Context, p *access.Principal, req SampleRequest) (*SampleResult, error) {
	yes := true
	req.AutoAnswer = &yes
	j, err := s.Start(ctx, p, req)
	if err != nil {
		return nil, err
	}
	var res *SampleResult
	ev, final, err := awaitEnd(ctx, s.Stream, s.JobSvc, s.Log, p, j, func(ev job.Event) error {
		if ev.Type != job.EventModelCompleted {
			return nil
		}
		c, err := job.ReadSamplesCompleted(ev)
		if err != nil {
			return err
		}
		// The samples' model_completed is always a success.
		res = &SampleResult{JobID: j.ID, Success: true, Model: c.Model, Samples: c.Samples, Requested: c.Requested,
			Note: c.Note, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, Cost: c.Cost,
			CostUSD: model.USD(c.Cost), ProcessingMS: c.ProcessingMS}
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case ev.Type == job.EventCompleted && res != nil:
		return res, nil
	case ev.Type == job.EventCompleted:
		final.State, final.ErrorCode, final.Error = job.Failed, job.CodeInternal, "the job completed without samples"
	}
	return nil, &JobEnded{Job: final}
}
