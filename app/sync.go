package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// EnrichmentService starts enrichment jobs on the job runtime, streamed or
// awaited (a blocking run); its Enricher plans them and is their Runner.
type EnrichmentService struct {
	Enricher  *Enricher
	Requests  JobRequests
	JobRunner ports.JobRunner
	Stream    ports.EventStream
	// JobSvc cancels a blocking run whose caller leaves.
	JobSvc *JobService
	IDs    ports.IDs
	Log    *slog.Logger
}

// NewEnrichmentService submits the jobs enr runs to jr.
func NewEnrichmentService(enr *Enricher, requests JobRequests, jr ports.JobRunner, stream ports.EventStream, jobs *JobService,
	ids ports.IDs, log *slog.Logger) *EnrichmentService {
	return &EnrichmentService{Enricher: enr, Requests: requests, JobRunner: jr, Stream: stream, JobSvc: jobs, IDs: ids, Log: log}
}

// Start validates the request and creates the job with its queue entry. It
// returns the job for the SSE stream.
func (s *EnrichmentService) Start(ctx context.Context, p *access.Principal, req EnrichRequest) (*job.Job, error) {
	return s.start(ctx, p, req, false)
}

// start submits the enrichment with JobRunner.Submit, or with
// JobRunner.SubmitAwaited for a caller that awaits its end.
func (s *EnrichmentService) start(ctx context.Context, p *access.Principal, req EnrichRequest, awaited bool) (*job.Job, error) {
	if err := access.Authorize(p, access.ActEnrich); err != nil {
		return nil, err
	}
	pl, err := s.Enricher.prepare(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, err := s.Requests.EncodeEnrich(req)
	if err != nil {
		return nil, err
	}
	submit := s.JobRunner.Submit
	if awaited {
		submit = s.JobRunner.SubmitAwaited
	}
	j, err := submit(ctx, s.IDs.NewID(), p.OrgID, job.TypeEnrichment, body, pl)
	if err != nil {
		return nil, err
	}
	s.Log.Info("enrichment queued", "job_id", j.ID, "org_id", p.OrgID, "schema_id", pl.schema.ID,
		"strategy", pl.choice.Strategy, "calls", len(pl.calls), "models", len(pl.models), "state", j.State)
	return j, nil
}

// SyncResult is what the blocking variant returns for a completed job.
type SyncResult struct {
	Job       *job.Job
	Result    map[string]any
	RecordID  string
	RecordIDs []string
	// Cost is in micro-credits.
	Cost int64
	// Models are the per-model outcomes, in the order they ended.
	Models       []ModelResult
	FailedModels []string
	// IsFused: Result and RecordID are the fused record's; Fusion is its
	// summary (a fusion.Summary, or its map when read back from a log) and
	// SourceModels the merged models.
	IsFused      bool
	Fusion       any
	SourceModels []string
	// ProcessingMS is the wall-clock time of the run as this caller saw it.
	ProcessingMS int64
	// Database is the entity-layer outcome of the final record (the
	// database_* event's DatabaseSyncOutcome; nil when none was written).
	Database map[string]any
}

// ModelResult is one model's outcome in a blocking run (its model_completed
// event).
type ModelResult struct {
	Model        string
	Success      bool
	Result       map[string]any
	RecordID     string
	Cost         int64
	InputTokens  int
	OutputTokens int
	ProcessingMS int64
	ErrorMessage string
	ErrorCode    string
}

// JobEnded is the error of a blocking run whose job failed or was
// cancelled: Code is the job's typed error code, or "cancelled".
type JobEnded struct {
	Job *job.Job
}

// CodeCancelled is JobEnded's code for a cancelled job.
const CodeCancelled = "cancelled"

func (e *JobEnded) Error() string {
	if e.Job.State == job.Cancelled {
		return "the job was cancelled: " + e.Job.Error
	}
	return e.Job.Error
}

// Code is the job's error code, or "cancelled".
func (e *JobEnded) Code() string {
	if e.Job.State == job.Cancelled {
		return CodeCancelled
	}
	return string(e.Job.ErrorCode)
}

// ErrSyncTimeout is the error of a blocking run that outlived its deadline
// (timeout_seconds); its job was cancelled.
var ErrSyncTimeout = errors.New("the job did not finish in time and was cancelled")

// Sync runs an enrichment and waits for its end on the event stream. When
// ctx ends first (the client went away, or the timeout passed) the job is
// cancelled and ctx's error is returned (wrapped in ErrSyncTimeout for a
// deadline). A job that fails or is cancelled is a *JobEnded.
func (s *EnrichmentService) Sync(ctx context.Context, p *access.Principal, req EnrichRequest) (*SyncResult, error) {
	t0 := time.Now()
	j, err := s.start(ctx, p, req, true)
	if err != nil {
		return nil, err
	}
	var models []ModelResult
	var database map[string]any
	ev, final, err := awaitEnd(ctx, s.Stream, s.JobSvc, s.Log, p, j, func(ev job.Event) error {
		if d, ok := job.Inner(ev.Payload).(job.DatabaseOutcome); ok {
			database = d.Database
		}
		if ev.Type == job.EventClassificationMismatchPause {
			// A blocking run never waits on a pause: 422 with the verdict.
			return s.refuseClassified(ctx, p, j.ID, ev)
		}
		if ev.Type != job.EventModelCompleted {
			return nil
		}
		m, err := job.ModelCompletedOf(ev)
		if err != nil {
			return err
		}
		models = append(models, ModelResult{Model: m.Model, Success: m.Success, Result: m.Result, RecordID: m.RecordID,
			Cost: m.Cost, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, ProcessingMS: m.ProcessingMS,
			ErrorMessage: m.ErrorMessage, ErrorCode: string(m.ErrorCode)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ev.Type != job.EventCompleted {
		return nil, &JobEnded{Job: final}
	}
	c, err := job.CompletedOf(ev)
	if err != nil {
		return nil, err
	}
	return &SyncResult{Job: final, Result: c.Result, RecordID: c.RecordID, RecordIDs: c.RecordIDs, Cost: c.Cost,
		Models: models, FailedModels: c.FailedModels, IsFused: c.Fused, Fusion: c.Fusion, SourceModels: c.SourceModels,
		ProcessingMS: time.Since(t0).Milliseconds(), Database: database}, nil
}

// awaitEnd follows job j's events from its first, handing each to seen
// (nil: none), up to its terminal event, which it returns with the job as
// that event says it ended (no read). When ctx ends first — the blocking
// route's client went away, or its timeout_seconds elapsed — the job is
// cancelled and ctx's error returned (wrapped in ErrSyncTimeout for a
// deadline). When the job's row cannot be stored, or its end meets an
// unreachable store (JobRunner.Await), that cause is returned and the job is
// left to its run, which retries.
func awaitEnd(ctx context.Context, stream ports.EventStream, jobs *JobService, log *slog.Logger, p *access.Principal,
	j *job.Job, seen func(job.Event) error) (job.Event, *job.Job, error) {
	ctx, stop := jobs.JobRunner.Await(ctx, j.ID)
	defer stop()
	var after int64
	for {
		evs, err := stream.Wait(ctx, j.ID, after)
		if cause := context.Cause(ctx); err != nil && (errors.Is(cause, ports.ErrJobNotStored) || errors.Is(cause, ports.ErrJobStalled)) {
			return job.Event{}, nil, cause
		}
		if err != nil {
			reason := "client went away"
			if errors.Is(err, context.DeadlineExceeded) {
				reason = "timeout_seconds elapsed"
				err = fmt.Errorf("%w: %w", ErrSyncTimeout, err)
			}
			if _, cerr := jobs.Cancel(context.WithoutCancel(ctx), p, j.ID, reason); cerr != nil {
				log.Debug("cancel after sync ended", "job_id", j.ID, "err", cerr)
			}
			return job.Event{}, nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			if seen != nil {
				if err := seen(ev); err != nil {
					return job.Event{}, nil, err
				}
			}
			if !ev.Type.Terminal() {
				continue
			}
			end, err := job.EndedOf(ev)
			if err != nil {
				return job.Event{}, nil, err
			}
			final := *j
			final.State, final.ErrorCode, final.Error, final.UpdatedAt = end.State, end.Code, end.Message, ev.CreatedAt
			if ev.Type == job.EventCancelled {
				final.State, final.Error = job.Cancelled, end.Reason
			}
			return ev, &final, nil
		}
	}
}

// refuseClassified ends a blocking run whose classification warned: a
// blocking caller cannot answer the pause, so the job is cancelled and the
// caller gets the classification (422).
func (s *EnrichmentService) refuseClassified(ctx context.Context, p *access.Principal, id string, ev job.Event) error {
	pause, _ := job.PayloadOf[job.ClassificationMismatchPause](ev)
	ctxMap := pause.Classification
	status, _ := ctxMap["status"].(string)
	if _, err := s.JobSvc.Cancel(context.WithoutCancel(ctx), p, id, "refused by the pre-flight classification (blocking run)"); err != nil {
		s.Log.Warn("cancel a blocking run refused by its classification", "job_id", id, "err", err)
	}
	return &ClassificationRefused{Status: enrichment.ClassificationStatus(status), Context: ctxMap}
}

// remarshal reads an event payload (as published, or as decoded from the
// log) into a typed struct.
func remarshal(data map[string]any, v any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
