package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/fetch"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Batch defaults (ENRICH_BATCH_MAX_ENTITIES, ENRICH_BATCH_CONCURRENCY).
const (
	DefaultBatchMaxEntities = fetch.DefaultMaxEntities // one limit for a batch and for a fetch of one
	DefaultBatchConcurrency = 8
)

// BatchRequest is the body of POST /api/batch/start (the reference's
// BatchEnrichmentRequest): the enrich request's fields, less entity_data,
// plus the entities. It is also the batch job's stored request.
type BatchRequest struct {
	EnrichRequest
	Entities []json.RawMessage
	// SelectedIndices, when set, enriches only the entities at these
	// indices.
	SelectedIndices []int
}

// BatchStarted is what starting a batch answers.
type BatchStarted struct {
	Job *job.Job
	// Total is the number of entities selected; Invalid lists those the
	// schema's input contract refuses (skipped, entity_skipped code
	// input_contract_unsatisfied).
	Total   int
	Invalid []InvalidEntity
}

// InvalidEntity is an entity of a batch that its schema's input contract
// refuses.
type InvalidEntity struct {
	Index  int
	Detail string
	Paths  []string
}

// batchPlan is a validated batch.
type batchPlan struct {
	req      BatchRequest
	pl       *plan
	selected []int
	fields   map[int]map[string]any
	invalid  map[int]*Error
}

func (s *Enricher) batchMax() int {
	return cmpInt(s.BatchMaxEntities, DefaultBatchMaxEntities)
}

func (s *Enricher) prepareBatch(ctx context.Context, orgID string, req BatchRequest) (*batchPlan, error) {
	if err := checkBatchFields(req); err != nil {
		return nil, err
	}
	n := len(req.Entities)
	switch {
	case n == 0:
		return nil, Invalid("entities", "entities must hold at least one entity")
	case n > s.batchMax():
		// The code batch/fetch answers past the same limit.
		return nil, coded(ports.ErrInvalid, CodeTooManyEntities, "entities: at most %d entities per batch, not %d (split the batch)", s.batchMax(), n).(*Error).at("entities")
	}
	bp := &batchPlan{req: req, fields: map[int]map[string]any{}, invalid: map[int]*Error{}}
	for i, raw := range req.Entities {
		field := fmt.Sprintf("entities.%d", i)
		if err := checkText(field, raw); err != nil {
			return nil, err
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return nil, Invalid(field, "%s must be a JSON object of the entity's known attributes", field)
		}
		if len(m) == 0 {
			return nil, Invalid(field, "%s must carry at least one attribute", field)
		}
		bp.fields[i] = m
	}
	if req.SelectedIndices == nil {
		for i := range n {
			bp.selected = append(bp.selected, i)
		}
	} else {
		if len(req.SelectedIndices) == 0 {
			return nil, Invalid("selected_indices", "selected_indices selects no entity; leave it out to enrich them all")
		}
		seen := map[int]bool{}
		for j, i := range req.SelectedIndices {
			field := fmt.Sprintf("selected_indices.%d", j)
			switch {
			case i < 0 || i >= n:
				return nil, Invalid(field, "%s: %d is not the index of an entity (0 to %d)", field, i, n-1)
			case seen[i]:
				return nil, Invalid(field, "%s: %d is listed twice", field, i)
			}
			seen[i] = true
			bp.selected = append(bp.selected, i)
		}
	}
	pl, err := s.prepareFor(ctx, orgID, req.EnrichRequest, true)
	if err != nil {
		return nil, err
	}
	bp.pl = pl
	var first error
	for _, i := range bp.selected {
		if err := s.checkEntity(pl, bp.fields[i]); err != nil {
			e, _ := AsError(err)
			e.Field = fmt.Sprintf("entities.%d", i)
			bp.invalid[i] = e
			if first == nil {
				first = e
			}
		}
	}
	if len(bp.invalid) == len(bp.selected) {
		return nil, first // nothing to enrich
	}
	return bp, nil
}

// checkBatchFields checks the fields of a batch request that are not its
// entities.
func checkBatchFields(req BatchRequest) error {
	if len(req.EntityData) > 0 && string(req.EntityData) != "null" {
		return Invalid("entity_data", "entity_data: a batch takes its entities in entities")
	}
	if req.PauseTimeoutSeconds != nil {
		return Invalid("pause_timeout_seconds", "pause_timeout_seconds: a batch never pauses (a confident classification mismatch skips the entity)")
	}
	return nil
}

// checkBatch checks everything of a batch request but its entities (which
// batch/fetch has yet to download): the fields, the schema (another
// organization's is not found), the models and the options, and the
// selection's form (its range needs the entities). Nothing is recorded.
func (s *Enricher) checkBatch(ctx context.Context, orgID string, req BatchRequest) error {
	if err := checkBatchFields(req); err != nil {
		return err
	}
	if req.SelectedIndices != nil && len(req.SelectedIndices) == 0 {
		return Invalid("selected_indices", "selected_indices selects no entity; leave it out to enrich them all")
	}
	seen := map[int]bool{}
	for j, i := range req.SelectedIndices {
		field := fmt.Sprintf("selected_indices.%d", j)
		switch {
		case i < 0 || i >= s.batchMax():
			return Invalid(field, "%s: %d is not the index of an entity (0 to %d at most)", field, i, s.batchMax()-1)
		case seen[i]:
			return Invalid(field, "%s: %d is listed twice", field, i)
		}
		seen[i] = true
	}
	_, err := s.checkPlan(ctx, orgID, req.EnrichRequest, true)
	return err
}

// checkEntity checks one entity of a batch against its plan's input
// contract, like prepare checks a single enrichment's.
func (s *Enricher) checkEntity(pl *plan, fields map[string]any) error {
	if _, err := checkContract(pl.contractDoc, fields); err != nil {
		return err
	}
	return s.checkPreserved(context.Background(), pl.checkDoc, fields, pl.preserve)
}

// preservePaths are a schema document's preserve paths.
func preservePaths(doc map[string]any) [][]string {
	c := schema.ContractOf(doc)
	var out [][]string
	for _, p := range c.Preserve {
		out = append(out, c.Path(p))
	}
	return out
}

// BatchService starts batches of enrichments (POST /api/batch/start) on the
// job runtime; its Enricher plans them and runs them (BatchRunner).
type BatchService struct {
	Enricher  *Enricher
	Requests  JobRequests
	JobRunner ports.JobRunner
	IDs       ports.IDs
	Log       *slog.Logger
}

// NewBatchService submits the batches enr runs to jr.
func NewBatchService(enr *Enricher, requests JobRequests, jr ports.JobRunner, ids ports.IDs, log *slog.Logger) *BatchService {
	return &BatchService{Enricher: enr, Requests: requests, JobRunner: jr, IDs: ids, Log: log}
}

// StartBatch validates a batch and creates its job.
func (s *BatchService) StartBatch(ctx context.Context, p *access.Principal, req BatchRequest) (*BatchStarted, error) {
	if err := access.Authorize(p, access.ActStartBatch); err != nil {
		return nil, err
	}
	bp, err := s.Enricher.prepareBatch(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	body, err := s.Requests.EncodeBatch(req)
	if err != nil {
		return nil, err
	}
	j, err := s.JobRunner.Submit(ctx, s.IDs.NewID(), p.OrgID, job.TypeBatchEnrichment, body, bp)
	if err != nil {
		return nil, err
	}
	out := &BatchStarted{Job: j, Total: len(bp.selected), Invalid: []InvalidEntity{}}
	for _, i := range bp.selected {
		if e := bp.invalid[i]; e != nil {
			out.Invalid = append(out.Invalid, InvalidEntity{Index: i, Detail: e.Detail, Paths: e.Paths})
		}
	}
	s.Log.Info("batch queued", "job_id", j.ID, "org_id", p.OrgID, "schema_id", bp.pl.schema.ID, "entities", len(bp.selected),
		"invalid", len(bp.invalid), "models", len(bp.pl.models))
	return out, nil
}

// CheckBatch checks a batch request before its entities are known
// (POST /api/batch/fetch checks before it downloads anything): the
// caller's role, the schema (another organization's is not found), the
// models, the options. StartBatch checks all of it again, with the
// entities.
func (s *BatchService) CheckBatch(ctx context.Context, p *access.Principal, req BatchRequest) error {
	if err := access.Authorize(p, access.ActStartBatch); err != nil {
		return err
	}
	return s.Enricher.checkBatch(ctx, p.OrgID, req)
}

// BatchRunner is the Runner of batch jobs.
func (s *Enricher) BatchRunner() ports.Runner { return batchRunner{s} }

type batchRunner struct{ s *Enricher }

func (r batchRunner) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	return r.s.runBatch(ctx, w)
}

// entityLabelKeys name an entity in its events, first found first.
var entityLabelKeys = []string{"name", "title", "label", "company_name", "full_name", "id"}

// entityLabel names entity i for people reading the events.
func entityLabel(fields map[string]any, i int) string {
	for _, k := range entityLabelKeys {
		switch v := fields[k].(type) {
		case string:
			if v = strings.TrimSpace(v); v != "" {
				if len(v) > 200 {
					v = v[:200]
				}
				return v
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return fmt.Sprintf("entity %d", i)
}

// entityReport is how one entity of a batch ended.
type entityReport struct {
	index     int
	label     string
	status    string // completed, failed or skipped
	code      string // a skip's code, or the failure's
	error     string
	recordID  string
	recordIDs []string
	records   []*enrichment.Record
	cost      int64
	sync      entitySync // the entity-layer decision on its final record
}

// Statuses of an entity in a batch's summary.
const (
	entityCompleted = "completed"
	entityFailed    = "failed"
	entitySkipped   = "skipped"
)

// priorBatch reads what a batch's prior events show ended: the entities'
// reports (with the records of the completed ones, rebuilt from their
// entity_completed events, which the job's end stores) and which events
// were written once per batch.
func (s *Enricher) priorBatch(bp *batchPlan, jobID string, prior []job.Event) (map[int]*entityReport, map[int][]job.Event, map[job.EventType]bool) {
	ended := map[int]*entityReport{}
	byEntity := map[int][]job.Event{}
	once := map[job.EventType]bool{}
	for _, ev := range prior {
		i, ok := job.EntityIndex(ev)
		if !ok {
			once[ev.Type] = true
			continue
		}
		byEntity[i] = append(byEntity[i], ev)
		switch ev.Type {
		case job.EventEntitySkipped:
			p, _ := job.PayloadOf[job.EntitySkipped](ev)
			code, reason := p.Code, p.Reason
			ended[i] = &entityReport{index: i, label: entityLabel(bp.fields[i], i), status: entitySkipped, code: code, error: reason}
		case job.EventEntityCompleted:
			p, err := job.ReadEntityCompleted(ev)
			if err != nil {
				continue
			}
			rep := &entityReport{index: i, label: entityLabel(bp.fields[i], i), status: entityFailed, code: string(p.ErrorCode),
				error: p.Error}
			if p.Success {
				rep.status = entityCompleted
			}
			for _, r := range p.Results {
				rep.cost += r.Cost
				if !r.Success || r.RecordID == "" {
					continue
				}
				out, _ := json.Marshal(r.Result)
				rep.records = append(rep.records, &enrichment.Record{ID: r.RecordID, OrgID: bp.pl.usage.orgID,
					Type: enrichment.RecordEnrichment, SchemaID: bp.pl.schema.ID, JobID: jobID, Model: r.Model,
					Strategy: enrichment.Strategy(r.Strategy), EntityData: bp.req.Entities[i], StructuredOutput: out, Cost: r.Cost,
					InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, WebSearchCalls: r.WebSearchCalls, Sandbox: r.Sandbox,
					CreatedAt: ev.CreatedAt, Attachments: bp.pl.atts.refs()})
				rep.recordIDs = append(rep.recordIDs, r.RecordID)
			}
			if len(rep.recordIDs) > 0 {
				rep.recordID = rep.recordIDs[0]
			}
			ended[i] = rep
		}
	}
	return ended, byEntity, once
}

// runBatch runs a batch job: at most BatchConcurrency entities at once, each
// through the single enrichment's run (enrichEntity), between entity_started
// and entity_completed. A resumed batch skips the entities its prior events
// show ended. A cancel stops new entities and the calls in flight; the job
// ends cancelled with the summary so far, and the records of the entities
// that completed are stored.
func (s *Enricher) runBatch(ctx context.Context, w *ports.Work) ports.Outcome {
	bp, _ := w.Prepared.(*batchPlan)
	if bp == nil {
		req, err := s.Requests.DecodeBatch(w.Job.Request)
		if err != nil {
			return ports.Outcome{Failure: &ports.Failure{Code: job.CodeInternal, Msg: "the stored request does not decode"}}
		}
		if bp, err = s.prepareBatch(ctx, w.Job.OrgID, req); err != nil {
			return unprepared(s.Log, err)
		}
	}
	pl := bp.pl
	pl.usage.bind(w)
	if f := pl.atts.load(ctx, s.Attachments); f != nil {
		return ports.Outcome{Failure: f}
	}
	out := s.batch(ctx, w, bp)
	out.Usage = pl.usage.take()
	return out
}

func (s *Enricher) batch(ctx context.Context, w *ports.Work, bp *batchPlan) ports.Outcome {
	t0 := time.Now()
	pl := bp.pl
	ended, byEntity, once := s.priorBatch(bp, w.Job.ID, w.Prior)
	if w.Tracker != nil {
		w.Tracker.SetTotalModels(len(pl.models) * len(bp.selected))
	}
	if !once[job.EventBatchStarted] {
		w.Publish(job.BatchStarted{Total: len(bp.req.Entities), Selected: len(bp.selected)})
	}
	if pl.autoPick != nil && !once[job.EventModelAutoSelected] {
		w.Publish(job.ModelAutoSelected{Model: pl.autoPick.Model.Key.String(), TaskType: "enrichment",
			Pinned: pl.autoPick.Pinned, Source: pl.autoPick.Source})
	}
	if (enrichment.Strategy(pl.req.Strategy) == enrichment.Auto || pl.req.Strategy == "") && !once[job.EventStrategySelected] {
		w.Publish(job.StrategySelected{Strategy: string(pl.choice.Strategy), Requested: "auto", Reason: pl.choice.Reason, Signals: pl.choice.Signals})
	}

	var mu sync.Mutex
	reports := map[int]*entityReport{}
	for i, r := range ended {
		r.sync = s.priorSync(ctx, bp.pl, r, byEntity[i])
		reports[i] = r
	}
	report := func(r *entityReport) {
		mu.Lock()
		reports[r.index] = r
		mu.Unlock()
	}
	sem := make(chan struct{}, cmpInt(s.BatchConcurrency, DefaultBatchConcurrency))
	var wg sync.WaitGroup
	for _, i := range bp.selected {
		if ended[i] != nil {
			continue
		}
		if e := bp.invalid[i]; e != nil {
			r := &entityReport{index: i, label: entityLabel(bp.fields[i], i), status: entitySkipped, code: job.SkipInputContract, error: e.Detail}
			w.Publish(job.OfEntity(job.EntitySkipped{Index: i, Label: r.label, Code: r.code, Reason: r.error, Paths: e.Paths}, i))
			report(r)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if r := s.batchEntity(ctx, w, bp, i, byEntity[i]); r != nil {
				report(r)
			}
		}()
	}
	wg.Wait()

	// Entities a cancel left unstarted or cut short are skipped.
	stopped := ""
	if ctx.Err() != nil {
		stopped = job.SkipCancelled
		for _, i := range bp.selected {
			if reports[i] == nil {
				r := &entityReport{index: i, label: entityLabel(bp.fields[i], i), status: entitySkipped, code: job.SkipCancelled,
					error: "the batch was cancelled before the entity finished"}
				w.Publish(job.OfEntity(job.EntitySkipped{Index: i, Label: r.label, Code: r.code, Reason: r.error}, i))
				reports[i] = r
			}
		}
	}
	summary, records, ids, cost := batchSummary(bp, reports, time.Since(t0))
	w.Publish(job.BatchCompleted{Summary: summary, StoppedEarlyReason: stopped})
	res, _ := json.Marshal(summary)
	s.Log.Info("batch finished", "job_id", w.Job.ID, "entities", len(bp.selected), "records", len(records), "stopped", stopped)
	writes, decided := batchSyncs(bp, reports)
	return ports.Outcome{Result: res, Records: records, Partial: stopped != "", Sync: writes, Database: decided,
		Completed: job.JobCompleted{Result: summary, RecordIDs: ids, Cost: cost}}
}

// batchEntity enriches one entity of a batch; nil when a cancel cut it
// short (the batch reports it skipped).
func (s *Enricher) batchEntity(ctx context.Context, w *ports.Work, bp *batchPlan, i int, prior []job.Event) *entityReport {
	t0 := time.Now()
	ctx = s.Calls.withBudget(ctx) // the call cap is per entity
	pl := bp.pl
	fields := bp.fields[i]
	label := entityLabel(fields, i)
	pub := func(p job.Payload) { w.Publish(job.OfEntity(p, i)) }
	rs := readPrior(prior)
	if !rs.started[job.EventEntityStarted] {
		pub(job.EntityStarted{Index: i, Label: label})
	}
	// Classification: never a pause in a batch. A confident mismatch skips
	// the entity; a softer verdict only informs the prompts.
	var cls *enrichment.Classification
	if pl.classifier != nil {
		c, ctxMap, done := priorClassification(prior, i)
		if !done {
			got := s.classifyEntity(ctx, pl, bp.req.Entities[i], pub)
			if ctx.Err() != nil {
				return nil
			}
			if got.verdict {
				c, ctxMap = &got.c, got.contextM
			}
		}
		if c != nil && c.ConfidentMismatch() {
			r := &entityReport{index: i, label: label, status: entitySkipped, code: job.SkipClassificationMismatch,
				error: fmt.Sprintf("the classification says the entity is %s, not what the schema describes", c.EntityDescription)}
			pub(job.EntitySkipped{Index: i, Label: label, Code: r.code, Reason: r.error, Classification: ctxMap})
			return r
		}
		cls = c
	}
	eo := s.enrichEntity(ctx, &entityRun{pl: pl, jobID: w.Job.ID, recKey: w.Job.ID + "/" + strconv.Itoa(i), index: i,
		entity: bp.req.Entities[i], fields: fields, rs: rs, pub: pub, classification: cls})
	if ctx.Err() != nil {
		return nil
	}
	// Auto-fusion per entity, as for a single enrichment: only when every
	// model succeeded.
	if eo.failure == nil && len(eo.failed) == 0 && len(eo.ok) >= 2 {
		idx := i
		if f := s.fuseEntity(ctx, w, pl, entityFusion{entity: bp.req.Entities[i], fields: fields, pub: pub, prior: prior, index: &idx}, eo.ok); f != nil {
			eo.records = append(eo.records, f.record)
			eo.recordIDs = append(eo.recordIDs, f.record.ID)
			eo.recordID, eo.result, eo.cost = f.record.ID, f.result.Merged, eo.cost+f.cost
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	r := &entityReport{index: i, label: label, status: entityCompleted, records: eo.records, recordIDs: eo.recordIDs,
		recordID: eo.recordID, cost: eo.cost}
	done := job.EntityCompleted{Index: i, Label: label, Success: eo.failure == nil, RecordID: eo.recordID,
		ProcessingMS: time.Since(t0).Milliseconds()}
	for _, o := range eo.outs {
		res := job.EntityResult{Model: o.info.Key.String(), Success: o.err == nil, Cost: o.cost, CostUSD: model.USD(o.cost),
			InputTokens: o.inTokens, OutputTokens: o.outTokens, Strategy: string(pl.choice.Strategy), Sandbox: o.info.Sandbox,
			WebSearchCalls: o.searches}
		if o.err == nil {
			res.Result, res.RecordID = o.result, o.record.ID
		} else {
			res.ErrorMessage, res.ErrorCode = o.err.Error(), string(o.code)
			r.cost += o.cost // a failed model's calls were paid too
		}
		done.Results = append(done.Results, res)
		done.Cost += o.cost
	}
	if eo.failure != nil {
		r.status, r.code, r.error = entityFailed, string(eo.failure.Code), eo.failure.Msg
		done.Error, done.ErrorCode = eo.failure.Msg, eo.failure.Code
	} else {
		// The entity layer: decided and announced before entity_completed.
		r.sync = s.syncEntity(ctx, pl.schema, pl.req.DatabaseSync, recordOf(eo.records, eo.recordID), &i, pub)
	}
	pub(done)
	return r
}

// batchSummary is a batch's terminal summary: the counts, and each selected
// entity's outcome with its record ids, in index order.
func batchSummary(bp *batchPlan, reports map[int]*entityReport, took time.Duration) (map[string]any, []*enrichment.Record, []string, int64) {
	var records []*enrichment.Record
	ids := []string{}
	var cost int64
	counts := map[string]int{}
	entities := make([]any, 0, len(bp.selected))
	for _, i := range bp.selected {
		r := reports[i]
		if r == nil {
			continue
		}
		counts[r.status]++
		cost += r.cost
		records = append(records, r.records...)
		ids = append(ids, r.recordIDs...)
		e := map[string]any{"entity_index": i, "entity_label": r.label, "status": r.status, "success": r.status == entityCompleted,
			"record_id": nil, "record_ids": append([]string{}, r.recordIDs...), "code": nil, "error": nil}
		if r.recordID != "" {
			e["record_id"] = r.recordID
		}
		if r.code != "" {
			e["code"] = r.code
		}
		if r.error != "" {
			e["error"] = r.error
		}
		entities = append(entities, e)
	}
	summary := map[string]any{"total_entities": len(bp.req.Entities), "selected_entities": len(bp.selected),
		"completed_entities": counts[entityCompleted], "failed_entities": counts[entityFailed],
		"skipped_entities": counts[entitySkipped], "record_ids": ids, "total_cost": cost, "total_cost_usd": model.USD(cost),
		"processing_time_ms": took.Milliseconds(), "entities": entities}
	return summary, records, ids, cost
}
