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

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/ambiguity"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// AnalysisService runs the ambiguity analyses (of a sample, of a saved
// schema) and the identity-scoping split. An analysis is one blocking LLM
// call (retried with the validator's message), not a job; it stores an
// ambiguity_analysis record and its calls' usage in one unit of work.
type AnalysisService struct {
	Schemas  ports.SchemaStore
	Records  ports.RecordStore
	UoW      ports.UnitOfWork // nil: the record alone, through Records
	LLM      ports.LLM
	Catalog  ports.ModelCatalog
	Compiler ports.SchemaCompiler
	// Keys chooses the provider key; nil runs on the providers' own
	// configuration.
	Keys *KeyRing
	// Orgs keeps the organizations' pinned default models (nil: none).
	Orgs  ports.OrgStore
	Clock ports.Clock
	IDs   ports.IDs
	Log   *slog.Logger
	// SchemaCache is told of the annotations written to a schema (nil: no
	// cache).
	SchemaCache ports.SchemaCache
	// MaxAttempts bounds the tries of one analysis (default
	// DefaultAnalysisAttempts).
	MaxAttempts int
	// RetryBackoff is the pause before retrying a transport failure
	// (default 100 ms, times the attempt number).
	RetryBackoff time.Duration

	once       sync.Once
	validators [2]ports.Validator
	compileErr error
}

// NewAnalysisService returns the schema analyses. uow, keys, orgs and cache
// may be nil (see the fields).
func NewAnalysisService(schemas ports.SchemaStore, records ports.RecordStore, uow ports.UnitOfWork, llm ports.LLM,
	catalog ports.ModelCatalog, compiler ports.SchemaCompiler, keys *KeyRing, orgs ports.OrgStore, cache ports.SchemaCache,
	clock ports.Clock, ids ports.IDs, log *slog.Logger) *AnalysisService {
	return &AnalysisService{Schemas: schemas, Records: records, UoW: uow, LLM: llm, Catalog: catalog, Compiler: compiler, Keys: keys,
		Orgs: orgs, SchemaCache: cache, Clock: clock, IDs: ids, Log: log}
}

// DefaultAnalysisAttempts is how many times an analysis asks the model
// before it fails with model_output_invalid.
const DefaultAnalysisAttempts = 3

// Limits of an analysis request.
const (
	MaxProtectedFields = 400
	MaxSplitSamples    = 100
	MaxSplitFields     = 400
)

// AnalysisResult is an analysis's answer (the reference's
// AmbiguityCheckResponse).
type AnalysisResult struct {
	ambiguity.Report
	// RecordID is the stored record ("" when a saved schema was up to date
	// and not checked again).
	RecordID string
	// Model ran the check ("" when not checked again).
	Model string
	// Schema is the saved schema after the check (saved-schema route).
	Schema *schema.Schema
	// UpToDate: the saved schema had not changed since its last check,
	// which was returned as it is (no model call).
	UpToDate bool
}

// AnalyzeSampleInput is what POST /api/schema/analyze-sample asks.
type AnalyzeSampleInput struct {
	SampleJSON      json.RawMessage
	ProtectedFields []string
	Model           string
}

// AnalyzeSample judges the property names of one sample object. The
// sample is never changed; the report is stored as an
// ambiguity_analysis record whose entity data is the sample.
func (s *AnalysisService) AnalyzeSample(ctx context.Context, p *access.Principal, in AnalyzeSampleInput) (*AnalysisResult, error) {
	if err := access.Authorize(p, access.ActAnalyzeSample); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"sample_json", in.SampleJSON}, {"protected_fields", in.ProtectedFields}, {"model", in.Model}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, err
		}
	}
	var sample map[string]any
	if len(in.SampleJSON) == 0 || json.Unmarshal(in.SampleJSON, &sample) != nil || sample == nil {
		return nil, Invalid("sample_json", "sample_json must be a JSON object: the sample to analyze")
	}
	if len(in.ProtectedFields) > MaxProtectedFields {
		return nil, Invalid("protected_fields", "at most %d protected fields", MaxProtectedFields)
	}
	for i, f := range in.ProtectedFields {
		if strings.TrimSpace(f) == "" {
			return nil, Invalid(fmt.Sprintf("protected_fields.%d", i), "protected_fields.%d is empty", i)
		}
	}
	subject := ambiguity.FromSample(sample)
	if len(subject.Sites) == 0 {
		return nil, Invalid("sample_json", "sample_json has no property to analyze")
	}
	m, err := s.pickModel(ctx, p.OrgID, in.Model)
	if err != nil {
		return nil, err
	}
	ans, calls, err := s.ask(ctx, p.OrgID, m, ambiguity.Prompt(subject, in.ProtectedFields, false), false)
	if err != nil {
		s.storeFailed(ctx, calls)
		return nil, err
	}
	rep := ambiguity.Normalize(ans, subject, in.ProtectedFields)
	res := &AnalysisResult{Report: rep, Model: m.Key.String()}
	rec := s.record(p.OrgID, "", m, in.SampleJSON, rep, calls)
	if err := s.store(ctx, rec, calls); err != nil {
		return nil, err
	}
	res.RecordID = rec.ID
	return res, nil
}

// AnalyzeSchema checks the working copy of a saved schema and writes the
// verdicts into it: ambiguity (with a suggested description) on each
// flagged property, identity_scoping on each mixed relationship site, and
// what the check saw under x-ambiguityCheck. A working copy unchanged since
// its last check is not checked again unless force; its verdicts are
// returned as they are.
func (s *AnalysisService) AnalyzeSchema(ctx context.Context, p *access.Principal, id, modelKey string, force bool) (*AnalysisResult, error) {
	if err := access.Authorize(p, access.ActAnalyzeSchema); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"schema_id", id}, {"model", modelKey}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, err
		}
	}
	sc, err := liveSchema(ctx, s.Schemas, p.OrgID, id)
	if err != nil {
		return nil, err
	}
	doc, err := decodeDoc(sc)
	if err != nil {
		return nil, err
	}
	hash := analyzedHash(doc)
	if last, ok := ambiguity.LastCheck(doc); ok && last.ContentHash == hash && !force {
		return &AnalysisResult{Report: ambiguity.ReadBack(doc), Schema: sc, UpToDate: true}, nil
	}
	m, err := s.pickModel(ctx, p.OrgID, modelKey)
	if err != nil {
		return nil, err
	}
	subject := ambiguity.FromSchema(ambiguity.Strip(doc))
	if len(subject.Sites) == 0 {
		return nil, Invalid("schema_id", "schema %s has no property to analyze", id)
	}
	ans, calls, err := s.ask(ctx, p.OrgID, m, ambiguity.Prompt(subject, nil, true), true)
	if err != nil {
		s.storeFailed(ctx, calls)
		return nil, err
	}
	rep := ambiguity.Normalize(ans, subject, nil)
	check := ambiguity.Check{ContentHash: hash, Model: m.Key.String(), CheckedAt: s.Clock.Now().UTC().Format(time.RFC3339)}
	updated, err := s.Schemas.UpdateSchema(ctx, p.OrgID, id, func(cur *schema.Schema) error {
		d, err := decodeDoc(cur)
		if err != nil {
			return err
		}
		r := rep // each try of fn starts from the model's report
		r.Findings = append([]ambiguity.Finding(nil), rep.Findings...)
		raw, err := json.Marshal(ambiguity.Annotate(d, &r, check))
		if err != nil {
			return err
		}
		cur.Edit(compact(raw), s.Clock.Now()) // an annotation: a neutral edit
		rep = r
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "schema %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, id)
	res := &AnalysisResult{Report: rep, Model: m.Key.String(), Schema: updated}
	rec := s.record(p.OrgID, id, m, nil, rep, calls)
	if err := s.store(ctx, rec, calls); err != nil {
		return nil, err
	}
	res.RecordID = rec.ID
	return res, nil
}

// analyzedHash is the content hash of a document without the check's
// verdicts: what decides whether a check is up to date.
func analyzedHash(doc map[string]any) string {
	raw, _ := json.Marshal(ambiguity.Strip(doc))
	return schema.ContentHash(raw)
}

func decodeDoc(sc *schema.Schema) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(sc.Content, &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("stored schema %s does not decode: %v", sc.ID, err)
	}
	return doc, nil
}

// pickModel resolves a model key ("" or auto: the organization's default
// for schema authoring, picked like every task's; the analyses have no task
// of their own among the pinned defaults, so schema_generation's serves).
func (s *AnalysisService) pickModel(ctx context.Context, orgID, k string) (model.Info, error) {
	if k == "" || k == model.Auto {
		p, err := (&ModelPicker{Catalog: s.Catalog, Keys: s.Keys, Orgs: s.Orgs}).Pick(ctx, orgID, modelsel.TaskSchemaGeneration, modelsel.Needs{})
		if err != nil {
			return model.Info{}, err
		}
		return p.Model, nil
	}
	key, err := model.ParseKey(k)
	if err != nil {
		return model.Info{}, coded(ports.ErrInvalid, "invalid_model", "model: %v", err).(*Error).at("model")
	}
	m, err := s.Catalog.Model(key)
	if err != nil && s.Keys != nil {
		// Not the server's: perhaps one of the organization's own providers.
		var oerr error
		if m, oerr = s.Keys.OrgModel(ctx, orgID, key); oerr == nil {
			err = nil
		} else if !errors.Is(oerr, ports.ErrUnknownModel) {
			return model.Info{}, oerr
		}
	}
	if err != nil {
		return model.Info{}, coded(ports.ErrInvalid, "invalid_model", "model: unknown model %q; GET /api/enrichment/options lists them", k).(*Error).at("model")
	}
	return m, nil
}

// validator returns the compiled answer schema (describe: with
// suggested descriptions).
func (s *AnalysisService) validator(describe bool) (ports.Validator, error) {
	s.once.Do(func() {
		for i, d := range []bool{false, true} {
			raw, _ := json.Marshal(ambiguity.AnswerSchema(d))
			// The service's own small schemas, compiled once for every
			// caller: no request's context may end it for the others.
			if s.validators[i], s.compileErr = s.Compiler.Compile(context.Background(), raw); s.compileErr != nil {
				return
			}
		}
	})
	if s.compileErr != nil {
		return nil, s.compileErr
	}
	if describe {
		return s.validators[1], nil
	}
	return s.validators[0], nil
}

// ask calls the model until its answer validates against the answer
// schema, feeding the validator's message back, at most MaxAttempts
// times; a transport failure is retried after a pause unless no retry can
// help. It returns the answer and the calls' ledger entries.
func (s *AnalysisService) ask(ctx context.Context, orgID string, m model.Info, msgs []enrichment.Message, describe bool) (ambiguity.Answer, []usage.Entry, error) {
	v, err := s.validator(describe)
	if err != nil {
		return ambiguity.Answer{}, nil, err
	}
	var cred *ports.Credential
	if s.Keys != nil {
		if cred, err = s.Keys.Pick(ctx, orgID, m.Key.Provider, "", nil); err != nil {
			return ambiguity.Answer{}, nil, err
		}
	}
	schemaDoc := ambiguity.AnswerSchema(describe)
	max := s.MaxAttempts
	if max <= 0 {
		max = DefaultAnalysisAttempts
	}
	var calls []usage.Entry
	var lastErr error
	for attempt := 1; attempt <= max; attempt++ {
		t0 := time.Now()
		resp, err := s.LLM.Generate(ctx, ports.LLMRequest{Model: m.Key, Messages: msgs, Schema: schemaDoc, SchemaName: "ambiguity_report",
			ResponseSchema: true, Credential: cred, Task: ports.TaskAmbiguity})
		if e, ok := s.usageOf(orgID, m, cred, resp, err, time.Since(t0)); ok {
			calls = append(calls, e)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ambiguity.Answer{}, calls, ctx.Err()
			}
			s.Log.Warn("ambiguity analysis call failed", "model", m.Key.String(), "attempt", attempt, "code", classify(err), "err", err)
			if errors.Is(err, ports.ErrLLMAuth) && s.Keys != nil && cred != nil {
				s.Keys.Refused(ctx, orgID, cred)
			}
			lastErr = err
			if permanent(err) {
				break
			}
			backoff := s.RetryBackoff
			if backoff == 0 {
				backoff = 100 * time.Millisecond
			}
			select {
			case <-time.After(backoff * time.Duration(attempt)):
			case <-ctx.Done():
				return ambiguity.Answer{}, calls, ctx.Err()
			}
			continue
		}
		obj, perr := enrichment.ParseAnswer(resp.Text)
		if perr == nil {
			perr = v.Validate(obj)
		}
		if perr == nil {
			var a ambiguity.Answer
			if err := remarshal(obj, &a); err == nil {
				return a, calls, nil
			}
		}
		lastErr = &callError{msg: fmt.Sprintf("model_output_invalid: %v", perr), cause: perr}
		msgs = enrichment.Retry(msgs, resp.Text, perr)
	}
	var ce *callError
	if errors.As(lastErr, &ce) {
		return ambiguity.Answer{}, calls, &Error{Kind: ports.ErrLLMUnavailable, Code: "model_output_invalid",
			Detail: fmt.Sprintf("the model's analysis did not validate after %d attempts, last: %v", max, ce.cause)}
	}
	return ambiguity.Answer{}, calls, fmt.Errorf("ambiguity analysis: %w", lastErr)
}

// usageOf is one call's ledger entry; false when no request left the
// process.
func (s *AnalysisService) usageOf(orgID string, m model.Info, cred *ports.Credential, resp ports.LLMResponse, err error, took time.Duration) (usage.Entry, bool) {
	if errors.Is(err, ports.ErrUnknownModel) {
		return usage.Entry{}, false
	}
	e := usage.Entry{ID: s.IDs.NewID(), OrgID: orgID, Model: m.Key.String(), InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
		Cost: m.Price.Cost(resp.InputTokens, resp.OutputTokens), LatencyMS: took.Milliseconds(), Outcome: usage.OK, CreatedAt: s.Clock.Now()}
	if cred != nil {
		e.KeySource, e.KeyID = string(cred.Source), cred.KeyID
	}
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled):
			e.Outcome = "cancelled"
		case errors.Is(err, ports.ErrLLMAuth):
			e.Outcome = "key_refused"
		default:
			e.Outcome = string(classify(err))
		}
	}
	return e, true
}

// record is the stored outcome of an analysis.
func (s *AnalysisService) record(orgID, schemaID string, m model.Info, sample json.RawMessage, rep ambiguity.Report, calls []usage.Entry) *enrichment.Record {
	out, _ := json.Marshal(rep)
	rec := &enrichment.Record{ID: s.IDs.NewID(), OrgID: orgID, Type: enrichment.RecordAmbiguityAnalysis, SchemaID: schemaID,
		Model: m.Key.String(), EntityData: compactOrNil(sample), StructuredOutput: out, Sandbox: m.Sandbox, CreatedAt: s.Clock.Now()}
	for _, c := range calls {
		rec.Cost += c.Cost
		rec.InputTokens += c.InputTokens
		rec.OutputTokens += c.OutputTokens
	}
	return rec
}

func compactOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return compact(raw)
}

// storeFailed writes the usage of a failed analysis's calls (no record):
// what was spent is in the ledger whatever the outcome. A failure to write
// is logged; the caller gets the analysis's own error.
func (s *AnalysisService) storeFailed(ctx context.Context, calls []usage.Entry) {
	if s.UoW == nil || len(calls) == 0 {
		return
	}
	err := s.UoW.InTx(context.WithoutCancel(ctx), func(ctx context.Context, r ports.Repos) error {
		if r.Usage == nil {
			return nil
		}
		return r.Usage.AppendUsage(ctx, calls)
	})
	if err != nil {
		s.Log.Error("usage of a failed analysis not written", "err", err)
	}
}

// store writes the record and the calls' usage together.
func (s *AnalysisService) store(ctx context.Context, rec *enrichment.Record, calls []usage.Entry) error {
	if s.UoW == nil {
		return s.Records.CreateRecord(ctx, rec)
	}
	return s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if err := r.Records.CreateRecord(ctx, rec); err != nil {
			return err
		}
		if r.Usage != nil && len(calls) > 0 {
			return r.Usage.AppendUsage(ctx, calls)
		}
		return nil
	})
}

// ScopingSplitInput is what POST /api/schema/scoping-split asks: the
// reference's ScopingSplitRequest, plus an optional schema document (Schema,
// or SchemaContent, the reference's name) to split the same way.
type ScopingSplitInput struct {
	EntityFields  []string
	EntityName    string
	EntitySamples []json.RawMessage
	Fields        []string
	Path          string
	Schema        json.RawMessage
	SchemaContent json.RawMessage
}

// ScopingSplit applies an identity-scoping split to samples (and a schema
// document): free and stateless, no model is called and nothing is stored.
// A split that cannot apply answers applied=false with the reason.
func (s *AnalysisService) ScopingSplit(ctx context.Context, p *access.Principal, in ScopingSplitInput) (ambiguity.SplitResult, error) {
	if err := access.Authorize(p, access.ActScopingSplit); err != nil {
		return ambiguity.SplitResult{}, err
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"entity_fields", in.EntityFields}, {"entity_name", in.EntityName}, {"fields", in.Fields},
		{"path", in.Path}, {"schema", in.Schema}, {"schema_content", in.SchemaContent}} {
		if err := checkText(f.name, f.v); err != nil {
			return ambiguity.SplitResult{}, err
		}
	}
	if len(in.EntitySamples) > MaxSplitSamples {
		return ambiguity.SplitResult{}, Invalid("entity_samples", "at most %d samples", MaxSplitSamples)
	}
	if len(in.EntityFields) > MaxSplitFields || len(in.Fields) > MaxSplitFields {
		return ambiguity.SplitResult{}, Invalid("fields", "at most %d fields", MaxSplitFields)
	}
	samples := make([]any, len(in.EntitySamples))
	for i, raw := range in.EntitySamples {
		if err := checkText(fmt.Sprintf("entity_samples.%d", i), raw); err != nil {
			return ambiguity.SplitResult{}, err
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil || m == nil {
			return ambiguity.SplitResult{}, Invalid(fmt.Sprintf("entity_samples.%d", i), "entity_samples.%d must be a JSON object", i)
		}
		samples[i] = m
	}
	docRaw, err := NewSchemaInput{Schema: in.Schema, SchemaContent: in.SchemaContent}.document()
	if err != nil {
		return ambiguity.SplitResult{}, err
	}
	var doc map[string]any
	if len(docRaw) > 0 && string(docRaw) != "null" {
		if err := checkLimits(s.Compiler, "schema", docRaw); err != nil {
			return ambiguity.SplitResult{}, err
		}
		if json.Unmarshal(docRaw, &doc) != nil || doc == nil {
			return ambiguity.SplitResult{}, Invalid("schema", "schema must be a JSON object")
		}
	}
	if len(samples) == 0 && doc == nil {
		return ambiguity.SplitResult{}, Invalid("entity_samples", "entity_samples (or a schema) is required")
	}
	res := ambiguity.SplitSamples(samples, doc, ambiguity.Split{Path: in.Path, Fields: in.Fields, EntityFields: in.EntityFields, EntityName: in.EntityName})
	if res.Applied && res.Schema != nil {
		raw, _ := json.Marshal(res.Schema)
		if _, err := s.Compiler.Compile(ctx, raw); err != nil {
			return ambiguity.SplitResult{Samples: samples, Schema: doc, Paths: []string{},
				Reason: fmt.Sprintf("the split schema would not be valid JSON Schema: %v", err)}, nil
		}
	}
	return res, nil
}
