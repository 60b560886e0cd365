package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// EnrichmentService starts enrichment jobs and runs them: plan the schema
// into expertise calls, call each model, validate and retry, merge, store the
// record, and narrate it all as events.
type EnrichmentService struct {
	Schemas  ports.SchemaStore
	Records  ports.RecordStore
	Jobs     ports.JobStore
	Runner   ports.JobRunner
	Hub      *Hub
	JobSvc   *JobService
	LLM      ports.LLM
	Catalog  ports.ModelCatalog
	Compiler ports.SchemaCompiler
	Clock    ports.Clock
	IDs      ports.IDs
	Log      *slog.Logger

	// CallParallelism bounds the concurrent LLM calls of one model (default 4).
	CallParallelism int
	// RetryBackoff is the pause before retrying a failed call (default 100 ms,
	// times the attempt number).
	RetryBackoff time.Duration

	cache validators
}

// validators caches compiled schemas by content: compiling is the costliest
// step of preparing a job, and the same schema is enriched again and again.
type validators struct {
	mu sync.Mutex
	m  map[[32]byte]ports.Validator
}

const maxCachedValidators = 1024

func (s *EnrichmentService) compile(doc []byte) (ports.Validator, error) {
	key := sha256.Sum256(doc)
	s.cache.mu.Lock()
	v, ok := s.cache.m[key]
	s.cache.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := s.Compiler.Compile(doc)
	if err != nil {
		return nil, err
	}
	s.cache.mu.Lock()
	if s.cache.m == nil || len(s.cache.m) >= maxCachedValidators {
		s.cache.m = map[[32]byte]ports.Validator{}
	}
	s.cache.m[key] = v
	s.cache.mu.Unlock()
	return v, nil
}

// MaxModels bounds the models of one request.
const MaxModels = 10

// EnrichRequest is the body of POST /api/single/enrich/{stream,sync}.
type EnrichRequest struct {
	EntityData      json.RawMessage `json:"entity_data"`
	SchemaID        string          `json:"schema_id"`
	Models          []string        `json:"models,omitempty"`
	Model           string          `json:"model,omitempty"`
	Strategy        string          `json:"strategy,omitempty"`
	EnableWebSearch bool            `json:"enable_web_search,omitempty"`
}

// plan is a validated request, ready to run.
type plan struct {
	req      EnrichRequest
	schema   *schema.Schema
	doc      map[string]any
	whole    ports.Validator
	calls    []call
	choice   enrichment.Choice
	models   []model.Info
	autoPick *modelsel.Pick
}

type call struct {
	domain    enrichment.Domain
	validator ports.Validator
}

func (s *EnrichmentService) prepare(ctx context.Context, p *access.Principal, req EnrichRequest) (*plan, error) {
	var entity map[string]any
	if len(req.EntityData) == 0 || json.Unmarshal(req.EntityData, &entity) != nil || entity == nil {
		return nil, Invalid("entity_data", "entity_data must be a JSON object of the entity's known attributes")
	}
	if len(entity) == 0 {
		return nil, Invalid("entity_data", "entity_data must carry at least one attribute")
	}
	if req.SchemaID == "" {
		return nil, Invalid("schema_id", "schema_id is required")
	}
	strategy, err := enrichment.ParseStrategy(req.Strategy)
	if err != nil {
		return nil, Invalid("strategy", "%v", err)
	}
	models, pick, err := s.resolveModels(req)
	if err != nil {
		return nil, err
	}
	sc, err := s.Schemas.GetSchema(ctx, p.OrgID, req.SchemaID)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "schema %s not found", req.SchemaID)
	}
	if err != nil {
		return nil, err
	}
	pl := &plan{req: req, schema: sc, models: models, autoPick: pick}
	if err := json.Unmarshal(sc.Content, &pl.doc); err != nil {
		return nil, fmt.Errorf("stored schema %s does not decode: %w", sc.ID, err)
	}
	if pl.whole, err = s.compile(sc.Content); err != nil {
		return nil, coded(ports.ErrInvalid, "schema_invalid", "schema %s does not compile: %v", sc.ID, err)
	}
	domains, err := enrichment.Plan(pl.doc)
	if err != nil {
		return nil, coded(ports.ErrInvalid, "schema_invalid", "schema %s: %v", sc.ID, err)
	}
	pl.choice = enrichment.Choose(strategy, domains)
	for _, d := range enrichment.Calls(pl.choice.Strategy, pl.doc, domains) {
		raw, _ := json.Marshal(d.Schema)
		v, err := s.compile(raw)
		if err != nil {
			return nil, coded(ports.ErrInvalid, "schema_invalid", "expertise %s of schema %s does not compile: %v", d.Key, sc.ID, err)
		}
		pl.calls = append(pl.calls, call{domain: d, validator: v})
	}
	return pl, nil
}

// resolveModels merges models and model, resolves auto, and checks every key.
func (s *EnrichmentService) resolveModels(req EnrichRequest) ([]model.Info, *modelsel.Pick, error) {
	keys := append([]string(nil), req.Models...)
	field := "models"
	if req.Model != "" {
		keys = append(keys, req.Model)
		if len(req.Models) == 0 {
			field = "model"
		}
	}
	if len(keys) > MaxModels {
		return nil, nil, Invalid("models", "at most %d models per request", MaxModels)
	}
	seen := map[string]bool{}
	var out []model.Info
	var pick *modelsel.Pick
	for _, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if k == model.Auto {
			continue
		}
		key, err := model.ParseKey(k)
		if err != nil {
			return nil, nil, coded(ports.ErrInvalid, "invalid_model", "%s: %v", field, err)
		}
		m, err := s.Catalog.Model(key)
		if err != nil {
			return nil, nil, coded(ports.ErrInvalid, "invalid_model", "%s: unknown model %q; GET /api/enrichment/options lists them", field, k)
		}
		if req.EnableWebSearch && !m.WebSearch {
			return nil, nil, coded(ports.ErrInvalid, "model_lacks_capability", "%s: model %q cannot search the web", field, k)
		}
		out = append(out, m)
	}
	// Auto resolves to one model and never fuses: it is used only when no
	// explicit model is named.
	if len(out) == 0 {
		p, err := modelsel.Select(s.Catalog.Models(), "", modelsel.Needs{WebSearch: req.EnableWebSearch})
		if err != nil {
			return nil, nil, coded(ports.ErrInvalid, "no_capable_default_model", "no configured model satisfies the request (web search: %v)", req.EnableWebSearch)
		}
		pick = &p
		out = []model.Info{p.Model}
	}
	return out, pick, nil
}

// Start validates the request, creates the job and queues it. It returns the
// job id for the SSE stream.
func (s *EnrichmentService) Start(ctx context.Context, p *access.Principal, req EnrichRequest) (*job.Job, error) {
	pl, err := s.prepare(ctx, p, req)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(req)
	now := s.Clock.Now()
	j := &job.Job{ID: s.IDs.NewID(), OrgID: p.OrgID, Type: job.TypeEnrichment, State: job.Pending,
		Request: body, CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}
	if err := s.Jobs.CreateJob(ctx, j); err != nil {
		return nil, err
	}
	s.Hub.Open(j.ID, 0)
	if err := s.Runner.Submit(j.ID, j.OrgID, func(ctx context.Context) { s.run(ctx, j.ID, pl) }); err != nil {
		msg := "the server has no capacity for the job"
		if _, uerr := s.Jobs.UpdateJob(context.WithoutCancel(ctx), j.ID, func(j *job.Job) error {
			return j.Fail(job.CodeInternal, msg, s.Clock.Now())
		}); uerr == nil {
			s.Hub.Publish(context.WithoutCancel(ctx), j.ID, job.EventFailed, map[string]any{"status": "failed", "error_code": string(job.CodeInternal), "error_message": msg})
		}
		return nil, coded(ports.ErrCapacity, "capacity", "%s, try again shortly", msg)
	}
	s.Log.Info("enrichment queued", "job_id", j.ID, "org_id", p.OrgID, "schema_id", pl.schema.ID,
		"strategy", pl.choice.Strategy, "calls", len(pl.calls), "models", len(pl.models))
	return j, nil
}

// SyncResult is what the blocking variant returns.
type SyncResult struct {
	Job       *job.Job
	Result    map[string]any
	RecordID  string
	RecordIDs []string
	Cost      int64
}

// Sync runs an enrichment and waits for its end. When ctx ends first (the
// client went away, or the timeout passed) the job is cancelled and ctx's
// error is returned.
func (s *EnrichmentService) Sync(ctx context.Context, p *access.Principal, req EnrichRequest) (*SyncResult, error) {
	j, err := s.Start(ctx, p, req)
	if err != nil {
		return nil, err
	}
	var after int64
	for {
		evs, err := s.Hub.Wait(ctx, j.ID, after)
		if err != nil {
			reason := "client went away"
			if errors.Is(err, context.DeadlineExceeded) {
				reason = "timeout_seconds elapsed"
			}
			if _, cerr := s.JobSvc.Cancel(context.WithoutCancel(ctx), p, j.ID, reason); cerr != nil {
				s.Log.Debug("cancel after sync ended", "job_id", j.ID, "err", cerr)
			}
			return nil, err
		}
		for _, ev := range evs {
			after = ev.Seq
			if !ev.Type.Terminal() {
				continue
			}
			final, err := s.Jobs.GetJob(context.WithoutCancel(ctx), p.OrgID, j.ID)
			if err != nil {
				return nil, err
			}
			out := &SyncResult{Job: final}
			if ev.Type == job.EventCompleted {
				out.Result, _ = ev.Data["result"].(map[string]any)
				out.RecordID, _ = ev.Data["record_id"].(string)
				out.RecordIDs = stringsOf(ev.Data["record_ids"])
				out.Cost = int64Of(ev.Data["cost"])
			}
			return out, nil
		}
	}
}

// stringsOf and int64Of read payload values both as published here and as
// decoded from the durable log (JSON: []any, float64).
func stringsOf(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func int64Of(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case float64:
		return int64(t)
	}
	return 0
}

// outcome is one model's run.
type outcome struct {
	info      model.Info
	result    map[string]any
	recordID  string
	cost      int64
	inTokens  int
	outTokens int
	code      job.ErrorCode
	err       error
}

// run executes a job on a worker.
func (s *EnrichmentService) run(ctx context.Context, id string, pl *plan) {
	bg := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		// Cancelled while queued: by a client (the job is already
		// cancelled, so this does nothing) or by a shutdown.
		s.failIfRunning(bg, id, job.CodeShutdown, "the server stopped before the job started")
		return
	}
	if _, err := s.Jobs.UpdateJob(bg, id, func(j *job.Job) error { return j.Start(s.Clock.Now()) }); err != nil {
		if !errors.Is(err, job.ErrTransition) {
			s.Log.Error("start job", "job_id", id, "err", err)
		}
		return // cancelled before it started
	}
	pub := func(t job.EventType, data map[string]any) {
		data["status"] = string(job.Running)
		s.Hub.Publish(bg, id, t, data)
	}
	if pl.autoPick != nil {
		pub(job.EventModelAutoSelected, map[string]any{"model": pl.autoPick.Model.Key.String(), "task_type": "enrichment",
			"pinned": pl.autoPick.Pinned, "source": pl.autoPick.Source})
	}
	if enrichment.Strategy(pl.req.Strategy) == enrichment.Auto || pl.req.Strategy == "" {
		pub(job.EventStrategySelected, map[string]any{"strategy": string(pl.choice.Strategy), "requested": "auto",
			"reason": pl.choice.Reason, "signals": pl.choice.Signals})
	}

	outs := make([]outcome, len(pl.models))
	var wg sync.WaitGroup
	for i, m := range pl.models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = s.runModel(ctx, id, pl, m, pub)
		}()
	}
	wg.Wait()

	if ctx.Err() != nil {
		// Cancelled by the client (the job is already cancelled) or by a
		// shutdown (fail it so it does not stay running).
		s.failIfRunning(bg, id, job.CodeShutdown, "the server stopped while the job ran")
		return
	}
	var ok []outcome
	var failed []string
	for _, o := range outs {
		if o.err == nil {
			ok = append(ok, o)
		} else {
			failed = append(failed, o.info.Key.String())
		}
	}
	if len(ok) == 0 {
		first := outs[0]
		s.failIfRunning(bg, id, first.code, first.err.Error())
		return
	}
	var total int64
	var ids []string
	results := map[string]any{}
	for _, o := range ok {
		total += o.cost
		ids = append(ids, o.recordID)
		results[o.info.Key.String()] = o.result
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		pub(job.EventError, map[string]any{"error_message": fmt.Sprintf("%d of %d models failed", len(failed), len(outs)), "failed_models": failed})
	}
	res, _ := json.Marshal(ok[0].result)
	if _, err := s.Jobs.UpdateJob(bg, id, func(j *job.Job) error { return j.Complete(res, s.Clock.Now()) }); err != nil {
		if !errors.Is(err, job.ErrTransition) {
			s.Log.Error("complete job", "job_id", id, "err", err)
		}
		return
	}
	data := map[string]any{"status": string(job.Completed), "result": ok[0].result, "record_id": ok[0].recordID, "record_ids": ids, "cost": total}
	if len(pl.models) > 1 {
		data["results"] = results
		data["failed_models"] = failed
	}
	s.Hub.Publish(bg, id, job.EventCompleted, data)
	s.Log.Info("enrichment completed", "job_id", id, "records", len(ids), "cost", total)
}

// failIfRunning fails the job unless it already ended (for example a client
// cancelled it), and publishes error then failed.
func (s *EnrichmentService) failIfRunning(ctx context.Context, id string, code job.ErrorCode, msg string) {
	if _, err := s.Jobs.UpdateJob(ctx, id, func(j *job.Job) error { return j.Fail(code, msg, s.Clock.Now()) }); err != nil {
		if !errors.Is(err, job.ErrTransition) {
			s.Log.Error("fail job", "job_id", id, "err", err)
		}
		return
	}
	s.Hub.Publish(ctx, id, job.EventError, map[string]any{"status": string(job.Running), "error_message": msg, "error_code": string(code)})
	s.Hub.Publish(ctx, id, job.EventFailed, map[string]any{"status": string(job.Failed), "error_code": string(code), "error_message": msg})
	s.Log.Warn("enrichment failed", "job_id", id, "code", code, "err", msg)
}

func (s *EnrichmentService) runModel(ctx context.Context, jobID string, pl *plan, m model.Info, pub func(job.EventType, map[string]any)) outcome {
	key := m.Key.String()
	start := time.Now()
	pub(job.EventModelStarted, map[string]any{"model": key, "entity_index": 0, "strategy": string(pl.choice.Strategy),
		"total_expertises": len(pl.calls), "sandbox": m.Sandbox})
	type part struct {
		out      map[string]any
		in, outT int
		cost     int64
		code     job.ErrorCode
		err      error
	}
	parts := make([]part, len(pl.calls))
	par := s.CallParallelism
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	completed := 0
	var wg sync.WaitGroup
	for i, c := range pl.calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				parts[i] = part{code: job.CodeInternal, err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			t0 := time.Now()
			pub(job.EventExpertiseStarted, map[string]any{"model": key, "expertise": c.domain.Key, "expertise_key": c.domain.Key, "expertise_name": c.domain.Name})
			out, in, outT, code, err := s.callWithRetries(ctx, pl, m, c, pub)
			cost := m.Price.Cost(in, outT)
			parts[i] = part{out, in, outT, cost, code, err}
			mu.Lock()
			completed++
			n := completed
			mu.Unlock()
			if ctx.Err() != nil {
				return
			}
			data := map[string]any{"model": key, "expertise_key": c.domain.Key, "expertise_name": c.domain.Name,
				"completed_expertises": n, "total_expertises": len(pl.calls), "success": err == nil,
				"partial_result": out, "tokens": in + outT, "cost": cost, "processing_time_ms": time.Since(t0).Milliseconds()}
			if err != nil {
				data["error_message"] = err.Error()
				data["error_code"] = string(code)
			}
			pub(job.EventExpertiseCompleted, data)
		}()
	}
	wg.Wait()

	o := outcome{info: m}
	var outs []map[string]any
	var breakdown []map[string]any
	for i, p := range parts {
		o.cost += p.cost
		o.inTokens += p.in
		o.outTokens += p.outT
		breakdown = append(breakdown, map[string]any{"key": pl.calls[i].domain.Key, "name": pl.calls[i].domain.Name,
			"success": p.err == nil, "tokens": p.in + p.outT, "cost": p.cost})
		if p.err != nil && o.err == nil {
			o.err, o.code = fmt.Errorf("expertise %s: %w", pl.calls[i].domain.Key, p.err), p.code
		}
		outs = append(outs, p.out)
	}
	if ctx.Err() != nil {
		return outcome{info: m, err: ctx.Err(), code: job.CodeInternal}
	}
	if o.err == nil {
		o.result, o.err = s.finish(ctx, jobID, pl, m, outs, &o)
		if o.err != nil && o.code == "" {
			o.code = job.CodeOutputInvalid
		}
	}
	data := map[string]any{"model": key, "success": o.err == nil, "cost": o.cost, "input_tokens": o.inTokens,
		"output_tokens": o.outTokens, "processing_time_ms": time.Since(start).Milliseconds(), "expertise_breakdown": breakdown}
	if o.err == nil {
		data["result"], data["record_id"] = o.result, o.recordID
	} else {
		data["error_message"], data["error_code"] = o.err.Error(), string(o.code)
	}
	pub(job.EventModelCompleted, data)
	return o
}

// finish merges one model's parts, validates the whole, and stores the record.
func (s *EnrichmentService) finish(ctx context.Context, jobID string, pl *plan, m model.Info, parts []map[string]any, o *outcome) (map[string]any, error) {
	merged, err := enrichment.Merge(parts)
	if err != nil {
		return nil, err
	}
	if err := pl.whole.Validate(merged); err != nil {
		return nil, fmt.Errorf("merged output does not validate: %w", err)
	}
	out, _ := json.Marshal(merged)
	r := &enrichment.Record{ID: s.IDs.NewID(), OrgID: pl.schema.OrgID, Type: enrichment.RecordEnrichment, SchemaID: pl.schema.ID,
		JobID: jobID, Model: m.Key.String(), Strategy: pl.choice.Strategy, EntityData: pl.req.EntityData, StructuredOutput: out,
		Cost: o.cost, InputTokens: o.inTokens, OutputTokens: o.outTokens, Sandbox: m.Sandbox, CreatedAt: s.Clock.Now()}
	if err := s.Records.CreateRecord(context.WithoutCancel(ctx), r); err != nil {
		o.code = job.CodeInternal
		return nil, fmt.Errorf("store record: %w", err)
	}
	o.recordID = r.ID
	return merged, nil
}

// callWithRetries makes one expertise call, retrying an unusable answer with
// the problem fed back, and a transport failure after a pause, up to
// enrichment.MaxAttempts attempts.
func (s *EnrichmentService) callWithRetries(ctx context.Context, pl *plan, m model.Info, c call, pub func(job.EventType, map[string]any)) (map[string]any, int, int, job.ErrorCode, error) {
	msgs := enrichment.Prompt(pl.schema.Name, pl.req.EntityData, c.domain)
	var in, out int
	var reason string
	var lastErr error
	var code job.ErrorCode
	for attempt := 1; attempt <= enrichment.MaxAttempts; attempt++ {
		ev := map[string]any{"model": m.Key.String(), "expertise": c.domain.Key, "attempt": attempt, "max_attempts": enrichment.MaxAttempts}
		if attempt > 1 {
			ev["reason"] = reason
		}
		pub(job.EventAttempt, ev)
		resp, err := s.LLM.Generate(ctx, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: c.domain.Schema, SchemaName: c.domain.Key})
		in += resp.InputTokens
		out += resp.OutputTokens
		if err != nil {
			if ctx.Err() != nil {
				return nil, in, out, job.CodeInternal, ctx.Err()
			}
			lastErr, code = err, classify(err)
			reason = fmt.Sprintf("%s: %v", code, err)
			if !errors.Is(err, ports.ErrUnknownModel) && attempt < enrichment.MaxAttempts {
				backoff := s.RetryBackoff
				if backoff == 0 {
					backoff = 100 * time.Millisecond
				}
				select {
				case <-time.After(backoff * time.Duration(attempt)):
				case <-ctx.Done():
					return nil, in, out, job.CodeInternal, ctx.Err()
				}
				continue
			}
			if errors.Is(err, ports.ErrUnknownModel) {
				break
			}
			continue
		}
		ans, perr := enrichment.ParseAnswer(resp.Text)
		if perr == nil {
			perr = c.validator.Validate(ans)
		}
		if perr == nil {
			return ans, in, out, "", nil
		}
		lastErr, code = perr, job.CodeOutputInvalid
		reason = fmt.Sprintf("%s: %v", code, perr)
		msgs = enrichment.Retry(msgs, resp.Text, perr)
	}
	return nil, in, out, code, fmt.Errorf("%d attempts failed, last: %w", enrichment.MaxAttempts, lastErr)
}

// classify maps an LLM failure to its typed error code.
func classify(err error) job.ErrorCode {
	switch {
	case errors.Is(err, ports.ErrLLMTimeout), errors.Is(err, context.DeadlineExceeded):
		return job.CodeTimeout
	case errors.Is(err, ports.ErrRateLimited):
		return job.CodeRateLimited
	default:
		return job.CodeLLMUnavailable
	}
}
