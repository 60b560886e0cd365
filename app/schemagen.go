package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// SchemaGenerator generates schemas from sample objects and applies
// natural-language edits to saved schemas: it is the Runner of their jobs.
// Every answer goes through one validated loop: it must parse, compile as
// JSON Schema and pass schema.CheckStructure, else the problem is fed back
// to the model, up to MaxAttempts tries.
type SchemaGenerator struct {
	// Models and Calls lend the model choice, key rotation and LLM calls
	// (with the usage ledger), so that schema jobs pay and rotate keys as
	// enrichment does. Requests decodes the jobs' stored requests.
	Models   *ModelService
	Calls    *Calls
	Requests JobRequests
	Schemas  ports.SchemaStore
	Saved    *SchemaService
	Compiler ports.SchemaCompiler
	Clock    ports.Clock
	IDs      ports.IDs
	Log      *slog.Logger
	// SchemaCache is told of the AI edits' writes (nil: no cache).
	SchemaCache ports.SchemaCache
	// Attachments resolves and reads the jobs' attachment_ids (nil:
	// attachments are refused).
	Attachments *AttachmentLoader

	// MaxAttempts bounds the model's answers per job (default
	// DefaultSchemaAttempts, the reference's 6 in total).
	MaxAttempts int
	// RetryBackoff is the pause before retrying a transport failure
	// (default 100 ms, times the attempt number).
	RetryBackoff time.Duration
}

// NewSchemaGenerator runs schema generation and AI edit jobs, saving
// through saved (and its cache).
func NewSchemaGenerator(models *ModelService, calls *Calls, requests JobRequests, schemas ports.SchemaStore, saved *SchemaService,
	compiler ports.SchemaCompiler, clock ports.Clock, ids ports.IDs, log *slog.Logger, atts *AttachmentLoader) *SchemaGenerator {
	return &SchemaGenerator{Models: models, Calls: calls, Requests: requests, Schemas: schemas, Saved: saved, Compiler: compiler,
		Clock: clock, IDs: ids, Log: log, SchemaCache: saved.SchemaCache, Attachments: atts}
}

// DefaultSchemaAttempts is how many answers a schema job may ask for in
// total (the reference's self-correction loop: up to 6 attempts).
const DefaultSchemaAttempts = 6

// MaxEditPromptLen bounds an AI edit's instruction.
const MaxEditPromptLen = 10_000

// GenerateRequest is the body of POST /api/schema/generate/{stream,sync}
// (the reference's StreamGenerateRequest) and the job's stored request.
type GenerateRequest struct {
	// EntitySamples is an array of sample objects of one entity type, or
	// one bare object.
	EntitySamples json.RawMessage
	// Model is a composite key or auto (the default).
	Model string
	// Language is the language the schema describes itself in (ISO 639-1).
	Language *string
	// SampleCommonalityThreshold (0..1, default 0.5) and
	// StrictFieldConformance (default true) tune the checks made before
	// any spend.
	SampleCommonalityThreshold *float64
	StrictFieldConformance     *bool
	// SaveSchema (default true) saves the result as a schema of the
	// organization, deduplicated by content.
	SaveSchema          *bool
	GenerateSemanticIDs bool
	// AttachmentIDs name the organization's attachments the model reads
	// with the samples.
	AttachmentIDs []string
	// SampleInputs are the guided-form inputs that produced the samples:
	// accepted (an object) and kept with the job's request only.
	SampleInputs json.RawMessage
}

// SampleSetRequest is what POST /api/schema/samples/conformance asks.
type SampleSetRequest struct {
	EntitySamples              json.RawMessage
	SampleCommonalityThreshold *float64
	StrictFieldConformance     *bool
}

// EditRequest is the body of POST /api/schema/saved/{id}/prompt[/stream]
// (the reference's SchemaPromptRequest); SchemaID is the path's, kept in the
// job's stored request.
type EditRequest struct {
	SchemaID      string
	Prompt        string
	Model         string
	AttachmentIDs []string
}

// schemaPlan is a validated schema job, ready to run.
type schemaPlan struct {
	task ports.LLMTask
	gen  *GenerateRequest
	edit *EditRequest
	// samples are the generation's samples as sent and collapsed.
	samples   []map[string]any
	collapsed schema.Collapsed
	// current is the edited schema as it was read.
	current *schema.Schema
	model   model.Info
	pick    *modelsel.Pick
	// pl carries the run's provider keys and usage entries for
	// Enricher.generate.
	pl *plan
}

// CheckSamples is the free dry check of a sample set: the localized
// collapse, then commonality and field conformance, without any model.
func (s *SchemaGenerator) CheckSamples(ctx context.Context, p *access.Principal, in SampleSetRequest) (schema.Conformance, error) {
	if err := access.Authorize(p, access.ActCheckSamples); err != nil {
		return schema.Conformance{}, err
	}
	if err := checkText("entity_samples", in.EntitySamples); err != nil {
		return schema.Conformance{}, err
	}
	_, c, err := parseSampleSet(in.EntitySamples, in.SampleCommonalityThreshold)
	if err != nil {
		return schema.Conformance{}, err
	}
	return schema.CheckSamples(c.Samples, threshold(in.SampleCommonalityThreshold), strict(in.StrictFieldConformance)), nil
}

func threshold(t *float64) float64 {
	if t == nil {
		return schema.DefaultCommonalityThreshold
	}
	return *t
}

func strict(b *bool) bool { return b == nil || *b }

// parseSampleSet reads and collapses samples and checks the knobs.
func parseSampleSet(raw json.RawMessage, th *float64) ([]map[string]any, schema.Collapsed, error) {
	if th != nil && (*th < 0 || *th > 1) {
		return nil, schema.Collapsed{}, Invalid("sample_commonality_threshold", "sample_commonality_threshold must be between 0 and 1")
	}
	samples, err := schema.ParseSamples(raw)
	if err != nil {
		var fe *schema.FieldError
		if errors.As(err, &fe) {
			return nil, schema.Collapsed{}, Invalid(fe.Field, "%s", fe.Detail)
		}
		return nil, schema.Collapsed{}, Invalid("entity_samples", "%v", err)
	}
	return samples, schema.CollapseLocalized(samples), nil
}

// sampleError turns a failed check into its coded 400.
func sampleError(c schema.Conformance) error {
	err := c.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, schema.ErrSampleCommonality):
		return &Error{Kind: schema.ErrSampleCommonality, Code: "sample_commonality_failed", Field: "entity_samples",
			Detail: "the samples do not describe one entity type: " + strings.Join(c.CommonalityErrors, "; ")}
	default:
		return &Error{Kind: schema.ErrSampleConformance, Code: "sample_field_conformance_failed", Field: "entity_samples",
			Detail: "the samples' array items do not agree: " + strings.Join(c.Errors, "; ")}
	}
}

// pickModel resolves the request's model: a known composite key, or auto
// (the default), which picks the organization's default for the
// schema_generation task.
func (s *SchemaGenerator) pickModel(ctx context.Context, orgID, k string, atts *jobAttachments) (model.Info, *modelsel.Pick, error) {
	if k == "" || k == model.Auto {
		p, err := s.Models.AutoPick(ctx, orgID, modelsel.TaskSchemaGeneration, atts.needs(modelsel.Needs{}))
		if err != nil {
			return model.Info{}, nil, err
		}
		return p.Model, &p, nil
	}
	m, err := s.Models.knownModelFor(ctx, orgID, "model", k)
	if err == nil {
		err = atts.checkReadable("model", m)
	}
	return m, nil, err
}

// finishPlan resolves the model and, last (a pick records a use), the
// provider key.
func (s *SchemaGenerator) finishPlan(ctx context.Context, orgID, modelKey string, ids []string, sp *schemaPlan) (*schemaPlan, error) {
	atts, err := resolveAttachments(ctx, s.Attachments, orgID, ids)
	if err != nil {
		return nil, err
	}
	if sp.model, sp.pick, err = s.pickModel(ctx, orgID, modelKey, atts); err != nil {
		return nil, err
	}
	sp.pl = &plan{atts: atts}
	if sp.pl.keys, err = s.Calls.pickKeys(ctx, orgID, []model.Info{sp.model}); err != nil {
		return nil, err
	}
	return sp, nil
}

func (s *SchemaGenerator) prepareGeneration(ctx context.Context, orgID string, req GenerateRequest) (*schemaPlan, error) {
	for _, c := range []struct {
		field string
		v     any
	}{{"entity_samples", req.EntitySamples}, {"model", req.Model}, {"language", deref(req.Language)},
		{"attachment_ids", req.AttachmentIDs}, {"sample_inputs", req.SampleInputs}} {
		if err := checkText(c.field, c.v); err != nil {
			return nil, err
		}
	}
	if lang := deref(req.Language); lang != "" {
		if _, ok := Languages[lang]; !ok {
			return nil, coded(ports.ErrInvalid, "invalid_language", "language: unknown language %q; GET /api/enrichment/options lists the ISO 639-1 codes", lang).(*Error).at("language")
		}
	}
	if si := strings.TrimSpace(string(req.SampleInputs)); si != "" && si != "null" && !strings.HasPrefix(si, "{") {
		return nil, Invalid("sample_inputs", "sample_inputs must be an object")
	}
	samples, c, err := parseSampleSet(req.EntitySamples, req.SampleCommonalityThreshold)
	if err != nil {
		return nil, err
	}
	// Before any spend: samples of one entity type, array items that agree.
	if err := sampleError(schema.CheckSamples(c.Samples, threshold(req.SampleCommonalityThreshold), strict(req.StrictFieldConformance))); err != nil {
		return nil, err
	}
	return s.finishPlan(ctx, orgID, req.Model, req.AttachmentIDs, &schemaPlan{task: ports.TaskSchemaGeneration, gen: &req, samples: samples, collapsed: c})
}

func (s *SchemaGenerator) prepareEdit(ctx context.Context, orgID string, req EditRequest) (*schemaPlan, error) {
	for _, c := range []struct {
		field string
		v     any
	}{{"id", req.SchemaID}, {"prompt", req.Prompt}, {"model", req.Model}, {"attachment_ids", req.AttachmentIDs}} {
		if err := checkText(c.field, c.v); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return nil, Invalid("prompt", "prompt is required: the edit to make, in plain words")
	}
	if len(req.Prompt) > MaxEditPromptLen {
		return nil, Invalid("prompt", "prompt is longer than %d characters", MaxEditPromptLen)
	}
	// From the store, not the SchemaCache: the edit is written over this
	// version, so it must be the latest.
	sc, err := liveSchema(ctx, s.Schemas, orgID, req.SchemaID)
	if err != nil {
		return nil, err
	}
	return s.finishPlan(ctx, orgID, req.Model, req.AttachmentIDs, &schemaPlan{task: ports.TaskSchemaEdit, edit: &req, current: sc})
}

// jobPrincipal is who a schema job acts as when it saves: an editor of the
// job's organization (the caller who started it was checked for that).
func jobPrincipal(orgID string) *access.Principal {
	return &access.Principal{OrgID: orgID, Role: access.Editor, Scopes: access.DefaultScopes()}
}

// Run runs a schema job for the job runtime: it reads the stored request (and
// prepares it again when the job was taken over), then the validated loop.
func (s *SchemaGenerator) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	ctx = s.Calls.withBudget(ctx)
	sp, _ := w.Prepared.(*schemaPlan)
	if sp == nil {
		var err error
		switch w.Job.Type {
		case job.TypeSchemaGeneration:
			var req GenerateRequest
			if req, err = s.Requests.DecodeGenerate(w.Job.Request); err == nil {
				sp, err = s.prepareGeneration(ctx, w.Job.OrgID, req)
			}
		case job.TypeSchemaEdit:
			var req EditRequest
			if req, err = s.Requests.DecodeEdit(w.Job.Request); err == nil {
				sp, err = s.prepareEdit(ctx, w.Job.OrgID, req)
			}
		default:
			err = fmt.Errorf("not a schema job: %s", w.Job.Type)
		}
		if err != nil {
			return unprepared(s.Log, err)
		}
	}
	sp.pl.usage.bind(w)
	if f := sp.pl.atts.load(ctx, s.Attachments); f != nil {
		return ports.Outcome{Failure: f}
	}
	out := s.run(ctx, w, sp)
	out.Usage = sp.pl.usage.take()
	return out
}

func (s *SchemaGenerator) attempts() int {
	if s.MaxAttempts > 0 {
		return s.MaxAttempts
	}
	return DefaultSchemaAttempts
}

// answerSchema is the shape asked of the model: the schema document and
// suggestions. Its own rules are checked after (CheckStructure).
var answerSchema = map[string]any{
	"type":     "object",
	"required": []any{"schema"},
	"properties": map[string]any{
		"schema":      map[string]any{"type": "object"},
		"suggestions": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	},
}

func (s *SchemaGenerator) run(ctx context.Context, w *ports.Work, sp *schemaPlan) ports.Outcome {
	start := time.Now()
	pub := w.Publish
	if w.Tracker != nil {
		w.Tracker.SetTotalModels(1)
	}
	key := sp.model.Key.String()
	rs := readPrior(w.Prior)
	if sp.pick != nil && !rs.started[job.EventModelAutoSelected] {
		pub(job.ModelAutoSelected{Model: key, TaskType: TaskSchemaGeneration, Pinned: sp.pick.Pinned, Source: sp.pick.Source})
	}
	if sp.gen != nil {
		// Two or more attachments: do they describe one kind of thing?
		if _, f := sp.pl.atts.cohere(ctx, s.Calls, sp.pl, sp.model, "the entity type of these samples", w.Prior, pub); f != nil {
			return ports.Outcome{Failure: f}
		}
	}
	if !rs.started[job.EventModelStarted] {
		pub(job.SchemaModelStarted{Model: key, Sandbox: sp.model.Sandbox})
	}
	// A worker that took the job over after its model_completed reuses
	// that answer: the model is neither paid for nor announced again.
	prior, ended := rs.completed[key]
	if ended && !prior.Success {
		return ports.Outcome{Failure: &ports.Failure{Code: prior.ErrorCode, Msg: prior.ErrorMessage}}
	}
	var got *validated
	var in, outT int
	if ended {
		raw, _ := json.Marshal(prior.Result)
		got, in, outT = &validated{doc: prior.Result, raw: raw, suggestions: []string{}}, prior.InputTokens, prior.OutputTokens
	} else {
		var failed *ports.Outcome
		if got, in, outT, failed = s.ask(ctx, sp, pub, start); failed != nil {
			return *failed
		}
	}
	cost := sp.model.Price.Cost(in, outT)
	mc := job.ModelCompleted{Model: key, Cost: cost, InputTokens: in, OutputTokens: outT, ProcessingMS: time.Since(start).Milliseconds()}
	if ctx.Err() != nil {
		return ports.Outcome{}
	}
	rec := &enrichment.Record{ID: recordID(w.Job.ID, sp.model.Key), OrgID: w.Job.OrgID, JobID: w.Job.ID, Model: key,
		StructuredOutput: got.raw, Cost: cost, InputTokens: in, OutputTokens: outT, Sandbox: sp.model.Sandbox, CreatedAt: s.Clock.Now(),
		Attachments: sp.pl.atts.refs()}
	result := job.SchemaResult{Model: key, RecordID: rec.ID, Cost: cost, InputTokens: in, OutputTokens: outT,
		Suggestions: got.suggestions, Schema: got.doc}
	if err := s.keep(ctx, w, sp, got, rec, &result); err != nil {
		return s.saveFailed(err)
	}
	result.ProcessingMS = time.Since(start).Milliseconds()
	mc.Success, mc.Result, mc.RecordID = true, got.doc, rec.ID
	if !ended {
		pub(mc)
	}
	fields := result.Fields()
	res, _ := json.Marshal(fields)
	s.Log.Info("schema job finished", "job_id", w.Job.ID, "type", w.Job.Type, "schema_id", fields["schema_id"], "cost", cost)
	return ports.Outcome{Result: res, Records: []*enrichment.Record{rec},
		Completed: job.JobCompleted{Result: fields, RecordID: rec.ID, RecordIDs: []string{rec.ID}, Cost: cost}}
}

// ask calls the schema job's model until an answer passes every rule, up to
// s.attempts() attempts. failed, when set, ends the run: the model failed
// (its model_completed is published here), or ctx ended.
func (s *SchemaGenerator) ask(ctx context.Context, sp *schemaPlan, pub func(job.Payload), start time.Time) (got *validated, in, outT int, failed *ports.Outcome) {
	key := sp.model.Key.String()
	msgs := sp.pl.atts.prompt(schemaPrompt(sp), sp.model)
	max := s.attempts()
	var reason, public string
	var code job.ErrorCode
	for attempt := 1; attempt <= max; attempt++ {
		pub(job.Attempt{Model: key, Expertise: string(sp.task), Attempt: attempt, MaxAttempts: max, Reason: reason})
		resp, err := s.Calls.generate(ctx, sp.pl, sp.model, ports.LLMRequest{Model: sp.model.Key, Messages: msgs,
			Schema: answerSchema, SchemaName: string(sp.task), ResponseSchema: true, Task: sp.task})
		in += resp.InputTokens
		outT += resp.OutputTokens
		if err != nil {
			if ctx.Err() != nil {
				return nil, in, outT, &ports.Outcome{}
			}
			code = classify(err)
			public = code.Message()
			reason = fmt.Sprintf("%s: %s", code, public)
			s.Log.Warn("llm call failed", "model", key, "task", sp.task, "attempt", attempt, "code", code, "err", err)
			if permanent(err) {
				break
			}
			if attempt < max && !s.backOff(ctx, attempt) {
				return nil, in, outT, &ports.Outcome{}
			}
			continue
		}
		v, perr := s.check(ctx, resp.Text, sp)
		if perr == nil {
			return &v, in, outT, nil
		}
		if ctx.Err() != nil {
			return nil, in, outT, &ports.Outcome{}
		}
		// The validator's account names paths of the model's own output:
		// it is ours to show.
		code = job.CodeOutputInvalid
		public = fmt.Sprintf("%s: %v", code.Message(), perr)
		reason = fmt.Sprintf("%s: %v", code, perr)
		msgs = enrichment.Retry(msgs, resp.Text, perr)
	}
	msg := fmt.Sprintf("%d attempts failed, last: %s", max, public)
	if code != job.CodeOutputInvalid {
		msg = fmt.Sprintf("the model failed: %s", public)
	}
	pub(job.ModelCompleted{Model: key, Cost: sp.model.Price.Cost(in, outT), InputTokens: in, OutputTokens: outT,
		ProcessingMS: time.Since(start).Milliseconds(), ErrorMessage: msg, ErrorCode: code})
	return nil, in, outT, &ports.Outcome{Failure: &ports.Failure{Code: code, Msg: msg}}
}

// backOff waits before attempt+1 after a failed call; false when ctx ended
// first.
func (s *SchemaGenerator) backOff(ctx context.Context, attempt int) bool {
	backoff := s.RetryBackoff
	if backoff == 0 {
		backoff = 100 * time.Millisecond
	}
	select {
	case <-time.After(backoff * time.Duration(attempt)):
		return true
	case <-ctx.Done():
		return false
	}
}

// schemaPrompt is the first prompt of a generation or an edit.
func schemaPrompt(sp *schemaPlan) []enrichment.Message {
	if sp.gen != nil {
		return schema.GenerationPrompt(sp.collapsed.Samples, schema.GenerationOptions{Language: deref(sp.gen.Language),
			GenerateSemanticIDs: sp.gen.GenerateSemanticIDs, Localized: sp.collapsed.Localized})
	}
	return schema.EditPrompt(sp.current.Content, sp.edit.Prompt)
}

// keep saves the job's schema (a generation's, unless the request says
// not to, or an edit's working copy) and completes rec and result with
// what was saved.
func (s *SchemaGenerator) keep(ctx context.Context, w *ports.Work, sp *schemaPlan, got *validated, rec *enrichment.Record,
	result *job.SchemaResult) error {
	if sp.gen == nil {
		rec.Type = enrichment.RecordSchemaEdit
		rec.SchemaID, result.SchemaID = sp.current.ID, &sp.current.ID
		rec.EntityData, _ = json.Marshal(map[string]any{"prompt": sp.edit.Prompt, "schema": sp.current.Content})
		return s.saveEdit(ctx, w.Job.OrgID, sp.current.ID, got.raw)
	}
	rec.Type = enrichment.RecordSchemaGeneration
	rec.EntityData, _ = json.Marshal(sp.samples)
	created := false
	if sp.gen.SaveSchema == nil || *sp.gen.SaveSchema {
		sc, isNew, err := s.saveGenerated(ctx, w.Job.OrgID, got)
		if err != nil {
			return err
		}
		rec.SchemaID, result.SchemaID, created = sc.ID, &sc.ID, isNew
	}
	domains, _ := got.doc["x-expertiseDomains"].(map[string]any)
	result.Generation = &job.SchemaGeneration{Created: created, ExpertiseCount: len(domains),
		SamplePropertyCount: len(schema.Observe(sp.collapsed.Samples))}
	return nil
}

// saveFailed fails a job whose result could not be saved.
func (s *SchemaGenerator) saveFailed(err error) ports.Outcome {
	if e, ok := AsError(err); ok && errors.Is(err, ports.ErrNotFound) {
		return ports.Outcome{Failure: &ports.Failure{Code: job.CodeSchemaInvalid, Msg: e.Detail}}
	}
	if e, ok := AsError(err); ok && errors.Is(err, ports.ErrInvalid) {
		return ports.Outcome{Failure: &ports.Failure{Code: job.CodeOutputInvalid, Msg: e.Detail}}
	}
	s.Log.Error("schema job result not saved", "err", err)
	return ports.Outcome{Failure: &ports.Failure{Code: job.CodeStorage, Msg: job.CodeStorage.Message()}}
}

// saveGenerated saves a generated schema for the organization, or returns
// the saved schema with the same content (created false). It is the one
// place to switch to the lifecycle's SchemaService.SaveDeduplicated: until
// then it looks for the content hash among the organization's newest
// schemas itself.
func (s *SchemaGenerator) saveGenerated(ctx context.Context, orgID string, v *validated) (*schema.Schema, bool, error) {
	doc := compact(v.raw)
	name, _ := v.doc["title"].(string)
	if strings.TrimSpace(name) == "" {
		name = "Generated schema"
	}
	name = truncate(strings.TrimSpace(name), schema.MaxNameLen)
	desc, _ := v.doc["description"].(string)
	desc = truncate(desc, schema.MaxDescriptionLen)
	return s.Saved.SaveDeduplicated(ctx, jobPrincipal(orgID), NewSchemaInput{Name: name, Description: desc, Schema: doc})
}

// saveEdit writes an AI edit to the schema's working copy.
func (s *SchemaGenerator) saveEdit(ctx context.Context, orgID, id string, doc json.RawMessage) error {
	_, err := s.Schemas.UpdateSchema(ctx, orgID, id, func(sc *schema.Schema) error {
		if sc.Deleted() {
			return ports.ErrNotFound // moved to the trash while the edit ran
		}
		sc.Edit(compact(doc), s.Clock.Now())
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		return coded(ports.ErrNotFound, "not_found", "schema %s was deleted while the edit ran", id)
	}
	if err != nil {
		return err
	}
	schemaChanged(ctx, s.SchemaCache, orgID, id)
	return nil
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
