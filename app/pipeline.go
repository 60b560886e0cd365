package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/ports"
)

// outcome is one model's run.
type outcome struct {
	info   model.Info
	result map[string]any
	// raw is result before the caller's preserved values are copied in
	// (what the schema validates; what fusion merges).
	raw       map[string]any
	record    *enrichment.Record
	cost      int64
	inTokens  int
	outTokens int
	// searches are the web-search tool calls of the model's parts.
	searches int
	code     job.ErrorCode
	err      error
}

// done is an expertise call that an earlier worker completed (from the
// job's prior events), so a resumed run does not pay for it again.
type done struct {
	out      map[string]any
	in, outT int
	searches int
	cost     int64
}

// resumeState reads what the prior events show done.
type resumeState struct {
	calls   map[string]done // by model + "/" + expertise key
	started map[job.EventType]bool
	models  map[string]bool // models whose model_started was written
	// completed are the models whose model_completed was written: a
	// resumed run announces them no more (clients count these events) and
	// calls a failed one no more.
	completed map[string]job.ModelCompleted
}

func readPrior(prior []job.Event) resumeState {
	rs := resumeState{calls: map[string]done{}, started: map[job.EventType]bool{}, models: map[string]bool{},
		completed: map[string]job.ModelCompleted{}}
	for _, ev := range prior {
		rs.started[ev.Type] = true
		switch ev.Type {
		case job.EventModelStarted:
			switch p := job.Inner(ev.Payload).(type) {
			case job.ModelStarted:
				rs.models[p.Model] = true
			case job.SchemaModelStarted:
				rs.models[p.Model] = true
			}
		case job.EventModelCompleted:
			if mc, err := job.ReadModelCompleted(ev); err == nil {
				rs.completed[mc.Model] = mc
			}
		case job.EventExpertiseCompleted:
			p, err := job.ReadExpertiseCompleted(ev)
			if err == nil && p.Success && p.PartialResult != nil {
				rs.calls[p.Model+"/"+p.Key] = done{out: p.PartialResult, in: p.InputTokens, outT: p.OutputTokens,
					searches: p.WebSearchCalls, cost: p.Cost}
			}
		}
	}
	return rs
}

// recordID is the id of a job's record for one model: the same for every
// worker that runs the job, so that a resumed run cannot store it twice.
func recordID(jobID string, m model.Key) string {
	h := sha256.Sum256([]byte(jobID + "/" + m.String()))
	return hex.EncodeToString(h[:16])
}

// Run runs an enrichment job for the job runtime: it reads the stored request,
// plans it again, and calls the models, skipping what prior events show done.
func (s *Enricher) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	pl, _ := w.Prepared.(*plan)
	if pl == nil {
		req, err := s.Requests.DecodeEnrich(w.Job.Request)
		if err != nil {
			return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: "the stored request does not decode"}}
		}
		if pl, err = s.prepare(ctx, w.Job.OrgID, req); err != nil {
			return unprepared(s.Log, err)
		}
	}
	pl.usage.bind(w)
	if f := pl.atts.load(ctx, s.Attachments); f != nil {
		return ports.Outcome{Failure: f}
	}
	out := s.run(s.Calls.withBudget(ctx), w, pl)
	out.Usage = pl.usage.take()
	return out
}

// unprepared fails a job whose stored request no longer plans (its schema
// was deleted or changed, or its provider has no usable key any more).
func unprepared(log *slog.Logger, err error) ports.Outcome {
	e, ok := AsError(err)
	if !ok {
		// A store's or an adapter's text stays in the log.
		log.Error("stored enrichment request does not plan", "err", err)
		return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: job.CodeInternal.Message()}}
	}
	code := job.CodeInternal
	switch e.Code {
	case "schema_invalid", "not_found", CodeInputContract:
		// A schema changed under a stored job so that its entity no
		// longer satisfies the contract: the schema, not the run, is at
		// fault.
		code = job.CodeSchemaInvalid
	case "no_usable_provider_key":
		code = job.CodeNoUsableKey
	case CodeTooManyCalls, quota.CodeCallsPerDay, quota.CodeTokensPerDay, string(job.CodeAttachmentNotFound):
		// attachment_not_found: a worker that takes the job over after an
		// attachment was deleted cannot read it again.
		code = job.ErrorCode(e.Code)
	}
	return ports.Outcome{Failure: &ports.Failure{Code: code, Msg: e.Detail}}
}

func (s *Enricher) run(ctx context.Context, w *ports.Work, pl *plan) ports.Outcome {
	rs := readPrior(w.Prior)
	pub := w.Publish
	if w.Tracker != nil {
		w.Tracker.SetTotalModels(len(pl.models))
	}
	if pl.autoPick != nil && !rs.started[job.EventModelAutoSelected] {
		pub(job.ModelAutoSelected{Model: pl.autoPick.Model.Key.String(), TaskType: "enrichment",
			Pinned: pl.autoPick.Pinned, Source: pl.autoPick.Source})
	}
	// The pre-flight classification (classification_model): a warning
	// verdict pauses the job until a continue (app/classify.go).
	cls, pause := s.preflight(ctx, w, pl)
	if pause != nil {
		return ports.Outcome{Pause: pause}
	}
	if ctx.Err() != nil {
		return ports.Outcome{} // the job runtime reads the cause
	}
	if (enrichment.Strategy(pl.req.Strategy) == enrichment.Auto || pl.req.Strategy == "") && !rs.started[job.EventStrategySelected] {
		pub(job.StrategySelected{Strategy: string(pl.choice.Strategy), Requested: "auto", Reason: pl.choice.Reason, Signals: pl.choice.Signals})
	}

	eo := s.enrichEntity(ctx, &entityRun{pl: pl, jobID: w.Job.ID, recKey: w.Job.ID, entity: pl.req.EntityData,
		fields: pl.entity, rs: rs, pub: pub, classification: cls})
	if ctx.Err() != nil {
		return ports.Outcome{} // the job runtime reads the cause
	}
	if eo.failure != nil {
		return ports.Outcome{Failure: eo.failure}
	}
	results := map[string]any{}
	for _, o := range eo.ok {
		results[o.info.Key.String()] = o.result
	}
	if len(eo.failed) > 0 {
		pub(job.SomeModelsFailed{Message: fmt.Sprintf("%d of %d models failed", len(eo.failed), len(eo.outs)), FailedModels: eo.failed})
	}
	data := job.JobCompleted{Result: eo.result, RecordID: eo.recordID, RecordIDs: eo.recordIDs, Cost: eo.cost,
		Several: len(pl.models) > 1, Results: results, FailedModels: eo.failed}
	records := eo.records
	// Auto-fusion: only when every requested model succeeded.
	if len(eo.failed) == 0 && len(eo.ok) >= 2 {
		if f := s.autoFuse(ctx, w, pl, eo.ok); f != nil {
			records = append(records, f.record)
			data.Result, data.RecordID, data.Fused = f.result.Merged, f.record.ID, true
			data.RecordIDs = append(data.RecordIDs, f.record.ID)
			data.Fusion, data.Cost = f.result.Summary, data.Cost+f.cost
			for _, o := range eo.ok {
				data.SourceModels = append(data.SourceModels, o.info.Key.String())
			}
			sort.Strings(data.SourceModels)
		}
		if ctx.Err() != nil {
			return ports.Outcome{}
		}
	}
	// The entity layer: decided and announced before completed, written
	// with the records.
	sync := s.syncEntity(ctx, pl.schema, pl.req.DatabaseSync, recordOf(records, data.RecordID), nil, pub)
	res, _ := json.Marshal(data.Result)
	s.Log.Info("enrichment finished", "job_id", w.Job.ID, "records", len(records), "cost", data.Cost, "fused", data.Fused)
	return ports.Outcome{Result: res, Records: records, Sync: sync.writes, Database: outcomes(sync), Completed: data}
}

// recordOf is the record of records with id id (nil: none).
func recordOf(records []*enrichment.Record, id string) *enrichment.Record {
	for _, r := range records {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// entityRun is one entity's enrichment within a job: the single
// enrichment's entity, or one entity of a batch.
type entityRun struct {
	pl *plan
	// jobID is the job's id; recKey derives the entity's record ids (the
	// job's id for a single enrichment, the job's and the entity's index
	// for a batch), so that a resumed run cannot store a record twice.
	jobID, recKey string
	// index is the entity's index in a batch (0 for a single enrichment).
	index  int
	entity json.RawMessage
	fields map[string]any
	// rs is what the job's prior events show done for this entity.
	rs  resumeState
	pub func(job.Payload)
	// classification is the pre-flight verdict, prepended to every
	// enrichment prompt (nil: none).
	classification *enrichment.Classification
}

// entityOutcome is one entity's enrichment: every model's outcome and what
// the entity's run produced.
type entityOutcome struct {
	outs []outcome // per model, in request order
	ok   []outcome
	// failed are the failed models' keys, sorted.
	failed    []string
	records   []*enrichment.Record
	recordIDs []string
	// result and recordID are the entity's result: the first successful
	// model's, in request order.
	result   map[string]any
	recordID string
	cost     int64
	// failure is set when every model failed.
	failure *ports.Failure
}

// enrichEntity runs every model of the plan on one entity, in parallel, and
// gathers their outcomes. Both the single enrichment and each entity of a
// batch run it.
func (s *Enricher) enrichEntity(ctx context.Context, er *entityRun) *entityOutcome {
	pl := er.pl
	outs := make([]outcome, len(pl.models))
	if len(pl.models) == 1 { // a lone model runs on this goroutine, as a lone call does
		outs[0] = s.runModel(ctx, er, pl.models[0])
	} else {
		var wg sync.WaitGroup
		for i, m := range pl.models {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = s.runModel(ctx, er, m)
			}()
		}
		wg.Wait()
	}
	eo := &entityOutcome{outs: outs}
	if ctx.Err() != nil {
		return eo
	}
	for _, o := range outs {
		if o.err == nil {
			eo.ok = append(eo.ok, o)
		} else {
			eo.failed = append(eo.failed, o.info.Key.String())
		}
	}
	if len(eo.ok) == 0 {
		eo.failure = &ports.Failure{Code: outs[0].code, Msg: outs[0].err.Error()}
		return eo
	}
	for _, o := range eo.ok {
		eo.cost += o.cost
		eo.recordIDs = append(eo.recordIDs, o.record.ID)
		eo.records = append(eo.records, o.record)
	}
	sort.Strings(eo.failed)
	eo.result, eo.recordID = eo.ok[0].result, eo.ok[0].record.ID
	return eo
}

func (s *Enricher) runModel(ctx context.Context, er *entityRun, m model.Info) outcome {
	pl, rs, pub := er.pl, er.rs, er.pub
	key := m.Key.String()
	start := time.Now()
	prior, ended := rs.completed[key]
	if ended && !prior.Success {
		// The model failed before the job was taken over: its failure
		// stands as announced, and its calls are not paid for again.
		return outcome{info: m, cost: prior.Cost, inTokens: prior.InputTokens, outTokens: prior.OutputTokens,
			code: prior.ErrorCode, err: &callError{msg: prior.ErrorMessage}}
	}
	if !rs.models[key] {
		pub(job.ModelStarted{Model: key, EntityIndex: er.index, Strategy: string(pl.choice.Strategy), Expertises: len(pl.calls), Sandbox: m.Sandbox})
	}
	parts, pending := priorParts(er, key)
	s.callParts(ctx, er, m, parts, pending)
	if ctx.Err() != nil {
		return outcome{info: m, err: ctx.Err(), code: job.CodeInternal}
	}
	o, outs, breakdown := sumParts(pl, m, parts)
	if o.err == nil {
		o.result, o.err = s.finish(ctx, er, m, outs, &o)
		if o.err != nil && o.code == "" {
			o.code = job.CodeOutputInvalid
		}
	}
	okParts := 0
	for _, p := range parts {
		if p.err == nil {
			okParts++
		}
	}
	mc := job.ModelCompleted{Model: key, Success: o.err == nil, PartialSuccess: o.err != nil && okParts > 0 && okParts < len(parts),
		Cost: o.cost, InputTokens: o.inTokens,
		OutputTokens: o.outTokens, ProcessingMS: time.Since(start).Milliseconds(), Breakdown: breakdown}
	if o.err == nil {
		mc.Result, mc.RecordID = o.result, o.record.ID
	} else {
		mc.ErrorMessage, mc.ErrorCode = o.err.Error(), o.code
	}
	if !ended {
		pub(mc)
	}
	return o
}

// modelPart is one expertise call's share of a model's answer.
type modelPart struct {
	out      map[string]any
	in, outT int
	searches int
	cost     int64
	code     job.ErrorCode
	err      error
}

// priorParts are the expertise calls of model key that the job's prior
// events show done, and the indices of the calls still to make.
func priorParts(er *entityRun, key string) (parts []modelPart, pending []int) {
	parts = make([]modelPart, len(er.pl.calls))
	for i, c := range er.pl.calls {
		if d, ok := er.rs.calls[key+"/"+c.domain.Key]; ok {
			parts[i] = modelPart{out: d.out, in: d.in, outT: d.outT, searches: d.searches, cost: d.cost}
			continue
		}
		pending = append(pending, i)
	}
	return parts, pending
}

// callParts makes model m's pending expertise calls into parts, up to
// CallParallelism (default 4) at once.
func (s *Enricher) callParts(ctx context.Context, er *entityRun, m model.Info, parts []modelPart, pending []int) {
	par := s.CallParallelism
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	completed := len(parts) - len(pending)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		completed++
		return completed
	}
	var wg sync.WaitGroup
	for _, i := range pending {
		call := func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				parts[i] = modelPart{code: job.CodeInternal, err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			parts[i] = s.callPart(ctx, er, m, er.pl.calls[i], count)
		}
		if len(pending) == 1 { // one call (single_pass): no goroutine to start and wait for
			call()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			call()
		}()
	}
	wg.Wait()
}

// callPart makes one expertise call of model m between its started and
// completed events; count numbers it among the model's completed calls.
func (s *Enricher) callPart(ctx context.Context, er *entityRun, m model.Info, c call, count func() int) modelPart {
	key := m.Key.String()
	t0 := time.Now()
	er.pub(job.ExpertiseStarted{Model: key, Key: c.domain.Key, Name: c.domain.Name})
	out, tokens, code, err := s.callWithRetries(ctx, er, m, c)
	in, outT := tokens.in, tokens.out
	cost := m.Price.CallCost(in, outT, tokens.searches)
	p := modelPart{out, in, outT, tokens.searches, cost, code, err}
	n := count()
	if ctx.Err() != nil {
		return p
	}
	done := job.ExpertiseCompleted{Model: key, Key: c.domain.Key, Name: c.domain.Name, Completed: n, Total: len(er.pl.calls),
		Success: err == nil, PartialResult: out, InputTokens: in, OutputTokens: outT, Cost: cost,
		ProcessingMS: time.Since(t0).Milliseconds(), WebSearchCalls: tokens.searches}
	if c := er.pl.keys[m.Key.Provider].current(); c != nil {
		done.KeySource = string(c.Source)
	}
	if err != nil {
		done.ErrorMessage, done.ErrorCode = err.Error(), code
	}
	er.pub(done)
	return p
}

// sumParts adds up a model's parts: its outcome's spend and first error,
// the parts' answers in order, and the per-expertise breakdown.
func sumParts(pl *plan, m model.Info, parts []modelPart) (outcome, []map[string]any, []job.Breakdown) {
	o := outcome{info: m}
	var outs []map[string]any
	var breakdown []job.Breakdown
	for i, p := range parts {
		o.cost += p.cost
		o.inTokens += p.in
		o.outTokens += p.outT
		o.searches += p.searches
		breakdown = append(breakdown, job.Breakdown{Key: pl.calls[i].domain.Key, Name: pl.calls[i].domain.Name,
			Success: p.err == nil, Tokens: p.in + p.outT, Cost: p.cost})
		if p.err != nil && o.err == nil {
			o.err, o.code = fmt.Errorf("expertise %s: %w", pl.calls[i].domain.Key, p.err), p.code
		}
		outs = append(outs, p.out)
	}
	return o, outs, breakdown
}

// finish merges one model's parts, validates the whole, and builds the
// record, which the job runtime stores with the job's end.
func (s *Enricher) finish(ctx context.Context, er *entityRun, m model.Info, parts []map[string]any, o *outcome) (map[string]any, error) {
	pl := er.pl
	merged, err := enrichment.Merge(parts)
	if err != nil {
		return nil, err
	}
	if err := pl.whole.Validate(merged); err != nil {
		return nil, fmt.Errorf("merged output does not validate: %w", err)
	}
	o.raw = merged
	if len(pl.preserve) > 0 {
		b, _ := json.Marshal(merged)
		_ = json.Unmarshal(b, &o.raw) // CopyPaths writes into merged
	}
	// The caller's preserved values, exactly as sent.
	merged = enrichment.CopyPaths(merged, er.fields, pl.preserve)
	out, _ := json.Marshal(merged)
	o.record = &enrichment.Record{ID: recordID(er.recKey, m.Key), OrgID: pl.usage.orgID, Type: enrichment.RecordEnrichment, SchemaID: pl.schema.ID,
		JobID: er.jobID, Model: m.Key.String(), Strategy: pl.choice.Strategy, EntityData: er.entity, StructuredOutput: out,
		Cost: o.cost, InputTokens: o.inTokens, OutputTokens: o.outTokens, WebSearchCalls: o.searches, Sandbox: m.Sandbox,
		CreatedAt: s.Clock.Now(), Attachments: pl.atts.refs()}
	s.resolveConcepts(ctx, pl, er.fields, o.record, merged)
	return merged, nil
}

// callError is an expertise call's failure: its text is built here from the
// code's fixed message (or the validator's account of the model's output),
// never from a provider's own words, which go to the log; the cause stays
// reachable for errors.Is.
type callError struct {
	msg   string
	cause error
}

func (e *callError) Error() string { return e.msg }
func (e *callError) Unwrap() error { return e.cause }

// attempts is how many times one expertise call is tried.
func (s *Enricher) attempts() int {
	if s.MaxAttempts > 0 {
		return s.MaxAttempts
	}
	return enrichment.DefaultMaxAttempts
}

// callWithRetries makes one expertise call, retrying an unusable answer with
// the problem fed back, and a transport failure after a pause, up to
// s.attempts() attempts. A failure that another try cannot mend (an unknown
// or retired model, a prompt too long for it) is not retried.
// callTokens is what a call's attempts spent: tokens, and web searches
// (billed each).
type callTokens struct{ in, out, searches int }

func (s *Enricher) callWithRetries(ctx context.Context, er *entityRun, m model.Info, c call) (map[string]any, callTokens, job.ErrorCode, error) {
	pl, pub := er.pl, er.pub
	msgs := enrichment.WithClassification(enrichment.WithLanguages(enrichment.PromptWith(pl.schema.Name, er.entity, c.domain, c.schema), pl.req.Languages),
		er.classification)
	msgs = pl.atts.prompt(msgs, m)
	max := s.attempts()
	var t callTokens
	var reason, public string
	var lastErr error
	var code job.ErrorCode
	for attempt := 1; attempt <= max; attempt++ {
		pub(job.Attempt{Model: m.Key.String(), Expertise: c.domain.Key, Attempt: attempt, MaxAttempts: max, Reason: reason})
		resp, err := s.Calls.generate(ctx, pl, m, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: c.domain.Schema, SchemaName: c.domain.Key,
			ResponseSchema: pl.req.responseSchema(), Strict: pl.req.EnableStrictStructuredOutput, OrgID: pl.usage.orgID,
			WebSearch: pl.req.EnableWebSearch,
			Queued: func() {
				pub(job.ProviderQueued{Model: m.Key.String(), Expertise: c.domain.Key, Provider: m.Key.Provider})
			}})
		t.in, t.out, t.searches = t.in+resp.InputTokens, t.out+resp.OutputTokens, t.searches+resp.Searches
		if err != nil {
			if ctx.Err() != nil {
				return nil, t, job.CodeInternal, ctx.Err()
			}
			lastErr, code = err, classify(err)
			public = code.Message()
			reason = fmt.Sprintf("%s: %s", code, public)
			s.Log.Warn("llm call failed", "model", m.Key.String(), "expertise", c.domain.Key, "attempt", attempt, "code", code, "err", err)
			if permanent(err) {
				break
			}
			if attempt < max {
				backoff := s.RetryBackoff
				if backoff == 0 {
					backoff = 100 * time.Millisecond
				}
				select {
				case <-time.After(backoff * time.Duration(attempt)):
				case <-ctx.Done():
					return nil, t, job.CodeInternal, ctx.Err()
				}
			}
			continue
		}
		ans, perr := enrichment.ParseAnswer(resp.Text)
		if perr == nil {
			perr = c.validator.Validate(ans)
		}
		if perr == nil {
			return ans, t, "", nil
		}
		// The validator's account names paths of the model's own output:
		// it is ours to show.
		lastErr, code = perr, job.CodeOutputInvalid
		public = fmt.Sprintf("%s: %v", code.Message(), perr)
		reason = fmt.Sprintf("%s: %v", code, perr)
		msgs = enrichment.Retry(msgs, resp.Text, perr)
	}
	return nil, t, code, &callError{msg: fmt.Sprintf("%d attempts failed, last: %s", max, public), cause: lastErr}
}
