package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

// SliceConcepts implements ports.ConceptStore (keyset on the id).
func (s *ConceptStore) SliceConcepts(ctx context.Context, orgID string, sl concept.Slice, after string, limit int) ([]ports.SliceConcept, error) {
	if limit < 1 || !storable(orgID, sl.Type, sl.EmbeddingModel, after) {
		return nil, nil
	}
	var rows []conceptRow
	err := s.db.NewSelect().Model(&rows).Column("id", "canonical_text").
		Where("org_id = ? AND concept_type = ? AND embedding_model = ? AND id > ?", orgID, sl.Type, sl.EmbeddingModel, after).
		Order("id").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fail(err, "read a slice's concepts")
	}
	out := make([]ports.SliceConcept, 0, len(rows))
	for _, r := range rows {
		out = append(out, ports.SliceConcept{ID: r.ID, CanonicalText: r.CanonicalText})
	}
	return out, nil
}

// CutOver implements ports.ConceptStore: one transaction moves the
// concepts that hold a vector in to and drops their vectors in the
// slice's model.
func (s *ConceptStore) CutOver(ctx context.Context, orgID string, sl concept.Slice, to string) (int, error) {
	if to == sl.EmbeddingModel || !storable(orgID, sl.Type, sl.EmbeddingModel, to) {
		return 0, nil
	}
	var moved []string
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		err := tx.NewRaw(`UPDATE semantic_concepts c SET embedding_model = e.embedding_model, dims = e.dims
			FROM concept_embeddings e
			WHERE c.org_id = ? AND c.concept_type = ? AND c.embedding_model = ?
			  AND e.org_id = c.org_id AND e.concept_type = c.concept_type AND e.embedding_model = ? AND e.concept_id = c.id
			RETURNING c.id`, orgID, sl.Type, sl.EmbeddingModel, to).Scan(ctx, &moved)
		if err != nil || len(moved) == 0 {
			return err
		}
		_, err = tx.NewDelete().Model((*embeddingRow)(nil)).
			Where("org_id = ? AND concept_type = ? AND embedding_model = ? AND concept_id IN (?)", orgID, sl.Type, sl.EmbeddingModel,
				bun.In(moved)).Exec(ctx)
		return err
	})
	if err != nil {
		return 0, fail(err, "cut a slice over")
	}
	return len(moved), nil
}

// ConceptMigrations is ports.ConceptMigrations on concept_migrations.
type ConceptMigrations struct{ db bun.IDB }

var _ ports.ConceptMigrations = (*ConceptMigrations)(nil)

// NewConceptMigrations returns the store on db.
func NewConceptMigrations(db bun.IDB) *ConceptMigrations { return &ConceptMigrations{db: db} }

type migrationRow struct {
	bun.BaseModel `bun:"table:concept_migrations,alias:m"`

	ID              string     `bun:"id,pk"`
	OrgID           string     `bun:"org_id,notnull"`
	Status          string     `bun:"status,notnull"`
	SourceModel     string     `bun:"source_model,notnull"`
	TargetModel     string     `bun:"target_model,notnull"`
	ConceptTypes    []string   `bun:"concept_types,array,notnull"`
	AllTypes        bool       `bun:"all_types,notnull"`
	CutTypes        []string   `bun:"cut_types,array,notnull"`
	Cursor          string     `bun:"cursor_id,notnull"`
	TotalCount      int        `bun:"total_count,notnull"`
	EmbeddedCount   int        `bun:"embedded_count,notnull"`
	EmbeddingTokens int        `bun:"embedding_tokens,notnull"`
	StartedAt       time.Time  `bun:"started_at,notnull"`
	CompletedAt     *time.Time `bun:"completed_at"`
	LastError       string     `bun:"last_error,notnull"`
}

func migrationRowOf(m ports.ConceptMigration) *migrationRow {
	r := &migrationRow{ID: m.ID, OrgID: m.OrgID, Status: m.Status, SourceModel: m.SourceModel, TargetModel: m.TargetModel,
		ConceptTypes: m.ConceptTypes, AllTypes: m.AllTypes, CutTypes: m.CutTypes, Cursor: m.Cursor, TotalCount: m.TotalCount,
		EmbeddedCount: m.EmbeddedCount, EmbeddingTokens: m.EmbeddingTokens, StartedAt: m.StartedAt, CompletedAt: m.CompletedAt,
		LastError: m.LastError}
	if r.ConceptTypes == nil {
		r.ConceptTypes = []string{}
	}
	if r.CutTypes == nil {
		r.CutTypes = []string{}
	}
	return r
}

func (r *migrationRow) migration() *ports.ConceptMigration {
	m := &ports.ConceptMigration{ID: r.ID, OrgID: r.OrgID, Status: r.Status, SourceModel: r.SourceModel, TargetModel: r.TargetModel,
		ConceptTypes: r.ConceptTypes, AllTypes: r.AllTypes, CutTypes: r.CutTypes, Cursor: r.Cursor, TotalCount: r.TotalCount,
		EmbeddedCount: r.EmbeddedCount, EmbeddingTokens: r.EmbeddingTokens, StartedAt: utc(r.StartedAt), LastError: r.LastError}
	if r.CompletedAt != nil {
		at := utc(*r.CompletedAt)
		m.CompletedAt = &at
	}
	return m
}

// StartMigration implements ports.ConceptMigrations; the partial unique
// index refuses a second running migration of an organization.
func (s *ConceptMigrations) StartMigration(ctx context.Context, m ports.ConceptMigration) error {
	m.Status = ports.MigrationRunning
	if _, err := s.db.NewInsert().Model(migrationRowOf(m)).Exec(ctx); err != nil {
		return conflict(err, "start migration "+m.ID)
	}
	return nil
}

// LatestMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) LatestMigration(ctx context.Context, orgID string) (*ports.ConceptMigration, error) {
	var r migrationRow
	err := s.db.NewSelect().Model(&r).Where("org_id = ?", orgID).OrderExpr("started_at DESC, id DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, notFound(err, "latest migration")
	}
	return r.migration(), nil
}

// GetMigration implements ports.ConceptMigrations.
func (s *ConceptMigrations) GetMigration(ctx context.Context, orgID, id string) (*ports.ConceptMigration, error) {
	var r migrationRow
	err := s.db.NewSelect().Model(&r).Where("org_id = ? AND id = ?", orgID, id).Scan(ctx)
	if err != nil {
		return nil, notFound(err, "get migration "+id)
	}
	return r.migration(), nil
}

// SaveMigration implements ports.ConceptMigrations with a guarded UPDATE.
func (s *ConceptMigrations) SaveMigration(ctx context.Context, m ports.ConceptMigration) error {
	res, err := s.db.NewUpdate().Model(migrationRowOf(m)).
		Column("status", "concept_types", "all_types", "cut_types", "cursor_id", "total_count", "embedded_count",
			"embedding_tokens", "completed_at", "last_error").
		Where("id = ? AND org_id = ? AND status = ? AND embedded_count <= ?", m.ID, m.OrgID, ports.MigrationRunning, m.EmbeddedCount).
		Exec(ctx)
	if err != nil {
		return fail(err, "save migration "+m.ID)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("postgres: save migration %s: not running or further on: %w", m.ID, ports.ErrConflict)
	}
	return nil
}
