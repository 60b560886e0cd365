package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/sample"
	"github.com/entityenrich/enrich/ports"
)

// SampleGenerator generates sample objects of one entity type as a job:
// sample 1 fixes the field set and may pause the job on clarification
// questions; samples 2..N run in parallel and fill the same fields. It is
// the Runner of job.TypeSampleGeneration. Its LLM calls go through the
// shared Calls (provider keys, usage ledger).
type SampleGenerator struct {
	// Requests decodes the jobs' stored requests; Models resolves their
	// model; Calls makes the paid calls.
	Requests JobRequests
	Models   *ModelService
	Calls    *Calls
	Clock    ports.Clock
	IDs      ports.IDs
	Log      *slog.Logger
	// Parallelism bounds the concurrent calls of samples 2..N of one job
	// (default sample.DefaultParallel).
	Parallelism int
	// PauseTimeout is how long a clarification pause waits for a continue
	// unless the request says (default ports.DefaultPauseTimeout).
	PauseTimeout time.Duration
	// Attachments resolves and reads the jobs' attachment_ids (nil:
	// attachments are refused).
	Attachments *AttachmentLoader
}

// NewSampleGenerator runs sample generation jobs.
func NewSampleGenerator(requests JobRequests, models *ModelService, calls *Calls, clock ports.Clock, ids ports.IDs,
	log *slog.Logger, atts *AttachmentLoader) *SampleGenerator {
	return &SampleGenerator{Requests: requests, Models: models, Calls: calls, Clock: clock, IDs: ids, Log: log, Attachments: atts}
}

// MaxPauseTimeout bounds a request's pause_timeout_seconds.
const MaxPauseTimeout = 24 * time.Hour

// SampleRequest is the body of POST /api/schema/sample/generate/{stream,sync}
// (the reference's GenerateSampleRequest), also the job's stored request.
type SampleRequest struct {
	EntityType        string
	Fields            []string
	ExtraInstructions *string
	SampleCount       *int
	TypicalObjects    []string
	NamingConvention  string
	Language          *string
	EnableWebSearch   bool
	AutoAnswer        *bool
	Model             string
	AttachmentIDs     []string
	// PauseTimeoutSeconds (ours) bounds how long a clarification pause
	// waits for a continue (default ports.DefaultPauseTimeout).
	PauseTimeoutSeconds *int
	// AcceptLanguage is the request's Accept-Language primary language,
	// used when language is omitted or auto (a header, not part of the body;
	// the stored request keeps the language it resolved to).
	AcceptLanguage string
}

// samplePlan is a validated sample request.
type samplePlan struct {
	req        SampleRequest
	count      int
	convention sample.Convention
	language   string
	instances  []string
	model      model.Info
	autoPick   *modelsel.Pick
	timeout    time.Duration
	auto       bool
	// search: the calls use the model's web search tool (the request
	// asked, and the model can).
	search bool
	// atts are the attachments every sample call reads (nil: none).
	atts *jobAttachments
}

func (s *SampleGenerator) prepare(ctx context.Context, orgID string, req SampleRequest) (*samplePlan, error) {
	for _, c := range []struct {
		field string
		v     any
	}{{"entity_type", req.EntityType}, {"fields", req.Fields}, {"extra_instructions", deref(req.ExtraInstructions)},
		{"typical_objects", req.TypicalObjects}, {"language", deref(req.Language)}, {"model", req.Model}} {
		if err := checkText(c.field, c.v); err != nil {
			return nil, err
		}
	}
	pl := &samplePlan{req: req, count: 1}
	et := strings.TrimSpace(req.EntityType)
	if err := checkSampleShape(req, et, pl); err != nil {
		return nil, err
	}
	var err error
	if pl.language, err = sampleLanguage(req); err != nil {
		return nil, err
	}
	pl.timeout = cmpDuration(s.PauseTimeout, ports.DefaultPauseTimeout)
	if req.PauseTimeoutSeconds != nil {
		t := time.Duration(*req.PauseTimeoutSeconds) * time.Second
		if t < time.Second || t > MaxPauseTimeout {
			return nil, Invalid("pause_timeout_seconds", "pause_timeout_seconds must be 1 to %d", int(MaxPauseTimeout/time.Second))
		}
		pl.timeout = t
	}
	pl.auto = req.AutoAnswer != nil && *req.AutoAnswer
	if pl.atts, err = resolveAttachments(ctx, s.Attachments, orgID, req.AttachmentIDs); err != nil {
		return nil, err
	}
	if pl.atts.count() > 0 {
		// The documents are the sample: one, transcribed from them.
		pl.count = 1
	}
	if req.Model == "" || req.Model == model.Auto {
		p, err := s.Models.AutoPick(ctx, orgID, TaskSampleGeneration, pl.atts.needs(modelsel.Needs{WebSearch: req.EnableWebSearch}))
		if err != nil {
			return nil, err
		}
		pl.autoPick, pl.model = &p, p.Model
	} else if pl.model, err = s.Models.knownModelFor(ctx, orgID, "model", req.Model); err != nil {
		return nil, err
	} else if err := pl.atts.checkReadable("model", pl.model); err != nil {
		return nil, err
	}
	// The reference grounds a sample with web search only where the model
	// can search, and ignores the flag otherwise (WIRE.md, sample
	// generation); auto picks a model that can.
	pl.search = req.EnableWebSearch && modelsel.CanSearch(pl.model)
	pl.instances = sample.Instances(et, req.TypicalObjects, pl.count)
	return pl, nil
}

// checkSampleShape checks what a sample request asks for (the entity type
// et, the sample count, the fields, the typical objects, the instructions
// and the naming convention) and sets pl's count and convention.
func checkSampleShape(req SampleRequest, et string, pl *samplePlan) error {
	switch {
	case et == "":
		return Invalid("entity_type", "entity_type is required: what to sample (e.g. \"company\")")
	case len(et) > sample.MaxEntityType:
		return Invalid("entity_type", "entity_type: at most %d bytes", sample.MaxEntityType)
	}
	if req.SampleCount != nil {
		pl.count = *req.SampleCount
	}
	if pl.count < sample.MinCount || pl.count > sample.MaxCount {
		return Invalid("sample_count", "sample_count must be %d to %d, not %d", sample.MinCount, sample.MaxCount, pl.count)
	}
	if len(req.Fields) > sample.MaxFields {
		return Invalid("fields", "at most %d fields", sample.MaxFields)
	}
	seen := map[string]bool{}
	for i, f := range req.Fields {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || len(f) > sample.MaxFieldName:
			return Invalid(fmt.Sprintf("fields.%d", i), "fields.%d must have 1 to %d bytes", i, sample.MaxFieldName)
		case seen[f]:
			return Invalid(fmt.Sprintf("fields.%d", i), "fields: %q is listed twice", f)
		}
		seen[f] = true
	}
	if len(req.TypicalObjects) > pl.count {
		return Invalid("typical_objects", "typical_objects: at most sample_count (%d) entries, one per sample", pl.count)
	}
	for i, o := range req.TypicalObjects {
		if len(o) > sample.MaxInstance {
			return Invalid(fmt.Sprintf("typical_objects.%d", i), "typical_objects.%d: at most %d bytes", i, sample.MaxInstance)
		}
	}
	if len(deref(req.ExtraInstructions)) > sample.MaxInstructions {
		return Invalid("extra_instructions", "extra_instructions: at most %d bytes", sample.MaxInstructions)
	}
	var err error
	if pl.convention, err = sample.ParseConvention(req.NamingConvention); err != nil {
		return Invalid("naming_convention", "%v", err)
	}
	return nil
}

// sampleLanguage is the language of a sample request: the one it names,
// else its Accept-Language when enrichment knows it, else the default.
func sampleLanguage(req SampleRequest) (string, error) {
	switch lang := deref(req.Language); lang {
	case "", model.Auto:
		if _, ok := Languages[req.AcceptLanguage]; ok {
			return req.AcceptLanguage, nil
		}
		return DefaultLanguage, nil
	default:
		if _, ok := Languages[lang]; !ok {
			return "", coded(ports.ErrInvalid, "invalid_language", "language: unknown language %q; GET /api/enrichment/options lists the ISO 639-1 codes", lang).(*Error).at("language")
		}
		return lang, nil
	}
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// sampleState is what a run learns from the job's prior events.
type sampleState struct {
	roster, autoSelected bool
	done                 map[int]job.SampleInstanceProgress
	questions            []job.SampleQuestion // of the last pause
	pauses               int
}

func readSamplePrior(prior []job.Event) sampleState {
	st := sampleState{done: map[int]job.SampleInstanceProgress{}}
	for _, ev := range prior {
		switch ev.Type {
		case job.EventSampleInstanceRoster:
			st.roster = true
		case job.EventModelAutoSelected:
			st.autoSelected = true
		case job.EventSampleInstanceProgress:
			if p, err := job.ReadSampleInstanceProgress(ev); err == nil && p.Sample != nil {
				st.done[p.Index] = p
			}
		case job.EventSampleClarificationPause:
			if p, err := job.ReadSampleClarificationPause(ev); err == nil {
				st.questions = p.Questions
			}
			st.pauses++
		}
	}
	return st
}

// sampleRun is one run of a sample job.
type sampleRun struct {
	s     *SampleGenerator
	pl    *samplePlan
	calls *plan // keys and usage of the run's calls
	mu    sync.Mutex
	in    int
	out   int
	cost  int64
}

// Run runs a sample generation job for the job runtime.
func (s *SampleGenerator) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	ctx = s.Calls.withBudget(ctx)
	pl, _ := w.Prepared.(*samplePlan)
	if pl == nil {
		req, err := s.Requests.DecodeSample(w.Job.Request)
		if err != nil {
			return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: "the stored request does not decode"}}
		}
		if pl, err = s.prepare(ctx, w.Job.OrgID, req); err != nil {
			return unprepared(s.Log, err)
		}
	}
	keys, err := s.Calls.pickKeys(ctx, w.Job.OrgID, []model.Info{pl.model})
	if err != nil {
		return unprepared(s.Log, err)
	}
	if f := pl.atts.load(ctx, s.Attachments); f != nil {
		return ports.Outcome{Failure: f}
	}
	r := &sampleRun{s: s, pl: pl, calls: &plan{keys: keys, atts: pl.atts}}
	r.calls.usage.bind(w)
	out := r.run(ctx, w)
	out.Usage = r.calls.usage.take()
	return out
}

func (r *sampleRun) run(ctx context.Context, w *ports.Work) ports.Outcome {
	t0 := time.Now()
	pl := r.pl
	st := readSamplePrior(w.Prior)
	if w.Tracker != nil {
		w.Tracker.SetTotalModels(1)
	}
	if pl.autoPick != nil && !st.autoSelected {
		w.Publish(job.ModelAutoSelected{Model: pl.model.Key.String(), TaskType: TaskSampleGeneration,
			Pinned: pl.autoPick.Pinned, Source: pl.autoPick.Source})
	}
	if !st.roster {
		w.Publish(job.SampleInstanceRoster{Instances: pl.instances})
	}
	// Two or more attachments: do they describe one thing?
	if _, f := pl.atts.cohere(ctx, r.s.Calls, r.calls, pl.model, strings.TrimSpace(pl.req.EntityType), w.Prior, w.Publish); f != nil {
		return ports.Outcome{Failure: f}
	}
	for _, d := range st.done {
		r.add(d.InputTokens, d.OutputTokens, d.Cost)
	}
	base := sample.Params{EntityType: strings.TrimSpace(pl.req.EntityType), Fields: pl.req.Fields, Convention: pl.convention,
		Language: pl.language, Total: pl.count, ExtraInstructions: deref(pl.req.ExtraInstructions)}
	// Clarifications settled so far: a continue's answers to the last
	// pause's questions (unanswered ones take their defaults).
	var applied job.Answers
	if w.Continued && len(st.questions) > 0 {
		base.Questions, base.Answers = st.questions, sample.Resolve(st.questions, w.Answers)
		applied = base.Answers
	}
	var mu sync.Mutex
	completed := len(st.done)
	progress := func(p job.SampleInstanceProgress) {
		mu.Lock()
		defer mu.Unlock()
		completed++
		p.Completed, p.Total = completed, pl.count
		w.Publish(p)
	}
	first, ok := st.done[0]
	if !ok {
		p := base
		p.Index, p.Instance = 0, pl.instances[0]
		p.AskQuestions = !w.Continued && st.pauses == 0
		ans, usage, err := r.call(ctx, p)
		if err != nil {
			return r.failed(err)
		}
		if p.AskQuestions && len(ans.Questions) > 0 {
			if !pl.auto {
				mode := sample.SourceDescribe
				if pl.atts.count() > 0 {
					mode = sample.SourceTranscribe
				}
				return ports.Outcome{Pause: &ports.Pause{Timeout: pl.timeout, Event: job.SampleClarificationPause{
					EntityTitle: base.EntityType, Questions: ans.Questions, Round: st.pauses,
					SourceMode: mode, TimeoutSeconds: int(pl.timeout / time.Second)}}}
			}
			// auto_answer: the defaults, which sample 1 already assumed.
			base.Questions, base.Answers = ans.Questions, sample.Resolve(ans.Questions, nil)
			applied = base.Answers
		}
		first = job.SampleInstanceProgress{Index: 0, Instance: pl.instances[0], Sample: ans.Sample,
			InputTokens: usage.in, OutputTokens: usage.out, Cost: usage.cost}
		progress(first)
	}
	fields := sample.FieldSet(first.Sample, pl.req.Fields, pl.convention)
	results, err := r.others(ctx, st, base, fields, first.Sample, progress)
	if err != nil {
		return r.failed(err)
	}
	return r.completed(w, t0, results, fields, applied)
}

// others generates samples 2..N of the run (those its prior events do not
// show done), in parallel, on the field set of the first; results holds
// every sample in order.
func (r *sampleRun) others(ctx context.Context, st sampleState, base sample.Params, fields []string, first map[string]any,
	progress func(job.SampleInstanceProgress)) ([]map[string]any, error) {
	pl := r.pl
	results := make([]map[string]any, pl.count)
	results[0] = first
	errs := make([]error, pl.count)
	sem := make(chan struct{}, cmpInt(r.s.Parallelism, sample.DefaultParallel))
	var wg sync.WaitGroup
	for i := 1; i < pl.count; i++ {
		if d, ok := st.done[i]; ok {
			results[i] = d.Sample
			continue
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := base
			p.Index, p.Instance, p.FieldSet = i, pl.instances[i], fields
			ans, usage, err := r.call(ctx, p)
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = ans.Sample
			progress(job.SampleInstanceProgress{Index: i, Instance: pl.instances[i], Sample: ans.Sample,
				InputTokens: usage.in, OutputTokens: usage.out, Cost: usage.cost})
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// completed ends the run with its samples: the samples' model_completed
// event and the job's result.
func (r *sampleRun) completed(w *ports.Work, t0 time.Time, results []map[string]any, fields []string, applied job.Answers) ports.Outcome {
	pl := r.pl
	note := fmt.Sprintf("%d of %d samples generated", pl.count, pl.count)
	if len(applied) > 0 {
		how := "with the answers given"
		if !w.Continued {
			how = "with their default answers (auto_answer)"
		}
		note += fmt.Sprintf("; %d clarification question(s) settled %s", len(applied), how)
	}
	r.mu.Lock()
	in, out, cost := r.in, r.out, r.cost
	r.mu.Unlock()
	took := time.Since(t0).Milliseconds()
	w.Publish(job.SamplesCompleted{Model: pl.model.Key.String(), Samples: results, Requested: pl.count, Note: note,
		InputTokens: in, OutputTokens: out, Cost: cost, ProcessingMS: took, Applied: applied})
	res := map[string]any{"success": true, "samples": results, "samples_requested": pl.count, "samples_note": note,
		"model": pl.model.Key.String(), "fields": fields, "clarifications": answersMap(applied),
		"input_tokens": in, "output_tokens": out, "cost": cost, "cost_usd": model.USD(cost)}
	body, _ := json.Marshal(res)
	return ports.Outcome{Result: body, Completed: job.JobCompleted{Result: res, Cost: cost}}
}

func answersMap(a job.Answers) map[string]any {
	out := map[string]any{}
	for id, x := range a {
		out[id] = map[string]any{"option_ids": x.OptionIDs, "text": x.Text}
	}
	return out
}

func cmpInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func (r *sampleRun) add(in, out int, cost int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.in, r.out, r.cost = r.in+in, r.out+out, r.cost+cost
}

type callUsage struct {
	in, out int
	cost    int64
}

// callFailure is a sample call that failed for good.
type callFailure struct {
	code job.ErrorCode
	msg  string
}

func (f *callFailure) Error() string { return f.msg }

// call makes one sample call, retrying an unusable answer with the problem
// fed back (up to sample.MaxRetries tries) and a transport failure after a
// short wait.
func (r *sampleRun) call(ctx context.Context, p sample.Params) (sample.Answer, callUsage, error) {
	msgs := r.pl.atts.prompt(sample.Prompt(p), r.pl.model)
	schema := sample.AnswerSchema(p)
	var u callUsage
	m := r.pl.model
	var last error
	for attempt := 1; attempt <= sample.MaxRetries; attempt++ {
		resp, err := r.s.Calls.generate(ctx, r.calls, m, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: schema,
			SchemaName: "sample", ResponseSchema: true, Task: ports.TaskSampleGeneration, WebSearch: r.pl.search})
		if err == nil {
			c := m.Price.CallCost(resp.InputTokens, resp.OutputTokens, resp.Searches)
			u.in, u.out, u.cost = u.in+resp.InputTokens, u.out+resp.OutputTokens, u.cost+c
			r.add(resp.InputTokens, resp.OutputTokens, c)
		}
		switch {
		case ctx.Err() != nil:
			return sample.Answer{}, u, ctx.Err()
		case err != nil && permanent(err):
			return sample.Answer{}, u, &callFailure{classify(err), sampleFailure(classify(err), p.Index)}
		case err != nil:
			last = &callFailure{classify(err), sampleFailure(classify(err), p.Index)}
			select {
			case <-time.After(100 * time.Millisecond * time.Duration(attempt)):
			case <-ctx.Done():
				return sample.Answer{}, u, ctx.Err()
			}
			continue
		}
		ans, problem := parseSampleAnswer(resp.Text, p)
		if problem == nil {
			return ans, u, nil
		}
		last = &callFailure{job.CodeOutputInvalid, fmt.Sprintf("sample %d: %s: %v", p.Index+1, job.CodeOutputInvalid.Message(), problem)}
		msgs = enrichment.Retry(msgs, resp.Text, problem)
	}
	return sample.Answer{}, u, last
}

func sampleFailure(code job.ErrorCode, index int) string {
	return fmt.Sprintf("sample %d: %s", index+1, code.Message())
}

// parseSampleAnswer reads and checks a sample call's answer.
func parseSampleAnswer(text string, p sample.Params) (sample.Answer, error) {
	var ans sample.Answer
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &ans); err != nil {
		return ans, errors.New("the answer is not a JSON object")
	}
	if len(ans.Sample) == 0 {
		return ans, errors.New("sample: an object with at least one field is required")
	}
	if len(p.FieldSet) > 0 {
		fit, err := sample.Fit(ans.Sample, p.FieldSet)
		if err != nil {
			return ans, err
		}
		ans.Sample = fit
	}
	if !p.AskQuestions {
		ans.Questions = nil
	}
	if err := sample.CheckQuestions(ans.Questions); err != nil {
		return ans, err
	}
	return ans, nil
}

// failed ends the run on a call that failed for good.
func (r *sampleRun) failed(err error) ports.Outcome {
	var f *callFailure
	if errors.As(err, &f) {
		return ports.Outcome{Failure: &ports.Failure{Code: f.code, Msg: f.msg}}
	}
	return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: job.CodeInternal.Message()}}
}
