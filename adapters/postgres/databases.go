package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.DatabaseStore = (*DatabaseStore)(nil)

type databaseRow struct {
	bun.BaseModel `bun:"table:databases"`

	ID                   string    `bun:"id,pk"`
	OrgID                string    `bun:"org_id,notnull"`
	Name                 string    `bun:"name,notnull"`
	Dialect              string    `bun:"dialect,notnull"`
	PageLimit            int       `bun:"page_limit,notnull"`
	PurgeOnAck           bool      `bun:"purge_on_ack,notnull"`
	PurgeEntityState     bool      `bun:"purge_entity_state,notnull"`
	OnGaps               string    `bun:"on_gaps,notnull"`
	PKStrategy           string    `bun:"pk_strategy,notnull"`
	IndexScalars         string    `bun:"index_scalars,notnull"`
	NotifyDebounceS      int       `bun:"notify_debounce_s,notnull"`
	MaxThresholdTimeoutS int       `bun:"max_threshold_timeout_s,notnull"`
	KeyLanguage          string    `bun:"key_language,notnull"`
	PropagateNotNull     bool      `bun:"propagate_not_null,notnull"`
	SnapshotRequiredFrom int64     `bun:"snapshot_required_from,notnull"`
	CreatedAt            time.Time `bun:"created_at,notnull"`
	UpdatedAt            time.Time `bun:"updated_at,notnull"`
}

type databaseLinkRow struct {
	bun.BaseModel `bun:"table:database_links"`

	DatabaseID        string      `bun:"database_id,pk"`
	SchemaID          string      `bun:"schema_id,pk"`
	OrgID             string      `bun:"org_id,notnull"`
	LinkedAt          time.Time   `bun:"linked_at,notnull"`
	EnrichmentEnabled bool        `bun:"enrichment_enabled,notnull"`
	WebhookURL        string      `bun:"webhook_url,notnull"`
	WebhookSecret     string      `bun:"webhook_secret,notnull"`
	Shipped           *relmap.Map `bun:"shipped,type:jsonb"`
	ShippedHash       string      `bun:"shipped_hash,notnull"`
}

type deltaFeedRow struct {
	bun.BaseModel `bun:"table:delta_feeds"`

	DatabaseID string `bun:"database_id,pk"`
}

func databaseToRow(d *dbsync.Database) *databaseRow {
	return &databaseRow{ID: d.ID, OrgID: d.OrgID, Name: d.Name, Dialect: d.Dialect, PageLimit: d.PageLimit,
		PurgeOnAck: d.PurgeOnAck, PurgeEntityState: d.PurgeEntityState, OnGaps: string(d.OnGaps),
		PKStrategy: string(d.PKStrategy), IndexScalars: string(d.IndexScalars), NotifyDebounceS: d.NotifyDebounceS,
		MaxThresholdTimeoutS: d.MaxThresholdTimeoutS, KeyLanguage: d.KeyLanguage, PropagateNotNull: d.PropagateNotNull,
		SnapshotRequiredFrom: d.SnapshotRequiredFrom, CreatedAt: utc(d.CreatedAt), UpdatedAt: utc(d.UpdatedAt)}
}

func (r *databaseRow) database() *dbsync.Database {
	return &dbsync.Database{ID: r.ID, OrgID: r.OrgID, Name: r.Name, Dialect: r.Dialect, PageLimit: r.PageLimit,
		PurgeOnAck: r.PurgeOnAck, PurgeEntityState: r.PurgeEntityState, OnGaps: dbsync.OnGaps(r.OnGaps),
		PKStrategy: dbsync.PKStrategy(r.PKStrategy), IndexScalars: dbsync.IndexScalars(r.IndexScalars),
		NotifyDebounceS: r.NotifyDebounceS, MaxThresholdTimeoutS: r.MaxThresholdTimeoutS, KeyLanguage: r.KeyLanguage,
		PropagateNotNull: r.PropagateNotNull, SnapshotRequiredFrom: r.SnapshotRequiredFrom, CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt), Links: []dbsync.Link{}}
}

func linkRows(d *dbsync.Database) []databaseLinkRow {
	rows := make([]databaseLinkRow, len(d.Links))
	for i, l := range d.Links {
		rows[i] = databaseLinkRow{DatabaseID: d.ID, SchemaID: l.SchemaID, OrgID: d.OrgID, LinkedAt: utc(l.LinkedAt),
			EnrichmentEnabled: l.EnrichmentEnabled, WebhookURL: l.WebhookURL, WebhookSecret: l.WebhookSecret, Shipped: l.Shipped,
			ShippedHash: l.ShippedHash}
	}
	return rows
}

func (r *databaseLinkRow) link() dbsync.Link {
	return dbsync.Link{SchemaID: r.SchemaID, LinkedAt: utc(r.LinkedAt), EnrichmentEnabled: r.EnrichmentEnabled,
		WebhookURL: r.WebhookURL, WebhookSecret: r.WebhookSecret, Shipped: r.Shipped, ShippedHash: r.ShippedHash}
}

// DatabaseStore keeps registrations in databases and their links in
// database_links; a registration's feed row (delta_feeds) is created with
// it.
type DatabaseStore struct{ db bun.IDB }

// NewDatabaseStore returns a DatabaseStore on db.
func NewDatabaseStore(db bun.IDB) *DatabaseStore { return &DatabaseStore{db: db} }

// CreateDatabase inserts the registration, its links and its feed row in
// one transaction; an existing id is ErrConflict.
func (s *DatabaseStore) CreateDatabase(ctx context.Context, d *dbsync.Database) error {
	return inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(databaseToRow(d)).Exec(ctx); err != nil {
			return conflict(err, "create database "+d.ID)
		}
		if rows := linkRows(d); len(rows) > 0 {
			if _, err := tx.NewInsert().Model(&rows).Exec(ctx); err != nil {
				return conflict(err, "link database "+d.ID)
			}
		}
		if _, err := tx.NewInsert().Model(&deltaFeedRow{DatabaseID: d.ID}).Exec(ctx); err != nil {
			return conflict(err, "create the feed of database "+d.ID)
		}
		return nil
	})
}

// GetDatabase returns orgID's registration id with its links.
func (s *DatabaseStore) GetDatabase(ctx context.Context, orgID, id string) (*dbsync.Database, error) {
	return s.get(ctx, s.db, orgID, id, false)
}

func (s *DatabaseStore) get(ctx context.Context, db bun.IDB, orgID, id string, lock bool) (*dbsync.Database, error) {
	var r databaseRow
	q := db.NewSelect().Model(&r).Where("id = ?", id).Where("org_id = ?", orgID)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, notFound(err, "get database "+id)
	}
	out := []*dbsync.Database{r.database()}
	if err := s.links(ctx, db, out); err != nil {
		return nil, err
	}
	return out[0], nil
}

// links loads the links of ds, in link order.
func (s *DatabaseStore) links(ctx context.Context, db bun.IDB, ds []*dbsync.Database) error {
	if len(ds) == 0 {
		return nil
	}
	byID := make(map[string]*dbsync.Database, len(ds))
	ids := make([]string, len(ds))
	for i, d := range ds {
		byID[d.ID], ids[i] = d, d.ID
	}
	var rows []databaseLinkRow
	err := db.NewSelect().Model(&rows).Where("database_id IN (?)", bun.In(ids)).
		Order("database_id", "linked_at", "schema_id").Scan(ctx)
	if err != nil {
		return fail(err, "list database links")
	}
	for i := range rows {
		d := byID[rows[i].DatabaseID]
		d.Links = append(d.Links, rows[i].link())
	}
	return nil
}

// ListDatabases returns orgID's registrations, oldest first; with schemaID
// set, those linked to it.
func (s *DatabaseStore) ListDatabases(ctx context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	var rows []databaseRow
	q := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID).Order("created_at", "id")
	if schemaID != "" {
		q = q.Where("id IN (SELECT l.database_id FROM database_links l WHERE l.schema_id = ?)", schemaID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fail(err, "list databases")
	}
	out := make([]*dbsync.Database, len(rows))
	for i := range rows {
		out[i] = rows[i].database()
	}
	if err := s.links(ctx, s.db, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateDatabase locks the registration, applies fn and writes the row and
// the links fn left (removed links deleted, the others upserted).
func (s *DatabaseStore) UpdateDatabase(ctx context.Context, orgID, id string, fn func(*dbsync.Database) error) (*dbsync.Database, error) {
	var out *dbsync.Database
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		d, err := s.get(ctx, tx, orgID, id, true)
		if err != nil {
			return err
		}
		created := d.CreatedAt
		if err := fn(d); err != nil {
			return err
		}
		d.ID, d.OrgID, d.CreatedAt = id, orgID, created
		if _, err := tx.NewUpdate().Model(databaseToRow(d)).WherePK().Exec(ctx); err != nil {
			return fail(err, "update database "+id)
		}
		if err := writeLinks(ctx, tx, d); err != nil {
			return err
		}
		out = databaseToRow(d).database()
		for _, r := range linkRows(d) {
			out.Links = append(out.Links, r.link())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writeLinks makes d's stored links the ones d has.
func writeLinks(ctx context.Context, tx bun.Tx, d *dbsync.Database) error {
	del := tx.NewDelete().Model((*databaseLinkRow)(nil)).Where("database_id = ?", d.ID)
	if ids := d.SchemaIDs(); len(ids) > 0 {
		del = del.Where("schema_id NOT IN (?)", bun.In(ids))
	}
	if _, err := del.Exec(ctx); err != nil {
		return fail(err, "unlink database "+d.ID)
	}
	rows := linkRows(d)
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).On("CONFLICT (database_id, schema_id) DO UPDATE").
		Set("linked_at = EXCLUDED.linked_at").Set("enrichment_enabled = EXCLUDED.enrichment_enabled").
		Set("webhook_url = EXCLUDED.webhook_url").Set("webhook_secret = EXCLUDED.webhook_secret").
		Set("shipped = EXCLUDED.shipped").Set("shipped_hash = EXCLUDED.shipped_hash").Exec(ctx)
	if err != nil {
		return fail(err, "link database "+d.ID)
	}
	return nil
}

// DeleteDatabase deletes the registration; its links, feed row and deltas
// go with it (ON DELETE CASCADE).
func (s *DatabaseStore) DeleteDatabase(ctx context.Context, orgID, id string) error {
	res, err := s.db.NewDelete().Model((*databaseRow)(nil)).Where("id = ?", id).Where("org_id = ?", orgID).Exec(ctx)
	if err != nil {
		return fail(err, "delete database "+id)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fail(err, "delete database "+id)
	} else if n == 0 {
		return fmt.Errorf("postgres: delete database %s: %w", id, ports.ErrNotFound)
	}
	return nil
}

// countersQuery counts in one statement: a delta is quarantined when its
// batch key (batch_id, or '#' and its id) is in the feed's quarantined
// list or it is marked quarantined; pending when it is above the
// watermark and not quarantined.
const countersQuery = `SELECT
	(SELECT count(*) FROM deltas x WHERE x.database_id = d.id AND x.id > f.watermark
		AND x.quarantined_at IS NULL
		AND NOT (CASE WHEN x.batch_id <> '' THEN x.batch_id ELSE '#' || x.id END) = ANY (f.quarantined)) AS pending,
	(SELECT count(*) FROM deltas x WHERE x.database_id = d.id
		AND (x.quarantined_at IS NOT NULL
		OR (CASE WHEN x.batch_id <> '' THEN x.batch_id ELSE '#' || x.id END) = ANY (f.quarantined))) AS quarantined,
	(SELECT count(*) FROM entities e WHERE e.org_id = d.org_id
		AND e.schema_id IN (SELECT l.schema_id FROM database_links l WHERE l.database_id = d.id)) AS entities
FROM databases d LEFT JOIN delta_feeds f ON f.database_id = d.id
WHERE d.id = ? AND d.org_id = ?`

// Counters returns the registration's live counts.
func (s *DatabaseStore) Counters(ctx context.Context, orgID, id string) (dbsync.Counters, error) {
	var c dbsync.Counters
	err := s.db.NewRaw(countersQuery, id, orgID).Scan(ctx, &c.PendingDeltas, &c.QuarantinedDeltas, &c.EntityCount)
	if err != nil {
		return dbsync.Counters{}, notFound(err, "counters of database "+id)
	}
	return c, nil
}

// PendingSchemaDeltas counts the registration's deltas of schemaID above
// the watermark and outside the quarantine, in one statement.
func (s *DatabaseStore) PendingSchemaDeltas(ctx context.Context, orgID, id, schemaID string) (int64, error) {
	var n int64
	err := s.db.NewRaw(`SELECT count(x.id) FROM databases d JOIN delta_feeds f ON f.database_id = d.id
		LEFT JOIN deltas x ON x.database_id = d.id AND x.schema_id = ?2 AND x.id > f.watermark AND x.quarantined_at IS NULL
			AND NOT (CASE WHEN x.batch_id <> '' THEN x.batch_id ELSE '#' || x.id END) = ANY (f.quarantined)
		WHERE d.id = ?0 AND d.org_id = ?1 GROUP BY d.id`, id, orgID, schemaID).Scan(ctx, &n)
	if err != nil {
		return 0, notFound(err, "pending deltas of database "+id)
	}
	return n, nil
}
