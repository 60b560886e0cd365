package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ProviderStore = (*ProviderStore)(nil)

type orgProviderRow struct {
	bun.BaseModel `bun:"table:org_providers"`

	ID        string             `bun:"id,pk"`
	OrgID     string             `bun:"org_id,notnull"`
	Name      string             `bun:"name,notnull"`
	Type      string             `bun:"type,notnull"`
	BaseURL   string             `bun:"base_url,notnull"`
	Sealed    []byte             `bun:"sealed"`
	Suffix    string             `bun:"suffix,notnull"`
	Version   int                `bun:"version,notnull"`
	Enabled   bool               `bun:"enabled,notnull"`
	Models    []orgProviderModel `bun:"models,type:jsonb,notnull"`
	CreatedAt time.Time          `bun:"created_at,notnull"`
	UpdatedAt time.Time          `bun:"updated_at,notnull"`
}

// orgProviderModel is one model in the models column.
type orgProviderModel struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	ContextLength int       `json:"context_length,omitempty"`
	InputPerMTok  *int64    `json:"input_per_mtok,omitempty"`
	OutputPerMTok *int64    `json:"output_per_mtok,omitempty"`
	Discovered    bool      `json:"discovered,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	// The declared capabilities; absent (false) in rows written before
	// they existed.
	ResponseSchema bool `json:"response_schema,omitempty"`
	StrictOutput   bool `json:"strict_output,omitempty"`
	Vision         bool `json:"vision,omitempty"`
	PDFInput       bool `json:"pdf_input,omitempty"`
	Reasoning      bool `json:"reasoning,omitempty"`
	ToolCalls      bool `json:"tool_calls,omitempty"`
	AudioInput     bool `json:"audio_input,omitempty"`
	VideoInput     bool `json:"video_input,omitempty"`
}

func orgProviderToRow(p *orgprovider.Provider) *orgProviderRow {
	r := &orgProviderRow{ID: p.ID, OrgID: p.OrgID, Name: p.Name, Type: p.Type, BaseURL: p.BaseURL, Suffix: p.Suffix,
		Version: p.Version, Enabled: p.Enabled, Models: make([]orgProviderModel, len(p.Models)),
		CreatedAt: utc(p.CreatedAt), UpdatedAt: utc(p.UpdatedAt)}
	if len(p.Sealed) > 0 {
		r.Sealed = p.Sealed
	}
	for i, m := range p.Models {
		r.Models[i] = orgProviderModel{ID: m.ID, Name: m.Name, ContextLength: m.ContextLength, InputPerMTok: m.InputPerMTok,
			OutputPerMTok: m.OutputPerMTok, Discovered: m.Discovered, CreatedAt: utc(m.CreatedAt),
			ResponseSchema: m.Caps.ResponseSchema, StrictOutput: m.Caps.StrictOutput, Vision: m.Caps.Vision,
			PDFInput: m.Caps.PDFInput, Reasoning: m.Caps.Reasoning, ToolCalls: m.Caps.ToolCalls,
			AudioInput: m.Caps.AudioInput, VideoInput: m.Caps.VideoInput}
	}
	return r
}

func (r *orgProviderRow) provider() *orgprovider.Provider {
	p := &orgprovider.Provider{ID: r.ID, OrgID: r.OrgID, Name: r.Name, Type: r.Type, BaseURL: r.BaseURL, Suffix: r.Suffix,
		Version: r.Version, Enabled: r.Enabled, Models: make([]orgprovider.Model, len(r.Models)),
		CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
	if len(r.Sealed) > 0 {
		p.Sealed = r.Sealed
	}
	for i, m := range r.Models {
		p.Models[i] = orgprovider.Model{ID: m.ID, Name: m.Name, ContextLength: m.ContextLength, InputPerMTok: m.InputPerMTok,
			OutputPerMTok: m.OutputPerMTok, Discovered: m.Discovered, CreatedAt: utc(m.CreatedAt),
			Caps: orgprovider.Caps{ResponseSchema: m.ResponseSchema, StrictOutput: m.StrictOutput, Vision: m.Vision,
				PDFInput: m.PDFInput, Reasoning: m.Reasoning, ToolCalls: m.ToolCalls, AudioInput: m.AudioInput,
				VideoInput: m.VideoInput}}
	}
	return p
}

// ProviderStore keeps organizations' own providers in the org_providers
// table, one row per provider with its models as JSON.
type ProviderStore struct{ db bun.IDB }

// NewProviderStore returns a ProviderStore on db.
func NewProviderStore(db bun.IDB) *ProviderStore { return &ProviderStore{db: db} }

// CreateProvider inserts p; an existing id or name is ErrConflict.
func (s *ProviderStore) CreateProvider(ctx context.Context, p *orgprovider.Provider) error {
	if _, err := s.db.NewInsert().Model(orgProviderToRow(p)).Exec(ctx); err != nil {
		return conflict(err, "create provider "+p.ID)
	}
	return nil
}

// GetProvider returns orgID's provider id.
func (s *ProviderStore) GetProvider(ctx context.Context, orgID, id string) (*orgprovider.Provider, error) {
	var r orgProviderRow
	if err := s.db.NewSelect().Model(&r).Where("id = ?", id).Where("org_id = ?", orgID).Scan(ctx); err != nil {
		return nil, notFound(err, "get provider "+id)
	}
	return r.provider(), nil
}

// ProviderByName returns orgID's provider named name.
func (s *ProviderStore) ProviderByName(ctx context.Context, orgID, name string) (*orgprovider.Provider, error) {
	var r orgProviderRow
	if err := s.db.NewSelect().Model(&r).Where("org_id = ?", orgID).Where("name = ?", name).Scan(ctx); err != nil {
		return nil, notFound(err, "get provider named "+name)
	}
	return r.provider(), nil
}

// ListProviders returns orgID's providers by name.
func (s *ProviderStore) ListProviders(ctx context.Context, orgID string) ([]*orgprovider.Provider, error) {
	var rows []orgProviderRow
	if err := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Order("name").Scan(ctx); err != nil {
		return nil, fail(err, "list providers")
	}
	out := make([]*orgprovider.Provider, len(rows))
	for i := range rows {
		out[i] = rows[i].provider()
	}
	return out, nil
}

// AllProviders returns every provider by id.
func (s *ProviderStore) AllProviders(ctx context.Context) ([]*orgprovider.Provider, error) {
	var rows []orgProviderRow
	if err := s.db.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fail(err, "list all providers")
	}
	out := make([]*orgprovider.Provider, len(rows))
	for i := range rows {
		out[i] = rows[i].provider()
	}
	return out, nil
}

// UpdateProvider locks the row, applies fn and writes the result.
func (s *ProviderStore) UpdateProvider(ctx context.Context, orgID, id string, fn func(*orgprovider.Provider) error) (*orgprovider.Provider, error) {
	var out *orgprovider.Provider
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r orgProviderRow
		if err := tx.NewSelect().Model(&r).Where("id = ?", id).Where("org_id = ?", orgID).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update provider "+id)
		}
		p := r.provider()
		if err := fn(p); err != nil {
			return err
		}
		p.ID, p.OrgID, p.CreatedAt = r.ID, r.OrgID, r.CreatedAt
		row := orgProviderToRow(p)
		if _, err := tx.NewUpdate().Model(row).WherePK().Exec(ctx); err != nil {
			return conflict(err, "update provider "+id)
		}
		out = row.provider()
		return nil
	})
	return out, err
}

// DeleteProvider removes orgID's provider id.
func (s *ProviderStore) DeleteProvider(ctx context.Context, orgID, id string) error {
	res, err := s.db.NewDelete().Model((*orgProviderRow)(nil)).Where("id = ?", id).Where("org_id = ?", orgID).Exec(ctx)
	if err != nil {
		return fail(err, "delete provider "+id)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return notFound(sql.ErrNoRows, "delete provider "+id)
	}
	return nil
}
