package app

import (
	"context"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// projectionError turns relmap's refusals of a published contract into
// coded errors.
func projectionError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, relmap.ErrNoKey):
		return coded(ports.ErrConflict, CodeNoDatabaseKey, "%v: mark a property database_key (or identifying) and publish", err)
	case errors.Is(err, relmap.ErrKeyLanguage):
		return coded(ports.ErrInvalid, CodeKeyLanguageRequired, "%v", err).(*Error).at("key_language")
	case errors.Is(err, relmap.ErrContract), errors.Is(err, relmap.ErrDiff):
		return coded(ports.ErrConflict, CodeNotProjectable, "%v", err)
	}
	return err
}

// linkSchema marks a live schema linked in the unit of work r.
func linkSchema(ctx context.Context, r ports.Repos, orgID, schemaID string, now time.Time) (*schema.Schema, error) {
	sc, err := r.Schemas.UpdateSchema(ctx, orgID, schemaID, func(sc *schema.Schema) error {
		if sc.Deleted() {
			return schemaNotFound(schemaID)
		}
		sc.Link(now)
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		if _, ok := AsError(err); !ok {
			return nil, schemaNotFound(schemaID)
		}
	}
	return sc, err
}

// UnlinkOptions are the query options of an unlink and of a delete.
type UnlinkOptions struct {
	// DeleteEntityState deletes the entity rows of a schema no
	// registration links any more (revisions stay, so a re-created entity
	// keeps rising). A schema another registration links keeps them: they
	// feed that one.
	DeleteEntityState bool
	// ClearDatabaseModel strips the database-model flags
	// (schema.DatabaseModelFlags) from the working copy of a schema no
	// registration links any more; its published contract keeps them
	// until the next publish.
	ClearDatabaseModel bool
	// Force unlinks although the link's deltas are not all acknowledged
	// (unlink only).
	Force bool
}

// unlinkIfLast unlinks schemaID when no registration of orgID links it
// any more (after this unit's writes), applying o; it reports whether it
// did.
func unlinkIfLast(ctx context.Context, r ports.Repos, orgID, schemaID string, o UnlinkOptions, now time.Time) (bool, error) {
	ds, err := r.Databases.ListDatabases(ctx, orgID, schemaID)
	if err != nil || len(ds) > 0 {
		return false, err
	}
	_, err = r.Schemas.UpdateSchema(ctx, orgID, schemaID, func(sc *schema.Schema) error {
		sc.Unlink(now)
		if o.ClearDatabaseModel {
			if _, err := sc.ClearDatabaseModel(now); err != nil {
				return Invalid("clear_database_model", "clear_database_model: %v", err)
			}
		}
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		return false, nil // deleted permanently meanwhile
	}
	if err != nil {
		return false, err
	}
	if o.DeleteEntityState && r.Entities != nil {
		if _, err := r.Entities.DeleteSchemaEntities(ctx, orgID, schemaID); err != nil {
			return false, err
		}
	}
	return true, nil
}

// shipLink plans the DDL of a newly linked schema: its whole projection
// when the schema has a published contract, nothing before its first
// publish. The registration takes the schema's locked key language when
// it has none.
func shipLink(d *dbsync.Database, sc *schema.Schema, _ time.Time) (*dbsync.Ship, error) {
	if d.KeyLanguage == "" && sc.KeyLanguage != "" {
		d.KeyLanguage = sc.KeyLanguage
	}
	ship, err := d.PlanShip(sc.ID, sc.PublishedContent, false)
	d.NoteContract(sc.ID, sc.PublishedHash)
	return ship, err
}

// appendShip appends ship as one schema delta of the registration's feed.
func appendShip(ctx context.Context, r ports.Repos, databaseID string, ship *dbsync.Ship, now time.Time) (*int64, error) {
	if ship == nil {
		return nil, nil
	}
	ids, err := r.Feed.Append(ctx, databaseID, []ports.FeedRow{{Delta: delta.Delta{Kind: delta.Schema, Op: delta.Migrate,
		SQL: ship.Script(), Payload: ship.Payload(), CreatedAt: now}, SchemaID: ship.SchemaID}})
	if err != nil {
		return nil, err
	}
	return &ids[0], nil
}

// shipPublish ships the DDL of sc's new published contract to every
// registration linked to it, in the publish's unit of work, and returns
// the schema deltas' ids.
func shipPublish(ctx context.Context, r ports.Repos, sc *schema.Schema, confirm bool, now time.Time) ([]int64, error) {
	ids := []int64{}
	if r.Databases == nil || r.Feed == nil {
		return ids, nil
	}
	ds, err := r.Databases.ListDatabases(ctx, sc.OrgID, sc.ID)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		var ship *dbsync.Ship
		_, err := r.Databases.UpdateDatabase(ctx, sc.OrgID, d.ID, func(d *dbsync.Database) error {
			var err error
			ship, err = d.PlanShip(sc.ID, sc.PublishedContent, confirm)
			d.NoteContract(sc.ID, sc.PublishedHash)
			return err
		})
		if err != nil {
			return nil, err
		}
		id, err := appendShip(ctx, r, d.ID, ship, now)
		if err != nil {
			return nil, err
		}
		if id != nil {
			ids = append(ids, *id)
		}
	}
	return ids, nil
}

// stampedKeys are the database keys of the linked schema's entity type,
// from the shipped projection (none before a publish).
func stampedKeys(d *dbsync.Database, sc *schema.Schema) []StampedKeys {
	l, ok := d.Link(sc.ID)
	if !ok || l.Shipped == nil {
		return nil
	}
	k := StampedKeys{EntityType: l.Shipped.EntityType, Path: "", Source: "natural_keys", Keys: []string{}}
	for _, c := range l.Shipped.KeyColumns() {
		k.Keys = append(k.Keys, c.Source)
	}
	return []StampedKeys{k}
}

// LinkCreated is a link's answer.
type LinkCreated struct {
	View       *DatabaseView
	DDLDeltaID *int64
}

// Link links schemaID to the registration; a published schema's DDL ships
// as a schema delta in the same unit of work. keyLanguage, when set,
// becomes the registration's key language if it has none (another one
// after the DDL shipped is 409 projection_locked).
func (s *DatabaseService) Link(ctx context.Context, p *access.Principal, id, schemaID, keyLanguage string) (*LinkCreated, error) {
	if _, err := s.get(ctx, p, access.ActLinkDatabase, id); err != nil {
		return nil, err
	}
	if err := checkID(schemaID); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	out := &LinkCreated{}
	var d *dbsync.Database
	err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		sc, err := linkSchema(ctx, r, p.OrgID, schemaID, now)
		if err != nil {
			return err
		}
		var ship *dbsync.Ship
		var shippedBefore bool
		d, err = r.Databases.UpdateDatabase(ctx, p.OrgID, id, func(d *dbsync.Database) error {
			shippedBefore = d.ShapeShipped()
			if _, ok := d.Link(schemaID); ok {
				return coded(ports.ErrConflict, CodeAlreadyLinked, "schema %s is already linked to database %s", schemaID, id)
			}
			if keyLanguage != "" {
				f := dbsync.Fields{KeyLanguage: &keyLanguage}
				if err := d.CheckLocked(f); err != nil {
					return err
				}
				if err := d.Apply(f, now); err != nil {
					return err
				}
			}
			d.Links = append(d.Links, dbsync.Link{SchemaID: schemaID, LinkedAt: now, EnrichmentEnabled: true})
			d.UpdatedAt = now
			ship, err = shipLink(d, sc, now)
			return err
		})
		if err != nil {
			return err
		}
		if out.DDLDeltaID, err = appendShip(ctx, r, id, ship, now); err != nil {
			return err
		}
		d, err = requireSnapshot(ctx, r, d, schemaID, shippedBefore, out.DDLDeltaID)
		return err
	})
	if err = s.notFound(err, id); err != nil {
		return nil, registryError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, schemaID)
	out.View, err = s.view(ctx, d)
	return out, err
}

// requireSnapshot marks the registration snapshot_required when linking
// schemaID makes its consumer reload (dbsync.RelinkNeedsSnapshot), from
// the DDL delta ddl: a snapshot as of at least that id covers the link.
func requireSnapshot(ctx context.Context, r ports.Repos, d *dbsync.Database, schemaID string, shippedBefore bool,
	ddl *int64) (*dbsync.Database, error) {
	if !shippedBefore || ddl == nil || r.Entities == nil {
		return d, nil
	}
	n, err := r.Entities.CountSchemaEntities(ctx, d.OrgID, schemaID)
	if err != nil || !dbsync.RelinkNeedsSnapshot(shippedBefore, true, n > 0) {
		return d, err
	}
	return r.Databases.UpdateDatabase(ctx, d.OrgID, d.ID, func(d *dbsync.Database) error {
		d.SnapshotRequiredFrom = *ddl
		return nil
	})
}

// notFound maps a bare ErrNotFound (the registration's) to a 404 naming it.
func (s *DatabaseService) notFound(err error, id string) error {
	if errors.Is(err, ports.ErrNotFound) {
		if _, ok := AsError(err); !ok {
			return databaseNotFound(id)
		}
	}
	return err
}

// Unlink removes the link of schemaID; a schema no registration links any
// more is unlinked (its purge is then allowed). The registration's last
// link is refused (409 last_schema_link): delete the registration. So is
// a link whose deltas the consumer has not acknowledged yet (409
// unlink_pending_deltas) unless o.Force: they stay in the feed, but no
// later change follows them. Owner only.
func (s *DatabaseService) Unlink(ctx context.Context, p *access.Principal, id, schemaID string, o UnlinkOptions) error {
	if _, err := s.get(ctx, p, access.ActDeleteDatabase, id); err != nil {
		return err
	}
	if err := checkID(schemaID); err != nil {
		return err
	}
	now := s.Clock.Now()
	err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		_, err := r.Databases.UpdateDatabase(ctx, p.OrgID, id, func(d *dbsync.Database) error {
			i := d.LinkIndex(schemaID)
			switch {
			case i < 0:
				return coded(ports.ErrNotFound, "not_found", "schema %s is not linked to database %s", schemaID, id)
			case len(d.Links) == 1:
				return coded(ports.ErrConflict, CodeLastLink, "schema %s is the only schema of database %s; delete the database instead", schemaID, id)
			}
			d.Links = append(d.Links[:i], d.Links[i+1:]...)
			d.UpdatedAt = now
			return nil
		})
		if err != nil {
			return err
		}
		// After the link's own refusals; a refusal here rolls the unit back.
		if err := s.checkPending(ctx, r, p.OrgID, id, schemaID, o.Force); err != nil {
			return err
		}
		_, err = unlinkIfLast(ctx, r, p.OrgID, schemaID, o, now)
		return err
	})
	if err = s.notFound(err, id); err != nil {
		return err
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, schemaID)
	return nil
}

// checkPending refuses an unlink while the registration's feed holds
// unacknowledged deltas of the schema, unless force.
func (s *DatabaseService) checkPending(ctx context.Context, r ports.Repos, orgID, id, schemaID string, force bool) error {
	if force {
		return nil
	}
	n, err := r.Databases.PendingSchemaDeltas(ctx, orgID, id, schemaID)
	if err != nil || n == 0 {
		return err
	}
	return coded(ports.ErrConflict, CodeUnlinkPending, "database %s has %d unacknowledged deltas of schema %s; "+
		"let the consumer catch up, or unlink with force=true", id, n, schemaID)
}

// SetEnrichment turns a link's data deltas on or off.
func (s *DatabaseService) SetEnrichment(ctx context.Context, p *access.Principal, id, schemaID string, enabled bool) (*DatabaseView, error) {
	if err := access.Authorize(p, access.ActLinkDatabase); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	for _, v := range []string{id, schemaID} {
		if err := checkID(v); err != nil {
			return nil, err
		}
	}
	now := s.Clock.Now()
	d, err := s.Databases.UpdateDatabase(ctx, p.OrgID, id, func(d *dbsync.Database) error {
		i := d.LinkIndex(schemaID)
		if i < 0 {
			return coded(ports.ErrNotFound, "not_found", "schema %s is not linked to database %s", schemaID, id)
		}
		d.Links[i].EnrichmentEnabled, d.UpdatedAt = enabled, now
		return nil
	})
	if err = s.notFound(err, id); err != nil {
		return nil, err
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, schemaID)
	return s.view(ctx, d)
}
