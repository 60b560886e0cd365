package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// Bounds of a migration request and of its preview's work.
const (
	// MaxMigrationTypes is how many concept types a request may name.
	MaxMigrationTypes = 100
	// MigrationPreviewSample is how many concepts a preview embeds with
	// both models to look for pairs that would converge.
	MigrationPreviewSample = 100
	// maxMigrationCollisions is how many converging pairs a preview lists.
	maxMigrationCollisions = 50
	// migrationStoreGrace is how long a running migration may have no
	// stored job before its status calls it failed: its start stores the
	// state, then submits the job.
	migrationStoreGrace = time.Minute
	// cancelWait is how long a cancel waits for the job's holder to end it.
	cancelWait = 5 * time.Second
)

// MigrationRequest is WIRE.md §12 MigrationStartRequest.
type MigrationRequest struct {
	TargetModel string
	// SourceModel defaults to the organization's model.
	SourceModel  string
	ConceptTypes []string
}

// MigrationCollision is a pair of concepts of one type that the target
// model would put at or above the accept threshold while the source model
// keeps them below it.
type MigrationCollision struct {
	AText, BText    string
	ConceptType     string
	SimilarityNow   float64
	SimilarityAfter float64
}

// MigrationPreview is WIRE.md §12 MigrationPreviewResponse.
type MigrationPreview struct {
	Collisions        []MigrationCollision
	CollisionsSampled int
	ConceptCount      int
	ConceptTypes      []string
	EstimatedCostUSD  float64
	EstimatedTokens   int
	Note              string
	SourceModel       string
	TargetModel       string
	TargetDims        int
}

// ConceptMigrationService answers the migration routes: status, preview,
// start (a job its ConceptMigrator runs) and cancel.
type ConceptMigrationService struct {
	*ConceptMigrator
	JobRunner ports.JobRunner
	Jobs      ports.JobStore
	// Catalog prices the target model (nil or unknown: free).
	Catalog ports.ModelCatalog
	IDs     ports.IDs
}

// migrationPlan is what a request moves.
type migrationPlan struct {
	source, target model.Key
	types          []string
	count          int
	all            bool
}

// plan checks the request and lists the source model's slices it moves.
func (s *ConceptMigrationService) plan(ctx context.Context, orgID string, req MigrationRequest) (migrationPlan, error) {
	var pl migrationPlan
	if req.TargetModel == "" {
		return pl, Invalid("target_model", "target_model is required")
	}
	target, err := model.ParseKey(req.TargetModel)
	if err != nil {
		return pl, Invalid("target_model", "%s", err)
	}
	source, err := s.Concepts.ModelFor(ctx, orgID, req.SourceModel)
	if err != nil {
		if e, ok := AsError(err); ok && e.Field == "embedding_model" {
			e.Field = "source_model"
		}
		return pl, err
	}
	if source == target {
		return pl, Invalid("target_model", "the concepts are already in %s", target)
	}
	if len(req.ConceptTypes) > MaxMigrationTypes {
		return pl, Invalid("concept_types", "at most %d concept types", MaxMigrationTypes)
	}
	for _, t := range req.ConceptTypes {
		if err := concept.CheckConceptType(t); err != nil {
			return pl, Invalid("concept_types", "%s", err)
		}
	}
	facets, err := s.Concepts.Store.ConceptTypes(ctx, orgID)
	if err != nil {
		return pl, err
	}
	pl = migrationPlan{source: source, target: target, all: len(req.ConceptTypes) == 0}
	for _, f := range facets {
		if f.EmbeddingModel == source.String() && (pl.all || slices.Contains(req.ConceptTypes, f.Type)) {
			pl.types = append(pl.types, f.Type)
			pl.count += f.ConceptCount
		}
	}
	return pl, nil
}

// Status is the organization's latest migration, nil when none ever ran.
func (s *ConceptMigrationService) Status(ctx context.Context, p *access.Principal) (*ports.ConceptMigration, error) {
	if err := access.Authorize(p, access.ActConceptMigrationStatus); err != nil {
		return nil, err
	}
	m, err := s.Store.LatestMigration(ctx, p.OrgID)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.reconcile(ctx, m)
}

// reconcile gives a running migration whose job ended without saying so
// (cancelled over a dead holder's head, failed at shutdown, never stored)
// its job's end.
func (s *ConceptMigrationService) reconcile(ctx context.Context, m *ports.ConceptMigration) (*ports.ConceptMigration, error) {
	if m.Status != ports.MigrationRunning || s.Jobs == nil {
		return m, nil
	}
	j, err := s.Jobs.GetJob(ctx, m.OrgID, m.ID)
	var status, why string
	switch {
	case errors.Is(err, ports.ErrNotFound) && s.Clock.Now().Sub(m.StartedAt) > migrationStoreGrace:
		status, why = ports.MigrationFailed, "the migration's job was never stored"
	case err != nil || !j.State.Terminal():
		return m, err
	case j.State == job.Cancelled:
		status, why = ports.MigrationCancelled, cmp.Or(j.Error, "cancelled")
	case j.State == job.Failed:
		status, why = ports.MigrationFailed, cmp.Or(j.Error, string(j.ErrorCode))
	default:
		// Completed with the state still running: only a run that could
		// not save its end does that.
		status, why = ports.MigrationFailed, "the migration's job ended before the migration did"
	}
	s.end(ctx, m, status, why)
	return s.Store.GetMigration(ctx, m.OrgID, m.ID)
}

// Start checks the request and submits the migration's job (202).
func (s *ConceptMigrationService) Start(ctx context.Context, p *access.Principal, req MigrationRequest) (*ports.ConceptMigration, error) {
	if err := access.Authorize(p, access.ActConceptMigrationStart); err != nil {
		return nil, err
	}
	pl, err := s.plan(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	// One text first, so that a model nobody can embed with is refused
	// before anything is stored.
	if _, _, err := s.Concepts.Embed(ctx, p.OrgID, pl.target, []string{"probe"}); err != nil {
		return nil, Invalid("target_model", "%s cannot embed: %v", pl.target, err)
	}
	m := ports.ConceptMigration{ID: s.IDs.NewID(), OrgID: p.OrgID, Status: ports.MigrationRunning, SourceModel: pl.source.String(),
		TargetModel: pl.target.String(), ConceptTypes: pl.types, AllTypes: pl.all, TotalCount: pl.count, StartedAt: s.Clock.Now()}
	if err := s.Store.StartMigration(ctx, m); err != nil {
		if errors.Is(err, ports.ErrConflict) {
			return nil, coded(ports.ErrConflict, CodeMigrationRunning, "a migration is running: wait for it or cancel it")
		}
		return nil, err
	}
	// The state row is the migration's source of truth; the job's request
	// only names it.
	body, _ := json.Marshal(map[string]string{"migration_id": m.ID, "source_model": m.SourceModel, "target_model": m.TargetModel})
	if _, err := s.JobRunner.Submit(ctx, m.ID, p.OrgID, job.TypeConceptMigration, body, nil); err != nil {
		s.end(context.WithoutCancel(ctx), &m, ports.MigrationFailed, err.Error())
		return nil, err
	}
	s.Log.Info("concept migration started", "job_id", m.ID, "org_id", p.OrgID, "source", m.SourceModel, "target", m.TargetModel,
		"concepts", m.TotalCount)
	return &m, nil
}

// Cancel stops the running migration: the slices cut over stay cut over,
// the others keep their source vectors (the target vectors written for
// them are never read by a lookup).
func (s *ConceptMigrationService) Cancel(ctx context.Context, p *access.Principal) (*ports.ConceptMigration, error) {
	if err := access.Authorize(p, access.ActConceptMigrationCancel); err != nil {
		return nil, err
	}
	m, err := s.Store.LatestMigration(ctx, p.OrgID)
	if err != nil && !errors.Is(err, ports.ErrNotFound) {
		return nil, err
	}
	if m == nil || m.Status != ports.MigrationRunning {
		return nil, coded(ports.ErrConflict, CodeMigrationNotRunning, "no migration is running")
	}
	err = s.JobRunner.Cancel(ctx, p.OrgID, m.ID, "cancelled by the organization's owner")
	switch {
	case errors.Is(err, ports.ErrNotFound):
		s.end(ctx, m, ports.MigrationCancelled, "cancelled by the organization's owner")
	case err != nil && !errors.Is(err, job.ErrTransition):
		return nil, err
	}
	// The holder ends the job (and its state) itself; wait for it, so
	// that the answer says cancelled and no run moves a slice after it.
	deadline := time.Now().Add(cancelWait)
	for {
		got, err := s.Store.GetMigration(ctx, p.OrgID, m.ID)
		if err != nil {
			return nil, err
		}
		if got, err = s.reconcile(ctx, got); err != nil || got.Status != ports.MigrationRunning || time.Now().After(deadline) {
			return got, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Preview estimates the migration's tokens and cost and samples the pairs
// that would converge under the target model. The sample's embeddings (in
// both models) are paid like any other.
func (s *ConceptMigrationService) Preview(ctx context.Context, p *access.Principal, req MigrationRequest) (*MigrationPreview, error) {
	if err := access.Authorize(p, access.ActConceptMigrationPreview); err != nil {
		return nil, err
	}
	pl, err := s.plan(ctx, p.OrgID, req)
	if err != nil {
		return nil, err
	}
	out := &MigrationPreview{ConceptCount: pl.count, ConceptTypes: pl.types, SourceModel: pl.source.String(), TargetModel: pl.target.String(),
		Collisions: []MigrationCollision{}}
	sample, err := s.sample(ctx, p.OrgID, pl)
	if err != nil {
		return nil, err
	}
	out.CollisionsSampled = len(sample)
	texts, chars := make([]string, len(sample)), 0
	for i, c := range sample {
		texts[i] = concept.Normalize(c.text)
		chars += len(texts[i])
	}
	probe := texts
	if len(probe) == 0 {
		probe = []string{"probe"} // the target's dimensions, and a check that it embeds
	}
	after, tokens, err := s.Concepts.Embed(ctx, p.OrgID, pl.target, probe)
	if err != nil {
		return nil, Invalid("target_model", "%s cannot embed: %v", pl.target, err)
	}
	out.TargetDims = len(after[0])
	if len(sample) > 0 {
		// The provider's count when it gives one, else about four
		// characters a token.
		per := float64(max(chars/4, len(sample))) / float64(len(sample))
		if tokens > 0 {
			per = float64(tokens) / float64(len(sample))
		}
		out.EstimatedTokens = int(per*float64(pl.count) + 0.5)
		now, _, err := s.Concepts.Embed(ctx, p.OrgID, pl.source, texts)
		if err != nil {
			return nil, err
		}
		out.Collisions = collisions(sample, now, after)
	}
	if s.Catalog != nil {
		if info, err := s.Catalog.Model(pl.target); err == nil {
			out.EstimatedCostUSD = model.USD(info.Price.Cost(out.EstimatedTokens, 0))
			out.TargetDims = cmp.Or(info.Dims, out.TargetDims)
		}
	}
	out.Note = fmt.Sprintf("tokens estimated from %d of %d concepts; collisions are pairs of that sample at or above the accept threshold (%.2f) under %s and below it under %s",
		len(sample), pl.count, concept.DefaultThresholds().Accept, pl.target, pl.source)
	return out, nil
}

// sampled is a concept of a preview's sample.
type sampled struct{ typ, text string }

// sample takes up to MigrationPreviewSample concepts, shared among the
// plan's types.
func (s *ConceptMigrationService) sample(ctx context.Context, orgID string, pl migrationPlan) ([]sampled, error) {
	if len(pl.types) == 0 {
		return nil, nil
	}
	per := max(1, MigrationPreviewSample/len(pl.types))
	var out []sampled
	for _, t := range pl.types {
		if len(out) >= MigrationPreviewSample {
			break
		}
		page, err := s.Concepts.Store.SliceConcepts(ctx, orgID, concept.Slice{Type: t, EmbeddingModel: pl.source.String()}, "",
			min(per, MigrationPreviewSample-len(out)))
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, sampled{typ: t, text: c.CanonicalText})
		}
	}
	return out, nil
}

// collisions are the sample's pairs of one type that reach the accept
// threshold under the target model only, closest first.
func collisions(sample []sampled, now, after [][]float32) []MigrationCollision {
	accept := concept.DefaultThresholds().Accept
	out := []MigrationCollision{}
	for i := range sample {
		for j := i + 1; j < len(sample); j++ {
			if sample[i].typ != sample[j].typ {
				continue
			}
			a, n := concept.Cosine(after[i], after[j]), concept.Cosine(now[i], now[j])
			if a >= accept && n < accept {
				out = append(out, MigrationCollision{AText: sample[i].text, BText: sample[j].text, ConceptType: sample[i].typ,
					SimilarityNow: n, SimilarityAfter: a})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y MigrationCollision) int { return cmp.Compare(y.SimilarityAfter, x.SimilarityAfter) })
	return out[:min(len(out), maxMigrationCollisions)]
}
