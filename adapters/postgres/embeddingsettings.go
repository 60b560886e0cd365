package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.EmbeddingSettings = (*EmbeddingSettings)(nil)

// embeddingSettingRow is one organization's setting; a NULL model is a
// cleared setting, a missing row one never set.
type embeddingSettingRow struct {
	bun.BaseModel `bun:"table:org_embedding_settings"`

	OrgID          string    `bun:"org_id,pk"`
	EmbeddingModel *string   `bun:"embedding_model"`
	UpdatedAt      time.Time `bun:"updated_at,notnull"`
}

// EmbeddingSettings keeps the organizations' embedding-model settings in
// the org_embedding_settings table.
type EmbeddingSettings struct{ db bun.IDB }

// NewEmbeddingSettings returns EmbeddingSettings on db.
func NewEmbeddingSettings(db bun.IDB) *EmbeddingSettings { return &EmbeddingSettings{db: db} }

// EmbeddingModel returns orgID's setting and whether it was ever set.
func (s *EmbeddingSettings) EmbeddingModel(ctx context.Context, orgID string) (string, bool, error) {
	var row embeddingSettingRow
	err := s.db.NewSelect().Model(&row).Where("org_id = ?", orgID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fail(err, "get embedding model")
	}
	if row.EmbeddingModel == nil {
		return "", true, nil
	}
	return *row.EmbeddingModel, true, nil
}

// SetEmbeddingModel stores orgID's setting; "" records it as cleared.
func (s *EmbeddingSettings) SetEmbeddingModel(ctx context.Context, orgID, model string) error {
	row := embeddingSettingRow{OrgID: orgID, UpdatedAt: utc(time.Now())}
	if model != "" {
		row.EmbeddingModel = &model
	}
	_, err := s.db.NewInsert().Model(&row).On("CONFLICT (org_id) DO UPDATE").
		Set("embedding_model = EXCLUDED.embedding_model").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fail(err, "set embedding model")
	}
	return nil
}
