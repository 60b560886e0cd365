package app

import (
	"context"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// SchemaGenService generates schemas from sample objects and applies
// natural-language edits to saved schemas, both as jobs on the job runtime,
// streamed or awaited; its SchemaGenerator runs them.
type SchemaGenService struct {
	*SchemaGenerator
	JobRunner ports.JobRunner
	Stream    ports.EventStream
	JobSvc    *JobService
}

// NewSchemaGenService submits the jobs gen runs to jr.
func NewSchemaGenService(gen *SchemaGenerator, jr ports.JobRunner, stream ports.EventStream, jobs *JobService) *SchemaGenService {
	return &SchemaGenService{SchemaGenerator: gen, JobRunner: jr, Stream: stream, JobSvc: jobs}
}

// StartGeneration validates a generation request (the sample checks
// included, before any spend) and creates its job.
func (s *SchemaGenService) StartGeneration(ctx context.Context, p *access.Principal, req GenerateRequest) (*job.Job, error) {
	if err := access.Authorize(p, access.ActGenerateSchema); err != nil {
		return nil, err
	}
	sp, err := s.prepareGeneration(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, err := s.Requests.EncodeGenerate(req)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, p, job.TypeSchemaGeneration, body, sp)
}

// StartEdit validates an AI edit of a saved schema and creates its job.
func (s *SchemaGenService) StartEdit(ctx context.Context, p *access.Principal, req EditRequest) (*job.Job, error) {
	if err := access.Authorize(p, access.ActEditSchemaAI); err != nil {
		return nil, err
	}
	sp, err := s.prepareEdit(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, err := s.Requests.EncodeEdit(req)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, p, job.TypeSchemaEdit, body, sp)
}

func (s *SchemaGenService) create(ctx context.Context, p *access.Principal, t job.Type, request []byte, sp *schemaPlan) (*job.Job, error) {
	j, err := s.JobRunner.Submit(ctx, s.IDs.NewID(), p.OrgID, t, request, sp)
	if err != nil {
		return nil, err
	}
	s.Log.Info("schema job queued", "job_id", j.ID, "org_id", p.OrgID, "type", t, "model", sp.model.Key.String(), "state", j.State)
	return j, nil
}

// GenerateSync runs a generation and waits for it: the completed event's
// result (the reference's GenerateSchemaResponse). Errors as Sync's.
func (s *SchemaGenService) GenerateSync(ctx context.Context, p *access.Principal, req GenerateRequest) (SchemaAnswer, error) {
	j, err := s.StartGeneration(ctx, p, req)
	if err != nil {
		return SchemaAnswer{}, err
	}
	return s.wait(ctx, p, j)
}

// EditSync runs an AI edit and waits for it: the completed event's result
// (the reference's SchemaPromptResponse and more).
func (s *SchemaGenService) EditSync(ctx context.Context, p *access.Principal, req EditRequest) (SchemaAnswer, error) {
	j, err := s.StartEdit(ctx, p, req)
	if err != nil {
		return SchemaAnswer{}, err
	}
	return s.wait(ctx, p, j)
}

// SchemaAnswer is a blocking schema job's answer: its end data and its id.
type SchemaAnswer struct {
	JobID string
	job.SchemaResult
}

// wait follows a job's events to its end (awaitEnd): ctx ending first
// cancels the job.
func (s *SchemaGenService) wait(ctx context.Context, p *access.Principal, j *job.Job) (SchemaAnswer, error) {
	ev, final, err := awaitEnd(ctx, s.Stream, s.JobSvc, s.Log, p, j, nil)
	if err != nil {
		return SchemaAnswer{}, err
	}
	if ev.Type != job.EventCompleted {
		return SchemaAnswer{}, &JobEnded{Job: final}
	}
	c, err := job.CompletedOf(ev)
	if err != nil {
		return SchemaAnswer{}, err
	}
	r, err := job.ReadSchemaResult(c.Result)
	if err != nil {
		return SchemaAnswer{}, err
	}
	return SchemaAnswer{JobID: j.ID, SchemaResult: r}, nil
}
