package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the migration routes' refusals.
const (
	// CodeMigrationRunning (409): the organization has a migration
	// running already; one runs at a time.
	CodeMigrationRunning = "migration_running"
	// CodeMigrationNotRunning (409): a cancel with no migration running.
	CodeMigrationNotRunning = "migration_not_running"
)

// DefaultMigrationPage is how many concepts a migration re-embeds in one
// call and one durable step: a run that takes the job over redoes at most
// this many.
const DefaultMigrationPage = 100

// migrationSweeps bounds the rounds over a cut-over slice for the concepts
// minted in the source model while it was being moved.
const migrationSweeps = 5

// errMigrationMoved: the migration's state was ended or advanced by
// someone else (a cancel, a status that found its job ended, a newer
// holder); this run stops writing.
var errMigrationMoved = errors.New("the migration was ended or advanced elsewhere")

// ConceptMigrator is the Runner of job.TypeConceptMigration: it re-embeds
// the source slices' concepts with the target model page by page,
// recording a cursor after each page, and cuts each slice over once all
// its concepts have their target vector. Lookups read the source vectors
// until their slice is cut over (ConceptService.sliceModel).
type ConceptMigrator struct {
	Concepts *ConceptService
	Store    ports.ConceptMigrations
	Clock    ports.Clock
	Log      *slog.Logger
	// Page is how many concepts one step re-embeds (0: DefaultMigrationPage).
	Page int
}

// Run implements ports.Runner.
func (r *ConceptMigrator) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	m, err := r.Store.GetMigration(ctx, w.Job.OrgID, w.Job.ID)
	if err != nil {
		return ports.Outcome{Failure: &ports.Failure{Code: job.CodeStorage, Msg: "the migration's state cannot be read"}}
	}
	if m.Status == ports.MigrationRunning {
		err = r.migrate(ctx, m)
	}
	var cc *ports.JobCancelled
	switch {
	case ctx.Err() != nil && errors.As(context.Cause(ctx), &cc):
		r.end(context.WithoutCancel(ctx), m, ports.MigrationCancelled, "cancelled: "+cc.Reason)
		return ports.Outcome{}
	case ctx.Err() != nil:
		// Lost, or handed back at shutdown: the next holder resumes
		// from the cursor; the runtime ends the job by its cause.
		return ports.Outcome{}
	case err != nil:
		r.Log.Warn("concept migration failed", "job_id", m.ID, "org_id", m.OrgID, "err", err)
		r.end(ctx, m, ports.MigrationFailed, err.Error())
		code := job.CodeInternal
		switch {
		case errors.Is(err, errMigrationMoved):
		case errors.Is(err, ports.ErrUnavailable):
			code = job.CodeStorage
		case errors.Is(err, errEmbedding):
			code = job.CodeLLMUnavailable
		}
		return ports.Outcome{Failure: &ports.Failure{Code: code, Msg: err.Error()}}
	}
	res := map[string]any{"status": m.Status, "source_model": m.SourceModel, "target_model": m.TargetModel,
		"embedded_count": m.EmbeddedCount, "total_count": m.TotalCount, "embedding_tokens": m.EmbeddingTokens}
	body, _ := json.Marshal(res)
	return ports.Outcome{Result: body, Completed: job.JobCompleted{Result: res}}
}

// errEmbedding marks a failed embedding call.
var errEmbedding = errors.New("embedding failed")

// migrate moves every slice not yet cut over, then completes the
// migration.
func (r *ConceptMigrator) migrate(ctx context.Context, m *ports.ConceptMigration) error {
	target, err := model.ParseKey(m.TargetModel)
	if err != nil {
		return err
	}
	for _, typ := range m.ConceptTypes {
		if slices.Contains(m.CutTypes, typ) {
			continue
		}
		src := concept.Slice{Type: typ, EmbeddingModel: m.SourceModel}
		if err := r.embedSlice(ctx, m, src, target, true); err != nil {
			return err
		}
		// The cut-over and its record are not interrupted by a cancel: a
		// slice is moved and recorded, or neither. From the save on,
		// lookups of the type read the target model, so new concepts of
		// the type are minted there.
		whole := context.WithoutCancel(ctx)
		if _, err := r.Concepts.Store.CutOver(whole, m.OrgID, src, m.TargetModel); err != nil {
			return err
		}
		m.CutTypes, m.Cursor = append(m.CutTypes, typ), ""
		if err := r.save(whole, m); err != nil {
			return err
		}
		if err := r.sweep(ctx, m, src, target); err != nil {
			return err
		}
	}
	if m.AllTypes && r.Concepts.Settings != nil {
		if err := r.Concepts.Settings.SetEmbeddingModel(ctx, m.OrgID, m.TargetModel); err != nil {
			return err
		}
	}
	now := r.Clock.Now()
	m.Status, m.CompletedAt = ports.MigrationCompleted, &now
	return r.save(ctx, m)
}

// sweep moves the concepts minted in the source slice while it was being
// moved, until none is left.
func (r *ConceptMigrator) sweep(ctx context.Context, m *ports.ConceptMigration, src concept.Slice, target model.Key) error {
	for range migrationSweeps {
		left, err := r.Concepts.Store.SliceConcepts(ctx, m.OrgID, src, "", 1)
		if err != nil || len(left) == 0 {
			return err
		}
		if err := r.embedSlice(ctx, m, src, target, false); err != nil {
			return err
		}
		if _, err := r.Concepts.Store.CutOver(ctx, m.OrgID, src, m.TargetModel); err != nil {
			return err
		}
	}
	return fmt.Errorf("concepts of type %q keep being minted in %s", src.Type, src.EmbeddingModel)
}

// embedSlice re-embeds the slice's concepts after the cursor, page by
// page, each page's vectors stored before the cursor moves past it. A
// sweep's pages (durable false) are counted but keep no cursor: the slice
// holds only what is left.
func (r *ConceptMigrator) embedSlice(ctx context.Context, m *ports.ConceptMigration, src concept.Slice, target model.Key, durable bool) error {
	dst := concept.Slice{Type: src.Type, EmbeddingModel: m.TargetModel}
	after := m.Cursor
	if !durable {
		after = ""
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page, err := r.Concepts.Store.SliceConcepts(ctx, m.OrgID, src, after, cmpOr(r.Page, DefaultMigrationPage))
		if err != nil || len(page) == 0 {
			return err
		}
		texts := make([]string, len(page))
		for i, c := range page {
			texts[i] = concept.Normalize(c.CanonicalText)
		}
		vecs, tokens, err := r.Concepts.Embed(ctx, m.OrgID, target, texts)
		if err != nil {
			return fmt.Errorf("%w: %w", errEmbedding, err)
		}
		if len(vecs) != len(page) {
			return fmt.Errorf("%w: %d vectors for %d texts", errEmbedding, len(vecs), len(page))
		}
		for i, c := range page {
			// A concept deleted meanwhile has nothing to move.
			if err := r.Concepts.Vectors.Upsert(ctx, m.OrgID, dst, c.ID, vecs[i]); err != nil && !errors.Is(err, ports.ErrNotFound) {
				return err
			}
		}
		after = page[len(page)-1].ID
		m.EmbeddedCount += len(page)
		m.TotalCount = max(m.TotalCount, m.EmbeddedCount)
		m.EmbeddingTokens += tokens
		if durable {
			m.Cursor = after
		}
		if err := r.save(ctx, m); err != nil {
			return err
		}
	}
}

// save writes the migration's progress; a state ended or advanced
// elsewhere stops the run.
func (r *ConceptMigrator) save(ctx context.Context, m *ports.ConceptMigration) error {
	err := r.Store.SaveMigration(ctx, *m)
	if errors.Is(err, ports.ErrConflict) {
		return errMigrationMoved
	}
	return err
}

// end records how the migration ended, unless it was ended already. The
// end that records a cancel (the run's own, or the service's over a job
// gone) also removes the target vectors written for the slices not cut
// over (dropTargetVectors).
func (r *ConceptMigrator) end(ctx context.Context, m *ports.ConceptMigration, status, why string) {
	now := r.Clock.Now()
	m.Status, m.CompletedAt, m.LastError = status, &now, why
	err := r.Store.SaveMigration(ctx, *m)
	if err != nil {
		if !errors.Is(err, ports.ErrConflict) {
			r.Log.Warn("concept migration's end not recorded", "job_id", m.ID, "status", status, "err", err)
		}
		return
	}
	if status != ports.MigrationCancelled {
		return
	}
	if err := r.dropTargetVectors(ctx, m); err != nil {
		r.Log.Warn("cancelled concept migration: target vectors left behind", "job_id", m.ID, "target", m.TargetModel, "err", err)
	}
}

// dropTargetVectors removes the vectors a cancelled migration wrote in its
// target model for the slices it did not cut over, so that the target
// slice holds nothing half-written; their source vectors stay
// authoritative. It runs once nothing writes for the migration any more.
func (r *ConceptMigrator) dropTargetVectors(ctx context.Context, m *ports.ConceptMigration) error {
	for _, typ := range m.ConceptTypes {
		if slices.Contains(m.CutTypes, typ) {
			continue
		}
		src := concept.Slice{Type: typ, EmbeddingModel: m.SourceModel}
		dst := concept.Slice{Type: typ, EmbeddingModel: m.TargetModel}
		for after := ""; ; {
			page, err := r.Concepts.Store.SliceConcepts(ctx, m.OrgID, src, after, DefaultMigrationPage)
			if err != nil || len(page) == 0 {
				return err
			}
			for _, c := range page {
				if err := r.Concepts.Vectors.Delete(ctx, m.OrgID, dst, c.ID); err != nil {
					return err
				}
			}
			after = page[len(page)-1].ID
		}
	}
	return nil
}

// sliceModel is the model a lookup of conceptType reads when the caller
// named none: the organization's model, except for a type that the
// organization's latest migration away from that model has cut over,
// whose concepts live in the target model now.
func (s *ConceptService) sliceModel(ctx context.Context, orgID, conceptType string, mk model.Key) (model.Key, error) {
	if s.Migrations == nil {
		return mk, nil
	}
	m, err := s.Migrations.LatestMigration(ctx, orgID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return mk, nil
	case err != nil:
		return mk, err
	case m.SourceModel != mk.String() || !slices.Contains(m.CutTypes, conceptType):
		return mk, nil
	}
	// Whatever the migration's end, a type it cut over stays cut over.
	return model.ParseKey(m.TargetModel)
}
