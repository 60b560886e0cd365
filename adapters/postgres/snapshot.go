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

var _ ports.SnapshotReader = (*SnapshotReader)(nil)

// SnapshotReader reads a registration, its feed's head and its entities in
// one REPEATABLE READ, READ ONLY transaction: the entities are the state
// that every committed delta up to the head leads to, because a writer
// appends its deltas and writes its entities in one transaction.
type SnapshotReader struct{ db *bun.DB }

// NewSnapshotReader returns the reader on db (not a transaction: it opens
// its own, at its own isolation).
func NewSnapshotReader(db *bun.DB) *SnapshotReader { return &SnapshotReader{db: db} }

type snapLink struct {
	SchemaID          string          `bun:"schema_id"`
	LinkedAt          time.Time       `bun:"linked_at"`
	EnrichmentEnabled bool            `bun:"enrichment_enabled"`
	WebhookURL        string          `bun:"webhook_url"`
	Shipped           json.RawMessage `bun:"shipped"`
}

type snapEntity struct {
	ID           string          `bun:"id"`
	OrgID        string          `bun:"org_id"`
	SchemaID     string          `bun:"schema_id"`
	EntityType   string          `bun:"entity_type"`
	KeyIdentity  string          `bun:"key_identity"`
	Keys         json.RawMessage `bun:"keys"`
	SemanticID   string          `bun:"semantic_id"`
	Payload      json.RawMessage `bun:"payload"`
	Revision     int64           `bun:"revision"`
	LastRecordID string          `bun:"last_record_id"`
	UpdatedAt    time.Time       `bun:"updated_at"`
}

func (s *SnapshotReader) ReadSnapshot(ctx context.Context, orgID, databaseID string, fn func(context.Context, ports.SnapshotView) error) error {
	opts := &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	return s.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error {
		d, err := readSnapshotDatabase(ctx, tx, orgID, databaseID)
		if err != nil {
			return err
		}
		var heads []int64
		if err := tx.NewRaw(`SELECT next_id - 1 FROM delta_feeds WHERE database_id = ?`, databaseID).Scan(ctx, &heads); err != nil {
			return fail(err, "read the feed head of database "+databaseID)
		}
		v := ports.SnapshotView{Database: d}
		if len(heads) > 0 {
			v.Head = heads[0]
		}
		v.Entities = func(ctx context.Context, schemaID string, after ports.EntityCursor, limit int) ([]*dbsync.Entity, error) {
			return snapshotEntities(ctx, tx, orgID, schemaID, after, limit)
		}
		return fn(ctx, v)
	})
}

func readSnapshotDatabase(ctx context.Context, tx bun.Tx, orgID, id string) (*dbsync.Database, error) {
	d := &dbsync.Database{ID: id, OrgID: orgID, Dialect: dbsync.Dialect}
	err := tx.NewRaw(`SELECT name, snapshot_required_from, created_at, updated_at FROM databases WHERE id = ? AND org_id = ?`,
		id, orgID).Scan(ctx, &d.Name, &d.SnapshotRequiredFrom, &d.CreatedAt, &d.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: database %s: %w", id, ports.ErrNotFound)
	}
	if err != nil {
		return nil, fail(err, "read database "+id)
	}
	var links []snapLink
	if err := tx.NewRaw(`SELECT schema_id, linked_at, enrichment_enabled, webhook_url, shipped FROM database_links
		WHERE database_id = ? ORDER BY linked_at, schema_id`, id).Scan(ctx, &links); err != nil {
		return nil, fail(err, "read the links of database "+id)
	}
	for _, l := range links {
		link := dbsync.Link{SchemaID: l.SchemaID, LinkedAt: utc(l.LinkedAt), EnrichmentEnabled: l.EnrichmentEnabled, WebhookURL: l.WebhookURL}
		if len(l.Shipped) > 0 && string(l.Shipped) != "null" {
			var m relmap.Map
			if err := json.Unmarshal(l.Shipped, &m); err != nil {
				return nil, fmt.Errorf("postgres: the shipped projection of database %s, schema %s: %w", id, l.SchemaID, err)
			}
			link.Shipped = &m
		}
		d.Links = append(d.Links, link)
	}
	return d, nil
}

func snapshotEntities(ctx context.Context, tx bun.Tx, orgID, schemaID string, after ports.EntityCursor, limit int) ([]*dbsync.Entity, error) {
	var rows []snapEntity
	if err := tx.NewRaw(`SELECT id, org_id, schema_id, entity_type, key_identity, keys, semantic_id, payload, revision,
		last_record_id, updated_at FROM entities WHERE schema_id = ? AND org_id = ? AND (entity_type, key_identity) > (?, ?)
		ORDER BY entity_type, key_identity LIMIT ?`, schemaID, orgID, after.EntityType, after.KeyIdentity, limit).Scan(ctx, &rows); err != nil {
		return nil, fail(err, "read the entities of schema "+schemaID)
	}
	out := make([]*dbsync.Entity, len(rows))
	for i, r := range rows {
		e := &dbsync.Entity{ID: r.ID, OrgID: r.OrgID, SchemaID: r.SchemaID, EntityType: r.EntityType, KeyIdentity: r.KeyIdentity,
			SemanticID: r.SemanticID, Payload: r.Payload, Revision: r.Revision, LastRecordID: r.LastRecordID, UpdatedAt: utc(r.UpdatedAt)}
		if len(r.Keys) > 0 {
			_ = json.Unmarshal(r.Keys, &e.Keys)
		}
		out[i] = e
	}
	return out, nil
}

// SnapshotServed clears the registration's snapshot_required when a
// snapshot as of head covers the link that set it, in one statement.
func (s *SnapshotReader) SnapshotServed(ctx context.Context, orgID, databaseID string, head int64) error {
	_, err := s.db.NewRaw(`UPDATE databases SET snapshot_required_from = 0 WHERE id = ? AND org_id = ?
		AND snapshot_required_from > 0 AND snapshot_required_from <= ?`, databaseID, orgID, head).Exec(ctx)
	return failOrNil(err, "note the snapshot of database "+databaseID)
}
