package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/fusion"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/ports"
)

// Fuser merges several models' records of one entity into a fused record:
// the field rules of domain/fusion, and an arbiter model's call for the
// conflicts they leave. Enrichment fuses its models' answers with it
// (auto-fusion), and merge jobs fuse stored records.
type Fuser struct {
	Models *ModelService
	Calls  *Calls
	Clock  ports.Clock
	Log    *slog.Logger
}

// NewFuser fuses with the models of models and the calls of calls.
func NewFuser(models *ModelService, calls *Calls, clock ports.Clock, log *slog.Logger) *Fuser {
	return &Fuser{Models: models, Calls: calls, Clock: clock, Log: log}
}

// fuseSource is one model's record that a fusion merges.
type fuseSource struct {
	record *enrichment.Record
	result map[string]any
	info   model.Info
}

// fusionRun is what one fusion needs: the sources, the schema they answer
// (localized, so multilingual fields are known), the arbiter asked for,
// and where its events and ledger entries go.
type fusionRun struct {
	orgID, jobID string
	recordID     string
	doc          map[string]any
	validator    ports.Validator // nil: no validation
	primary      string
	strategy     enrichment.Strategy
	entity       json.RawMessage
	schemaID     string
	sources      []fuseSource
	arbiter      *model.Info
	pub          func(job.Payload)
	prior        []job.Event
	// entityIndex is the entity's index in a batch (nil: not a batch).
	entityIndex *int
	// atts are what the arbiter reads (a merge's attachment_ids; nil:
	// none), loaded.
	atts *jobAttachments
}

// fused is a fusion's outcome.
type fused struct {
	record   *enrichment.Record
	result   fusion.Result
	arbiter  string // the model an arbitration call ran on ("" none)
	keySrc   string
	cost     int64
	in, outT int
	warnings []string
}

// fusionRecordID is the id of the record fusing sources in a job: the same
// for every worker that runs the job, and distinct per fused set (a batch
// fuses once per entity).
func fusionRecordID(jobID string, sources []fuseSource) string {
	ids := make([]string, len(sources))
	for i, s := range sources {
		ids[i] = s.record.ID
	}
	sort.Strings(ids)
	h := sha256.Sum256([]byte(jobID + "/fusion/" + strings.Join(ids, "/")))
	return hex.EncodeToString(h[:16])
}

// priorFusion reads what earlier workers of the job published about its
// fusion: which events were written, and the arbiter's successful
// decisions (reused, not paid again).
type priorFusion struct {
	started   map[job.EventType]bool
	decisions []job.Decision
	arbiter   string
	cost      int64
	in, outT  int
}

func readPriorFusion(prior []job.Event) priorFusion {
	pf := priorFusion{started: map[job.EventType]bool{}}
	for _, ev := range prior {
		pf.started[ev.Type] = true
		if ev.Type == job.EventArbitrationCompleted {
			p, err := job.ReadArbitrationCompleted(ev)
			if err == nil && p.Success {
				pf.decisions, pf.arbiter, pf.cost, pf.in, pf.outT = p.Decisions, p.Model, p.Cost, p.InputTokens, p.OutputTokens
			}
		}
	}
	return pf
}

// fuse merges the sources by the rules (domain/fusion), asks an arbiter
// when one is requested (or when numbers disagree wildly, an automatically
// selected one), validates the merge and builds the fused record. Its
// ledger entries go to log. An error means no fused record.
func (s *Fuser) fuse(ctx context.Context, fr fusionRun, log *usageLog) (*fused, error) {
	t0 := time.Now()
	pf := readPriorFusion(fr.prior)
	ids := make([]string, len(fr.sources))
	cands := make([]fusion.Candidate, len(fr.sources))
	for i, src := range fr.sources {
		ids[i] = src.record.ID
		cands[i] = fusion.Candidate{Model: src.info.Key.String(), Value: src.result,
			OutputPrice: src.info.Price.OutputPerMTok, InputPrice: src.info.Price.InputPerMTok}
	}
	arbName := ""
	if fr.arbiter != nil {
		arbName = fr.arbiter.Key.String()
	}
	if !pf.started[job.EventFusionStarted] {
		fr.pub(job.FusionStarted{SourceRecordIDs: ids, ArbitrationModel: arbName, EntityIndex: fr.entityIndex})
	}
	res := fusion.Fuse(cands, fusion.Options{Schema: fr.doc, Primary: fr.primary})
	if !pf.started[job.EventConflictsDetected] {
		fr.pub(job.ConflictsDetected{Agreed: res.Summary.AgreedFields, Conflicted: res.Summary.ConflictedFields, Total: res.Summary.TotalFields})
	}
	out := &fused{result: res}
	if arbName != "" {
		// A requested arbiter is named in the summary even when its call
		// fails (method rule_based then says the rules stood).
		out.result.Summary.ArbitrationModel = arbName
	}
	conflicts := fusion.Arbitrable(res)
	arbiter, escalated := fr.arbiter, false
	if arbiter == nil && fusion.Escalate(res) {
		var wild []fusion.Conflict
		for _, c := range conflicts {
			if c.Wild {
				wild = append(wild, c)
			}
		}
		if p, err := s.Models.AutoPick(ctx, fr.orgID, TaskEnrichment, fr.atts.needs(modelsel.Needs{})); err == nil {
			arbiter, escalated, conflicts = &p.Model, true, wild
		} else {
			s.Log.Info("no arbiter for wildly disagreeing numbers: the rules stand", "job_id", fr.jobID, "err", err)
		}
	}
	if arbiter != nil && len(conflicts) > 0 {
		s.arbitrateInto(ctx, fr, pf, *arbiter, escalated, conflicts, out, log)
	}
	if err := validFused(fr, res, out); err != nil {
		return nil, err
	}
	out.record = s.fusedRecord(fr, cands, out)
	fr.pub(job.FusionCompleted{Success: true, Merged: out.result.Annotated(), Report: out.result.Report, Summary: out.result.Summary,
		Provenance: out.result.Provenance, RecordID: out.record.ID, Cost: out.cost, InputTokens: out.in, OutputTokens: out.outT,
		ProcessingMS: time.Since(t0).Milliseconds(), ValidationWarnings: out.warnings, ArbiterUsed: out.arbiter, KeySource: out.keySrc,
		EntityIndex: fr.entityIndex})
	return out, nil
}

// validFused validates the fused result against the schema: when an
// arbitrated merge does not validate, the rules' merge res stands instead
// (with a warning); an error when that does not validate either.
func validFused(fr fusionRun, res fusion.Result, out *fused) error {
	if fr.validator == nil {
		return nil
	}
	if err := fr.validator.Validate(out.result.Merged); err != nil {
		if out.result.Summary.Method == fusion.MethodLLM {
			// The arbiter's choice broke the schema: the rules stand.
			out.warnings = append(out.warnings, fmt.Sprintf("the arbitrated merge does not validate (%v): the rules stand", err))
			out.result = res
		}
		if err := fr.validator.Validate(out.result.Merged); err != nil {
			return fmt.Errorf("the fused result does not validate: %w", err)
		}
	}
	return nil
}

// fusedRecord is the fused record of out: its sources in the rules' order
// of cands, sandbox only when every source (and the arbiter) was.
func (s *Fuser) fusedRecord(fr fusionRun, cands []fusion.Candidate, out *fused) *enrichment.Record {
	merged, _ := json.Marshal(out.result.Merged)
	sources := make([]enrichment.FusionSource, 0, len(fr.sources))
	ordered := fusion.Ordered(cands)
	byModel := map[string]string{}
	sandbox := true
	for _, src := range fr.sources {
		byModel[src.info.Key.String()] = src.record.ID
		sandbox = sandbox && src.record.Sandbox
	}
	for _, c := range ordered {
		sources = append(sources, enrichment.FusionSource{RecordID: byModel[c.Model], ModelName: c.Model})
	}
	recModel := ""
	if out.arbiter != "" {
		recModel = out.arbiter
		if k, err := model.ParseKey(out.arbiter); err == nil {
			sandbox = sandbox && k.Provider == "sandbox"
		}
	}
	return &enrichment.Record{ID: fr.recordID, OrgID: fr.orgID, Type: enrichment.RecordFusion, SchemaID: fr.schemaID,
		JobID: fr.jobID, Model: recModel, Strategy: fr.strategy, EntityData: fr.entity, StructuredOutput: merged,
		Cost: out.cost, InputTokens: out.in, OutputTokens: out.outT, Sandbox: sandbox, CreatedAt: s.Clock.Now(),
		Attachments: fr.atts.refs(), Fusion: &enrichment.Fusion{Sources: sources, Provenance: out.result.Provenance, Summary: out.result.Summary,
			Report: out.result.Report, ArbitrationCost: out.cost}}
}

// arbitrationSchema is what the arbiter answers: one decision per
// conflicting field, choosing one of the candidates.
var arbitrationSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decisions": map[string]any{"type": "array", "items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":   map[string]any{"type": "string"},
				"value":  map[string]any{},
				"reason": map[string]any{"type": "string"},
			},
			"required": []any{"path", "value"},
		}},
	},
	"required": []any{"decisions"},
}

// ArbitrationMarker precedes the conflicts (JSON) in the arbiter's prompt.
const ArbitrationMarker = "Conflicting fields:"

// arbitrationPrompt shows the arbiter only the conflicting fields, each
// with its candidates by model.
func arbitrationPrompt(conflicts []fusion.Conflict) []enrichment.Message {
	b := fusion.ArbiterView(conflicts)
	return []enrichment.Message{
		{Role: "system", Content: "You are an arbiter. Several models answered the same fields of one entity and disagree. " +
			"For each conflicting field choose the most plausible value; the value must be exactly one of the candidates. " +
			`Answer a JSON object {"decisions":[{"path":..., "value":..., "reason":...}]} with one decision per field.`},
		{Role: "user", Content: ArbitrationMarker + "\n" + string(b)},
	}
}

// arbitrateInto makes the arbiter's one call (or reuses the decisions an
// earlier worker of the job got) and applies its decisions; when the call
// fails or its answer is unusable, the rules stand.
func (s *Fuser) arbitrateInto(ctx context.Context, fr fusionRun, pf priorFusion, m model.Info, escalated bool,
	conflicts []fusion.Conflict, out *fused, log *usageLog) {
	key := m.Key.String()
	if pf.decisions != nil && pf.arbiter == key {
		if applied, err := fusion.Apply(out.result, decisionMap(pf.decisions), key); err == nil {
			out.result, out.arbiter, out.cost, out.in, out.outT = applied, key, pf.cost, pf.in, pf.outT
			return
		}
	}
	if !pf.started[job.EventArbitrationStarted] {
		fr.pub(job.ArbitrationStarted{Model: key, Conflicts: len(conflicts), Escalated: escalated})
	}
	done := job.ArbitrationCompleted{Model: key, Fallback: true}
	out.arbiter = key
	out.result.Summary.ArbitrationModel = key
	defer func() { fr.pub(done) }()
	keys, err := s.Calls.pickKeys(ctx, fr.orgID, []model.Info{m})
	if err != nil {
		done.ErrorMessage = "no usable provider key for the arbiter: the rules stand"
		return
	}
	calls := &plan{keys: keys}
	calls.usage.orgID, calls.usage.jobID = fr.orgID, fr.jobID
	defer func() {
		for _, e := range calls.usage.take() {
			e.Task = string(ports.TaskArbitration) // not the job's type
			log.add(e)
		}
	}()
	if c := keys[m.Key.Provider].current(); c != nil {
		out.keySrc = string(c.Source)
	}
	msgs := fr.atts.prompt(arbitrationPrompt(conflicts), m)
	resp, err := s.Calls.generate(ctx, calls, m, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: arbitrationSchema,
		SchemaName: "arbitration", ResponseSchema: true, OrgID: fr.orgID, Task: ports.TaskArbitration})
	cost := m.Price.Cost(resp.InputTokens, resp.OutputTokens)
	out.cost, out.in, out.outT = cost, resp.InputTokens, resp.OutputTokens
	done.Cost, done.InputTokens, done.OutputTokens = cost, resp.InputTokens, resp.OutputTokens
	if err != nil {
		s.Log.Warn("arbitration call failed: the rules stand", "job_id", fr.jobID, "model", key, "err", err)
		done.ErrorMessage = classify(err).Message() + ": the rules stand"
		return
	}
	decisions, err := job.ParseDecisions([]byte(strings.TrimSpace(resp.Text)))
	if err != nil || decisions == nil {
		done.ErrorMessage = "the arbiter's answer is not a decisions object: the rules stand"
		return
	}
	if len(decisions) == 0 {
		done.ErrorMessage = "the arbiter decided nothing: the rules stand"
		return
	}
	// Only the fields shown may be decided.
	shown := map[string]bool{}
	for _, c := range conflicts {
		shown[c.Path] = true
	}
	for _, d := range decisions {
		if !shown[d.Path] {
			done.ErrorMessage = fmt.Sprintf("the arbiter decided %q, which was not in conflict: the rules stand", d.Path)
			return
		}
	}
	applied, err := fusion.Apply(out.result, decisionMap(decisions), key)
	if err != nil {
		done.ErrorMessage = fmt.Sprintf("the arbiter's answer is unusable (%v): the rules stand", err)
		return
	}
	out.result = applied
	done.Success, done.Fallback, done.Decisions = true, false, decisions
}

func decisionMap(ds []job.Decision) map[string]any {
	m := make(map[string]any, len(ds))
	for _, d := range ds {
		m[d.Path] = d.Value
	}
	return m
}

// sourceModels are the fused models' keys, sorted.
func sourceModels(srcs []fuseSource) []string {
	out := make([]string, len(srcs))
	for i, s := range srcs {
		out[i] = s.info.Key.String()
	}
	sort.Strings(out)
	return out
}

// arbiterOf resolves a request's arbitration_model: nil for none, a
// catalog model, or auto (the organization's enrichment default).
func (s *Fuser) arbiterOf(ctx context.Context, orgID string, name *string, atts *jobAttachments) (*model.Info, error) {
	if name == nil || *name == "" {
		return nil, nil
	}
	if *name == model.Auto {
		p, err := s.Models.AutoPick(ctx, orgID, TaskEnrichment, atts.needs(modelsel.Needs{}))
		if err != nil {
			return nil, err
		}
		return &p.Model, nil
	}
	m, err := s.Models.knownModelFor(ctx, orgID, "arbitration_model", *name)
	if err != nil {
		return nil, err
	}
	if err := atts.checkReadable("arbitration_model", m); err != nil {
		return nil, err
	}
	return &m, nil
}

// autoFuse fuses the successful models of an enrichment job. A fusion that
// cannot produce a valid record leaves the job's single-model answer
// (fusion_completed says why).
func (s *Enricher) autoFuse(ctx context.Context, w *ports.Work, pl *plan, ok []outcome) *fused {
	return s.fuseEntity(ctx, w, pl, entityFusion{entity: pl.req.EntityData, fields: pl.entity, pub: w.Publish, prior: w.Prior}, ok)
}

// entityFusion is the entity whose models' answers are fused: the single
// enrichment's, or one entity of a batch (index set; prior holds that
// entity's earlier events only).
type entityFusion struct {
	entity json.RawMessage
	fields map[string]any
	pub    func(job.Payload)
	prior  []job.Event
	index  *int
}

// fuseEntity fuses one entity's successful models. A fusion that cannot
// produce a valid record leaves the entity's single-model answer
// (fusion_completed says why).
func (s *Enricher) fuseEntity(ctx context.Context, w *ports.Work, pl *plan, ef entityFusion, ok []outcome) *fused {
	srcs := make([]fuseSource, len(ok))
	for i, o := range ok {
		srcs[i] = fuseSource{record: o.record, result: o.raw, info: o.info}
	}
	fr := fusionRun{orgID: w.Job.OrgID, jobID: w.Job.ID, recordID: fusionRecordID(w.Job.ID, srcs), doc: pl.doc, validator: pl.whole,
		primary: pl.req.languages()[0], strategy: pl.choice.Strategy, entity: ef.entity, schemaID: pl.schema.ID,
		sources: srcs, arbiter: pl.arbiter, pub: ef.pub, prior: ef.prior, entityIndex: ef.index}
	f, err := s.Fuser.fuse(ctx, fr, &pl.usage)
	if err != nil {
		s.Log.Warn("auto-fusion failed: the first model's answer stands", "job_id", w.Job.ID, "err", err)
		ef.pub(job.FusionCompleted{Success: false, ErrorMessage: err.Error(), EntityIndex: ef.index})
		return nil
	}
	// The preserved values are the caller's, in the fused record too.
	if len(pl.preserve) > 0 {
		f.result.Merged = enrichment.CopyPaths(f.result.Merged, ef.fields, pl.preserve)
		f.record.StructuredOutput, _ = json.Marshal(f.result.Merged)
	}
	// The fused record resolves its semantic ids as a model's record
	// does (finish): the fusion built it from the sources' outputs.
	s.resolveConcepts(ctx, pl, ef.fields, f.record, f.result.Merged)
	return f
}
