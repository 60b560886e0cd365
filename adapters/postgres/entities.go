package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.EntityStore = (*EntityStore)(nil)

// EntityStore reads and purges the entity layer.
type EntityStore struct{ db bun.IDB }

// NewEntityStore returns an EntityStore on db.
func NewEntityStore(db bun.IDB) *EntityStore { return &EntityStore{db: db} }

type schemaDatabaseRow struct {
	ID                   string         `bun:"id"`
	OrgID                string         `bun:"org_id"`
	Name                 string         `bun:"name"`
	Dialect              string         `bun:"dialect"`
	PageLimit            int            `bun:"page_limit"`
	PurgeOnAck           bool           `bun:"purge_on_ack"`
	PurgeEntityState     bool           `bun:"purge_entity_state"`
	OnGaps               string         `bun:"on_gaps"`
	PKStrategy           string         `bun:"pk_strategy"`
	IndexScalars         string         `bun:"index_scalars"`
	NotifyDebounceS      int            `bun:"notify_debounce_s"`
	MaxThresholdTimeoutS int            `bun:"max_threshold_timeout_s"`
	KeyLanguage          string         `bun:"key_language"`
	PropagateNotNull     bool           `bun:"propagate_not_null"`
	CreatedAt            time.Time      `bun:"created_at"`
	UpdatedAt            time.Time      `bun:"updated_at"`
	SchemaID             string         `bun:"schema_id"`
	LinkedAt             time.Time      `bun:"linked_at"`
	EnrichmentEnabled    bool           `bun:"enrichment_enabled"`
	Shipped              sql.NullString `bun:"shipped"`
}

// SchemaDatabases reads the organization's registrations linked to
// schemaID, each with its link to that schema (one round trip).
func (s *EntityStore) SchemaDatabases(ctx context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	var rows []schemaDatabaseRow
	err := s.db.NewRaw(`SELECT d.id, d.org_id, d.name, d.dialect, d.page_limit, d.purge_on_ack, d.purge_entity_state,
	d.on_gaps, d.pk_strategy, d.index_scalars, d.notify_debounce_s, d.max_threshold_timeout_s, d.key_language,
	d.propagate_not_null, d.created_at, d.updated_at, l.schema_id, l.linked_at, l.enrichment_enabled, l.shipped::text AS shipped
FROM databases d JOIN database_links l ON l.database_id = d.id AND l.schema_id = ?
WHERE d.org_id = ? ORDER BY d.created_at, d.id`, schemaID, orgID).Scan(ctx, &rows)
	if err != nil {
		return nil, fail(err, "read the databases of schema "+schemaID)
	}
	out := make([]*dbsync.Database, 0, len(rows))
	for _, r := range rows {
		d := &dbsync.Database{ID: r.ID, OrgID: r.OrgID, Name: r.Name, Dialect: r.Dialect, PageLimit: r.PageLimit,
			PurgeOnAck: r.PurgeOnAck, PurgeEntityState: r.PurgeEntityState, OnGaps: dbsync.OnGaps(r.OnGaps),
			PKStrategy: dbsync.PKStrategy(r.PKStrategy), IndexScalars: dbsync.IndexScalars(r.IndexScalars),
			NotifyDebounceS: r.NotifyDebounceS, MaxThresholdTimeoutS: r.MaxThresholdTimeoutS, KeyLanguage: r.KeyLanguage,
			PropagateNotNull: r.PropagateNotNull, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		l := dbsync.Link{SchemaID: r.SchemaID, LinkedAt: r.LinkedAt, EnrichmentEnabled: r.EnrichmentEnabled}
		if r.Shipped.Valid {
			var m relmap.Map
			if err := json.Unmarshal([]byte(r.Shipped.String), &m); err != nil {
				return nil, fmt.Errorf("postgres: the shipped map of database %s: %w", r.ID, err)
			}
			l.Shipped = &m
		}
		d.Links = []dbsync.Link{l}
		out = append(out, d)
	}
	return out, nil
}

type entityRow struct {
	bun.BaseModel `bun:"table:entities"`
	ID            string          `bun:"id,pk"`
	OrgID         string          `bun:"org_id"`
	SchemaID      string          `bun:"schema_id"`
	EntityType    string          `bun:"entity_type"`
	KeyIdentity   string          `bun:"key_identity"`
	Keys          json.RawMessage `bun:"keys,type:jsonb"`
	SemanticID    string          `bun:"semantic_id"`
	Payload       json.RawMessage `bun:"payload,type:jsonb"`
	Revision      int64           `bun:"revision"`
	LastRecordID  string          `bun:"last_record_id"`
	UpdatedAt     time.Time       `bun:"updated_at"`
}

func (r entityRow) entity() *dbsync.Entity {
	e := &dbsync.Entity{ID: r.ID, OrgID: r.OrgID, SchemaID: r.SchemaID, EntityType: r.EntityType,
		KeyIdentity: r.KeyIdentity, SemanticID: r.SemanticID, Payload: r.Payload, Revision: r.Revision,
		LastRecordID: r.LastRecordID, UpdatedAt: r.UpdatedAt.UTC()}
	_ = json.Unmarshal(r.Keys, &e.Keys)
	return e
}

// ListEntities pages a schema's entities, most recently updated first.
func (s *EntityStore) ListEntities(ctx context.Context, orgID, schemaID string, q ports.EntityQuery) (ports.EntityPage, error) {
	page := ports.EntityPage{Entities: []*dbsync.Entity{}, EntityTypes: []string{}}
	err := s.db.NewRaw("SELECT DISTINCT entity_type FROM entities WHERE org_id = ? AND schema_id = ? ORDER BY entity_type",
		orgID, schemaID).Scan(ctx, &page.EntityTypes)
	if err != nil {
		return page, fail(err, "list entity types")
	}
	var rows []entityRow
	sel := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Where("schema_id = ?", schemaID)
	if q.EntityType != "" {
		sel = sel.Where("entity_type = ?", q.EntityType)
	}
	sel = sel.OrderExpr("updated_at DESC, id").Offset(int64(q.Offset))
	if q.Limit > 0 {
		sel = sel.Limit(int64(q.Limit))
	}
	n, err := sel.ScanAndCount(ctx)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return page, fail(err, "list entities")
	}
	page.Total = int64(n)
	for _, r := range rows {
		page.Entities = append(page.Entities, r.entity())
	}
	return page, nil
}

// GetEntity returns an entity of the organization by id.
func (s *EntityStore) GetEntity(ctx context.Context, orgID, id string) (*dbsync.Entity, error) {
	var r entityRow
	err := s.db.NewSelect().Model(&r).Where("id = ?", id).Where("org_id = ?", orgID).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: entity %s: %w", id, ports.ErrNotFound)
	}
	if err != nil {
		return nil, fail(err, "get entity "+id)
	}
	return r.entity(), nil
}

// DeleteSchemaEntities deletes a schema's entity rows; entity_revisions
// stays.
func (s *EntityStore) DeleteSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error) {
	res, err := s.db.NewDelete().TableExpr("entities").Where("org_id = ?", orgID).Where("schema_id = ?", schemaID).Exec(ctx)
	if err != nil {
		return 0, fail(err, "delete the entities of schema "+schemaID)
	}
	return res.RowsAffected()
}
