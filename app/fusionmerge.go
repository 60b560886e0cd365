package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// FusionService merges stored records of the organization into a fused
// record (POST /api/fusion/merge and /merge/stream). A merge is a job of
// type fusion, so the blocking and the streamed variants run the same code,
// and the fused record and the arbiter's usage are stored with the job's
// end. It submits the jobs its Merger runs.
type FusionService struct {
	*Merger
	JobRunner ports.JobRunner
	Stream    ports.EventStream
	JobSvc    *JobService
}

// NewFusionService submits the jobs m runs to jr.
func NewFusionService(m *Merger, jr ports.JobRunner, stream ports.EventStream, jobs *JobService) *FusionService {
	return &FusionService{Merger: m, JobRunner: jr, Stream: stream, JobSvc: jobs}
}

// Merger plans and runs merge jobs: it is the Runner of job.TypeFusion.
type Merger struct {
	Fuser   *Fuser
	Records ports.RecordStore
	// Schemas and SchemaCache read the records' schema (the cache may be
	// nil); Compiler validates the merge against it.
	Schemas     ports.SchemaStore
	SchemaCache ports.SchemaCache
	Compiler    ports.SchemaCompiler
	Requests    JobRequests
	Clock       ports.Clock
	IDs         ports.IDs
	Log         *slog.Logger
	// Entities is the entity layer a fused record of a linked schema
	// feeds, like an enrichment's (nil: none).
	Entities ports.EntityStore
	// Attachments resolves and reads the arbiter's attachment_ids (nil:
	// attachments are refused).
	Attachments *AttachmentLoader
	// Concepts resolves the fused record's semantic ids, as an
	// auto-fusion's (nil: they stay as the sources had them).
	Concepts *ConceptService
}

// NewMerger runs merge jobs over records with fuser.
func NewMerger(fuser *Fuser, records ports.RecordStore, schemas ports.SchemaStore, cache ports.SchemaCache, compiler ports.SchemaCompiler,
	requests JobRequests, clock ports.Clock, ids ports.IDs, log *slog.Logger, entities ports.EntityStore, atts *AttachmentLoader,
	concepts *ConceptService) *Merger {
	return &Merger{Fuser: fuser, Records: records, Schemas: schemas, SchemaCache: cache, Compiler: compiler, Requests: requests,
		Clock: clock, IDs: ids, Log: log, Entities: entities, Attachments: atts, Concepts: concepts}
}

// Bounds of a merge's result_ids.
const (
	MinMergeRecords = 2
	MaxMergeRecords = 10
)

// MergeRequest is the body of POST /api/fusion/merge{,/stream}: the
// reference's FusionRequest, also the job's stored request.
type MergeRequest struct {
	ResultIDs        []string
	ArbitrationModel *string
	AttachmentIDs    []string
	// DatabaseSync (default true): the fused record of a linked schema
	// feeds the entity layer and its databases.
	DatabaseSync *bool
}

// mergePlan is a validated merge.
type mergePlan struct {
	req       MergeRequest
	sources   []fuseSource
	schemaID  string
	doc       map[string]any
	validator ports.Validator
	primary   string
	arbiter   *model.Info
	entity    json.RawMessage
	strategy  enrichment.Strategy
	schema    *schema.Schema // the records' schema, nil when it is gone
	// atts are what the arbiter reads (nil: none).
	atts *jobAttachments
}

func (s *Merger) prepare(ctx context.Context, orgID string, req MergeRequest) (*mergePlan, error) {
	n := len(req.ResultIDs)
	if n < MinMergeRecords || n > MaxMergeRecords {
		return nil, Invalid("result_ids", "result_ids: between %d and %d record ids", MinMergeRecords, MaxMergeRecords)
	}
	if req.ArbitrationModel != nil {
		if err := checkText("arbitration_model", *req.ArbitrationModel); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	pl := &mergePlan{req: req}
	names := map[string]bool{}
	for i, id := range req.ResultIDs {
		field := fmt.Sprintf("result_ids.%d", i)
		if err := checkText(field, id); err != nil {
			return nil, err
		}
		if strings.TrimSpace(id) == "" {
			return nil, Invalid(field, "%s is empty", field)
		}
		if seen[id] {
			return nil, Invalid(field, "%s: record %s is listed twice", field, id)
		}
		seen[id] = true
		rec, err := s.Records.GetRecord(ctx, orgID, id)
		if errors.Is(err, ports.ErrNotFound) {
			return nil, coded(ports.ErrNotFound, "not_found", "record %s not found", id)
		}
		if err != nil {
			return nil, err
		}
		if rec.Type != enrichment.RecordEnrichment && rec.Type != enrichment.RecordFusion {
			return nil, Invalid(field, "%s: record %s is a %s record; only enrichment and fusion records merge", field, id, rec.Type)
		}
		var out map[string]any
		if json.Unmarshal(rec.StructuredOutput, &out) != nil || out == nil {
			return nil, Invalid(field, "%s: record %s has no result object", field, id)
		}
		if i == 0 {
			pl.schemaID, pl.entity, pl.strategy = rec.SchemaID, rec.EntityData, rec.Strategy
		} else if rec.SchemaID != pl.schemaID {
			return nil, Invalid("result_ids", "result_ids: the records answer different schemas (%s and %s)", pl.schemaID, rec.SchemaID)
		}
		info := model.Info{}
		if k, err := model.ParseKey(rec.Model); err == nil {
			info.Key = k
			if m, err := s.Fuser.Models.Catalog.Model(k); err == nil {
				info = m
			}
		} else {
			info.Key = model.Key{Provider: "record", Model: rec.ID}
		}
		// Two records of one model are two candidates: the later ones are
		// named model@record.
		if names[info.Key.String()] {
			info.Key.Model += "@" + rec.ID
		}
		names[info.Key.String()] = true
		pl.sources = append(pl.sources, fuseSource{record: rec, result: out, info: info})
	}
	var err error
	if pl.atts, err = resolveAttachments(ctx, s.Attachments, orgID, req.AttachmentIDs); err != nil {
		return nil, err
	}
	if pl.arbiter, err = s.Fuser.arbiterOf(ctx, orgID, req.ArbitrationModel, pl.atts); err != nil {
		return nil, err
	}
	s.schemaOf(ctx, orgID, pl)
	return pl, nil
}

// schemaOf reads the records' schema, when it still exists, to know the
// multilingual fields and to validate the merge. The languages are those of
// the records' multilingual values ("en" first when present, else in name
// order: the stored records do not say which was primary).
func (s *Merger) schemaOf(ctx context.Context, orgID string, pl *mergePlan) {
	pl.primary = DefaultLanguage
	if pl.schemaID == "" {
		return
	}
	sc, err := jobSchema(ctx, s.SchemaCache, s.Schemas, orgID, pl.schemaID)
	if err != nil {
		return
	}
	pl.schema = sc
	var doc map[string]any
	if json.Unmarshal(sc.Contract(), &doc) != nil {
		return
	}
	langs := languagesOf(doc, pl.sources)
	if len(langs) > 0 {
		pl.primary = langs[0]
		doc = enrichment.Localize(doc, langs)
	}
	pl.doc = doc
	raw, _ := json.Marshal(doc)
	if v, err := s.Compiler.Compile(ctx, raw); err == nil {
		pl.validator = v
	}
}

// languagesOf finds the language codes of the top-level multilingual
// properties' values.
func languagesOf(doc map[string]any, srcs []fuseSource) []string {
	props, _ := doc["properties"].(map[string]any)
	set := map[string]bool{}
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if multi, _ := pm["multilingual"].(bool); !multi {
			continue
		}
		for _, src := range srcs {
			if v, ok := src.result[name].(map[string]any); ok {
				for l := range v {
					set[l] = true
				}
			}
		}
	}
	var out []string
	for l := range set {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == DefaultLanguage) != (out[j] == DefaultLanguage) {
			return out[i] == DefaultLanguage
		}
		return out[i] < out[j]
	})
	return out
}

// Start validates a merge and creates its job.
func (s *FusionService) Start(ctx context.Context, p *access.Principal, req MergeRequest) (*job.Job, error) {
	if err := access.Authorize(p, access.ActFusionMerge); err != nil {
		return nil, err
	}
	pl, err := s.prepare(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, err := s.Requests.EncodeMerge(req)
	if err != nil {
		return nil, err
	}
	j, err := s.JobRunner.Submit(ctx, s.IDs.NewID(), p.OrgID, job.TypeFusion, body, pl)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Run runs a merge job for the job runtime.
func (s *Merger) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	ctx = s.Fuser.Calls.withBudget(ctx)
	pl, _ := w.Prepared.(*mergePlan)
	if pl == nil {
		req, err := s.Requests.DecodeMerge(w.Job.Request)
		if err != nil {
			return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: "the stored request does not decode"}}
		}
		if pl, err = s.prepare(ctx, w.Job.OrgID, req); err != nil {
			return unprepared(s.Log, err)
		}
	}
	if w.Tracker != nil {
		w.Tracker.SetTotalModels(len(pl.sources))
	}
	if f := pl.atts.load(ctx, s.Attachments); f != nil {
		return ports.Outcome{Failure: f}
	}
	log := &usageLog{}
	log.bind(w)
	fr := fusionRun{orgID: w.Job.OrgID, jobID: w.Job.ID, recordID: fusionRecordID(w.Job.ID, pl.sources), doc: pl.doc, validator: pl.validator,
		primary: pl.primary, strategy: pl.strategy, entity: pl.entity, schemaID: pl.schemaID, sources: pl.sources,
		arbiter: pl.arbiter, pub: w.Publish, prior: w.Prior, atts: pl.atts}
	f, err := s.Fuser.fuse(ctx, fr, log)
	usage := log.take()
	if ctx.Err() != nil {
		return ports.Outcome{Usage: usage}
	}
	if err != nil {
		w.Publish(job.FusionCompleted{Success: false, ErrorMessage: err.Error()})
		return ports.Outcome{Failure: &ports.Failure{Code: job.CodeOutputInvalid, Msg: err.Error()}, Usage: usage}
	}
	s.resolveConcepts(ctx, pl, f)
	res, _ := json.Marshal(f.result.Merged)
	sync := syncEntity(ctx, s.Entities, s.Clock, pl.schema, pl.req.DatabaseSync, f.record, nil, w.Publish)
	return ports.Outcome{Result: res, Records: []*enrichment.Record{f.record}, Usage: usage, Sync: sync.writes, Database: outcomes(sync),
		Completed: job.JobCompleted{Result: f.result.Merged, RecordID: f.record.ID, RecordIDs: []string{f.record.ID}, Cost: f.cost,
			Fused: true, Fusion: f.result.Summary, SourceModels: sourceModels(pl.sources)}}
}

// resolveConcepts resolves the fused record's semantic ids against the
// records' schema, when it still exists, as an auto-fusion does: the
// sources' ids were their own resolutions, and the merged identity may
// differ from each.
func (s *Merger) resolveConcepts(ctx context.Context, pl *mergePlan, f *fused) {
	if s.Concepts == nil || pl.schema == nil {
		return
	}
	var fields map[string]any
	_ = json.Unmarshal(pl.entity, &fields)
	conceptLinker{Concepts: s.Concepts, Log: s.Log}.resolve(ctx, semanticProps(pl.doc, pl.schema.Name), fields, f.record, f.result.Merged)
}

// MergeResult is the blocking merge's answer: its fusion_completed event.
type MergeResult struct {
	JobID string
	Event job.Event
}

// Merge runs a merge and waits for its end.
func (s *FusionService) Merge(ctx context.Context, p *access.Principal, req MergeRequest) (*MergeResult, error) {
	j, err := s.Start(ctx, p, req)
	if err != nil {
		return nil, err
	}
	var after int64
	var res *MergeResult
	for {
		evs, err := s.Stream.Wait(ctx, j.ID, after)
		if err != nil {
			if _, cerr := s.JobSvc.Cancel(context.WithoutCancel(ctx), p, j.ID, "client went away"); cerr != nil {
				s.Log.Debug("cancel after merge ended", "job_id", j.ID, "err", cerr)
			}
			return nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			if ev.Type == job.EventFusionCompleted {
				res = &MergeResult{JobID: j.ID, Event: ev}
			}
			if !ev.Type.Terminal() {
				continue
			}
			if ev.Type == job.EventCompleted && res != nil {
				return res, nil
			}
			end, err := job.EndedOf(ev)
			if err != nil {
				return nil, err
			}
			final := *j
			final.State, final.ErrorCode, final.Error, final.UpdatedAt = end.State, end.Code, end.Message, ev.CreatedAt
			if ev.Type == job.EventCancelled {
				final.State, final.Error = job.Cancelled, end.Reason
			}
			if ev.Type == job.EventCompleted {
				final.State, final.ErrorCode, final.Error = job.Failed, job.CodeInternal, "the merge completed without a result"
			}
			return nil, &JobEnded{Job: &final}
		}
	}
}
