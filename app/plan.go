package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Enricher plans and runs enrichment jobs: plan the schema into expertise
// calls, call each model, validate and retry, merge, and narrate it all as
// events. It is the Runner of enrichment jobs (and, through BatchRunner, of
// batches); the job runtime makes the jobs durable, and EnrichmentService
// submits them.
type Enricher struct {
	Schemas ports.SchemaStore
	// Entities is the entity layer a linked schema's runs feed (nil: none).
	Entities ports.EntityStore
	// SchemaCache serves the schema of every job start (nil: read from
	// Schemas each time). The SchemaService that writes the schemas must
	// share it.
	SchemaCache ports.SchemaCache
	Compiler    ports.SchemaCompiler
	// Contracts and Shapes keep what preparing a run derives from a
	// schema's contract alone (app/shape.go), so that the runs that share a
	// contract derive it once (nil: each run derives it). Compiler should
	// keep its validators likewise.
	Contracts ports.Memo[[32]byte, map[string]any]
	Shapes    ports.Memo[string, *Shape]
	// Requests decodes the stored requests of the jobs it runs.
	Requests JobRequests
	// Attachments resolves and reads the jobs' attachment_ids (nil:
	// attachments are refused).
	Attachments *AttachmentLoader
	// Models resolves the requests' models; Calls makes the paid calls;
	// Fuser fuses several models' answers (auto-fusion).
	Models *ModelService
	Calls  *Calls
	Fuser  *Fuser
	// Concepts resolves the schemas' semantic_id properties (nil: they
	// are left as the models answered).
	Concepts *ConceptService
	Clock    ports.Clock
	Log      *slog.Logger

	// CallParallelism bounds the concurrent LLM calls of one model (default 4).
	CallParallelism int
	// RetryBackoff is the pause before retrying a failed call (default 100 ms,
	// times the attempt number).
	RetryBackoff time.Duration
	// MaxAttempts bounds the tries of one expertise call (default
	// enrichment.DefaultMaxAttempts).
	MaxAttempts int
	// PauseTimeout is how long a classification pause waits for a continue
	// unless the request says (default ports.DefaultPauseTimeout).
	PauseTimeout time.Duration
	// BatchMaxEntities bounds the entities of one batch (default
	// DefaultBatchMaxEntities); BatchConcurrency the entities of one batch
	// enriched at once (default DefaultBatchConcurrency).
	BatchMaxEntities, BatchConcurrency int
	// MaxDomains bounds the expertise domains one model's run calls:
	// past it they are grouped (enrichment.Group; default
	// enrichment.DefaultMaxDomains).
	MaxDomains int
}

// EnrichConfig tunes the Enricher.
type EnrichConfig struct {
	// MaxAttempts bounds the tries of one expertise call (0:
	// enrichment.DefaultMaxAttempts).
	MaxAttempts int
	// BatchMaxEntities and BatchConcurrency: see the Enricher's fields.
	BatchMaxEntities, BatchConcurrency int
	// MaxDomains: see the Enricher's field (0: the default).
	MaxDomains int
}

// EnrichMemos keep what preparing a run derives from a schema's contract
// alone: see the Enricher's fields of the same names.
type EnrichMemos struct {
	Contracts ports.Memo[[32]byte, map[string]any]
	Shapes    ports.Memo[string, *Shape]
}

// NewEnricher plans and runs enrichment jobs on its ports (cache and the
// memos may be nil: see the fields).
func NewEnricher(schemas ports.SchemaStore, entities ports.EntityStore, cache ports.SchemaCache, compiler ports.SchemaCompiler,
	requests JobRequests, models *ModelService, calls *Calls, fuser *Fuser, clock ports.Clock, log *slog.Logger, memos EnrichMemos,
	cfg EnrichConfig, atts *AttachmentLoader, concepts *ConceptService) *Enricher {
	return &Enricher{Concepts: concepts, Schemas: schemas, Entities: entities, SchemaCache: cache, Compiler: compiler, Contracts: memos.Contracts, Shapes: memos.Shapes,
		Requests: requests, Attachments: atts, Models: models, Calls: calls, Fuser: fuser, Clock: clock, Log: log, MaxAttempts: cfg.MaxAttempts,
		BatchMaxEntities: cfg.BatchMaxEntities, BatchConcurrency: cfg.BatchConcurrency, MaxDomains: cfg.MaxDomains}
}

// MaxModels bounds the models of one request.
const MaxModels = 10

// EnrichRequest is the body of POST /api/single/enrich/{stream,sync}: every
// field of the reference product's request. It is also the job's stored
// request (JSON), which a worker that takes the job over plans again.
type EnrichRequest struct {
	EntityData      json.RawMessage
	SchemaID        string
	Models          []string
	Model           string
	Strategy        string
	EnableWebSearch bool
	// Languages are ISO 639-1 output languages, the first primary (default
	// ["en"]).
	Languages []string
	// EnableResponseSchema (default true) and EnableStrictStructuredOutput
	// (default false) reach the LLM port's request.
	EnableResponseSchema         *bool
	EnableStrictStructuredOutput bool
	// DatabaseSync (default true) feeds the schema's entity layer and its
	// linked databases (false: no entity write, no database_* event).
	DatabaseSync        *bool
	ClassificationModel *string
	ArbitrationModel    *string
	// AttachmentIDs name the organization's attachments every model of
	// the run reads (shared by every entity of a batch).
	AttachmentIDs []string
	// TargetSchema (an inline schema) is still to come: validated, then
	// refused with not_supported_yet (see unsupported).
	TargetSchema json.RawMessage
	// PauseTimeoutSeconds (ours) bounds how long a classification pause
	// waits for a continue (default ports.DefaultPauseTimeout).
	PauseTimeoutSeconds *int
}

// responseSchema reports whether the provider's JSON-schema channel is asked
// for (the reference's default: yes).
func (r EnrichRequest) responseSchema() bool {
	return r.EnableResponseSchema == nil || *r.EnableResponseSchema
}

// DefaultLanguage is the output language of a request that names none.
const DefaultLanguage = "en"

// languages are the request's output languages, the first primary.
func (r EnrichRequest) languages() []string {
	if len(r.Languages) == 0 {
		return []string{DefaultLanguage}
	}
	return r.Languages
}

// checkLanguages validates languages: known ISO 639-1 codes, each once.
func checkLanguages(langs []string) error {
	seen := map[string]bool{}
	for i, l := range langs {
		if _, ok := Languages[l]; !ok {
			return coded(ports.ErrInvalid, "invalid_language", "languages.%d: unknown language %q; GET /api/enrichment/options lists the ISO 639-1 codes", i, l).(*Error).at(fmt.Sprintf("languages.%d", i))
		}
		if seen[l] {
			return Invalid(fmt.Sprintf("languages.%d", i), "languages: %q is listed twice", l)
		}
		seen[l] = true
	}
	return nil
}

// unsupported validates the fields whose capability is still to come and
// then refuses the first one set with 400 not_supported_yet naming it: they
// are never silently ignored.
func (s *Enricher) unsupported(req EnrichRequest) error {
	if len(req.TargetSchema) > 0 && string(req.TargetSchema) != "null" {
		// The limits first: they will hold when inline schemas come.
		if err := checkLimits(s.Compiler, "target_schema", req.TargetSchema); err != nil {
			return err
		}
		return notSupported("target_schema", "target_schema: inline schemas are not supported yet; save the schema and send schema_id")
	}
	return nil
}

// plan is a validated request, ready to run.
type plan struct {
	req    EnrichRequest
	schema *schema.Schema
	doc    map[string]any
	entity map[string]any
	// preserve are the schema's preserve paths: taken out of the prompts
	// and copied from the entity into each result.
	preserve [][]string
	whole    ports.Validator
	calls    []call
	choice   enrichment.Choice
	models   []model.Info
	autoPick *modelsel.Pick
	// atts are the run's attachments (nil: none).
	atts *jobAttachments
	// arbiter is the requested arbitration model of the auto-fusion (nil:
	// rule-based, see app/fusion.go).
	arbiter *model.Info
	// classifier is the classification_model (nil: no classification).
	classifier *model.Info
	// contractDoc (the schema's contract) and checkDoc (localized, with
	// the preserved properties) check each entity of a batch.
	contractDoc, checkDoc map[string]any
	// keys is the key of each provider the run calls (absent: keyless).
	keys map[string]*runKey
	// usage collects the run's LLM calls for the ledger.
	usage usageLog
	// semantic are the schema's semantic_id properties.
	semantic []semanticProp
}

// usageLog collects a run's ledger entries; its calls run concurrently.
type usageLog struct {
	mu           sync.Mutex
	orgID, jobID string
	entries      []usage.Entry
	// charge, when set, takes each entry as its call is answered (the job
	// runtime's Work.Charge, which writes it durably): the log keeps none.
	charge func(usage.Entry)
}

// bind makes the log the ledger of job run w: its entries name w's job and
// organization, and go to w.Charge as they come.
func (l *usageLog) bind(w *ports.Work) {
	l.orgID, l.jobID, l.charge = w.Job.OrgID, w.Job.ID, w.Charge
}

func (l *usageLog) add(e usage.Entry) {
	e.OrgID, e.JobID = l.orgID, l.jobID
	if l.charge != nil {
		l.charge(e)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *usageLog) take() []usage.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.entries
	l.entries = nil
	return out
}

type call struct {
	domain    enrichment.Domain
	validator ports.Validator
	// schema is domain.Schema encoded, as its prompt shows it.
	schema []byte
}

func (s *Enricher) prepare(ctx context.Context, orgID string, req EnrichRequest) (*plan, error) {
	return s.prepareFor(ctx, orgID, req, false)
}

// prepareFor plans req; for a batch (no entity_data: each entity is checked
// against the plan's contract on its own, see app/batch.go) it keeps the
// documents the entity checks need.
func (s *Enricher) prepareFor(ctx context.Context, orgID string, req EnrichRequest, batch bool) (*plan, error) {
	pl, err := s.checkPlan(ctx, orgID, req, batch)
	if err != nil {
		return nil, err
	}
	// Last, because a pick records a use: a request refused above must not
	// move the rotation.
	called := pl.models
	if pl.classifier != nil {
		called = append(append([]model.Info(nil), pl.models...), *pl.classifier)
	}
	if pl.keys, err = s.Calls.pickKeys(ctx, orgID, called); err != nil {
		return nil, err
	}
	return pl, nil
}

// checkPlan checks req and plans it, without picking its keys: nothing is
// recorded or spent.
func (s *Enricher) checkPlan(ctx context.Context, orgID string, req EnrichRequest, batch bool) (*plan, error) {
	if err := checkEnrichText(req); err != nil {
		return nil, err
	}
	entity, err := planEntity(req, batch)
	if err != nil {
		return nil, err
	}
	if err := s.unsupported(req); err != nil {
		return nil, err
	}
	if req.SchemaID == "" {
		return nil, Invalid("schema_id", "schema_id is required")
	}
	if err := checkLanguages(req.Languages); err != nil {
		return nil, err
	}
	strategy, err := enrichment.ParseStrategy(req.Strategy)
	if err != nil {
		return nil, Invalid("strategy", "%v", err)
	}
	// The attachments before the models: auto picks among the models that
	// can read them, and a named one that cannot is refused.
	atts, err := resolveAttachments(ctx, s.Attachments, orgID, req.AttachmentIDs)
	if err != nil {
		return nil, err
	}
	models, pick, err := s.resolveModels(ctx, orgID, req, atts)
	if err != nil {
		return nil, err
	}
	if err := checkPauseTimeout(req.PauseTimeoutSeconds); err != nil {
		return nil, err
	}
	classifier, err := s.resolveClassifier(ctx, orgID, req.ClassificationModel)
	if err != nil {
		return nil, err
	}
	sc, err := jobSchema(ctx, s.SchemaCache, s.Schemas, orgID, req.SchemaID)
	if err != nil {
		return nil, err
	}
	pl := &plan{req: req, schema: sc, models: models, autoPick: pick, entity: entity, classifier: classifier, atts: atts}
	if pl.arbiter, err = s.Fuser.arbiterOf(ctx, orgID, req.ArbitrationModel, nil); err != nil {
		return nil, err
	}
	// A linked, published schema runs on its published contract, not on
	// the working copy being edited (schema.Schema.Contract).
	doc, sum, err := s.contract(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("stored schema %s does not decode: %w", sc.ID, err)
	}
	// The input contract is checked before anything is spent; preserved
	// values are then the caller's, never asked of a model.
	if batch {
		pl.contractDoc, pl.preserve = doc, preservePaths(doc)
	} else if pl.preserve, err = checkContract(doc, entity); err != nil {
		return nil, err
	}
	// Multilingual properties are answered per requested language; the
	// rest is the contract's shape, shared by the runs that share it.
	sh, shapeErr := s.shapeOf(ctx, sc.ID, sum, doc, req.languages(), pl.preserve, strategy)
	if batch {
		pl.checkDoc = sh.localized
	} else if err := s.checkPreserved(ctx, sh.localized, entity, pl.preserve); err != nil {
		return nil, err
	}
	if shapeErr != nil {
		return nil, shapeErr
	}
	pl.doc, pl.whole, pl.choice, pl.calls = sh.doc, sh.whole, sh.choice, sh.calls
	pl.semantic = semanticProps(doc, sc.Name)
	if err := s.checkPlannedCalls(pl); err != nil {
		return nil, err
	}
	return pl, nil
}

// planEntity decodes a single enrichment's entity_data; a batch's entities
// are checked one by one (checkEntity).
func planEntity(req EnrichRequest, batch bool) (map[string]any, error) {
	if batch {
		return nil, nil
	}
	var entity map[string]any
	if len(req.EntityData) == 0 || json.Unmarshal(req.EntityData, &entity) != nil || entity == nil {
		return nil, Invalid("entity_data", "entity_data must be a JSON object of the entity's known attributes")
	}
	if len(entity) == 0 {
		return nil, Invalid("entity_data", "entity_data must carry at least one attribute")
	}
	return entity, nil
}

// resolveModels merges models and model, resolves auto, and checks every key.
func (s *Enricher) resolveModels(ctx context.Context, orgID string, req EnrichRequest, atts *jobAttachments) ([]model.Info, *modelsel.Pick, error) {
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
	for i, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if k == model.Auto {
			continue
		}
		m, err := s.Models.knownModelFor(ctx, orgID, field, k)
		if err != nil {
			return nil, nil, err
		}
		if req.EnableWebSearch && !modelsel.CanSearch(m) {
			return nil, nil, coded(ports.ErrInvalid, CodeModelLacksCapability, "%s: model %q cannot search the web", field, k)
		}
		at := "model"
		if i < len(req.Models) {
			at = fmt.Sprintf("models.%d", i)
		}
		if err := atts.checkReadable(at, m); err != nil {
			return nil, nil, err
		}
		out = append(out, m)
	}
	// Auto resolves to one model and never fuses: it is used only when no
	// explicit model is named.
	if len(out) == 0 {
		p, err := s.Models.AutoPick(ctx, orgID, TaskEnrichment, atts.needs(modelsel.Needs{WebSearch: req.EnableWebSearch}))
		if err != nil {
			return nil, nil, err
		}
		pick = &p
		out = []model.Info{p.Model}
	}
	return out, pick, nil
}
