package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the database registry's refusals.
const (
	// CodeProjectionLocked (409): a change of pk_strategy,
	// propagate_not_null or key_language after the DDL shipped.
	CodeProjectionLocked = "projection_locked"
	// CodeAlreadyLinked (409): the schema is linked to the registration.
	CodeAlreadyLinked = "schema_already_linked"
	// CodeLastLink (409): the registration's only link; delete the
	// registration instead.
	CodeLastLink = "last_schema_link"
	// CodeUnlinkPending (409): the link's deltas are not all acknowledged;
	// force=true unlinks anyway.
	CodeUnlinkPending = "unlink_pending_deltas"
	// CodeNoDatabaseKey (409): the published contract has no identifying
	// property, so its rows have no identity.
	CodeNoDatabaseKey = "no_database_key"
	// CodeNotProjectable (409): the published contract cannot be projected.
	CodeNotProjectable = "contract_not_projectable"
)

// CustodyWarning is the create answer's warning when purge_entity_state is
// on.
const CustodyWarning = "purge_entity_state is on: entity rows are deleted here once every database of the schema " +
	"acknowledged them, so the replica becomes the only full copy; a lost replica cannot be rebuilt from a snapshot"

// DatabaseService manages database registrations and their links to
// schemas, and ships the DDL of a linked schema's projection as schema
// deltas.
type DatabaseService struct {
	Databases ports.DatabaseStore
	Schemas   ports.SchemaStore
	// UoW runs the writes that must agree: a registration, its schema's
	// linked flag and its DDL delta. Its Repos.Databases and Repos.Feed
	// must be set.
	UoW         ports.UnitOfWork
	SchemaCache ports.SchemaCache
	Clock       ports.Clock
	IDs         ports.IDs
}

// NewDatabaseService returns a DatabaseService; cache may be nil.
func NewDatabaseService(databases ports.DatabaseStore, schemas ports.SchemaStore, uow ports.UnitOfWork, cache ports.SchemaCache,
	clock ports.Clock, ids ports.IDs) *DatabaseService {
	return &DatabaseService{Databases: databases, Schemas: schemas, UoW: uow, SchemaCache: cache, Clock: clock, IDs: ids}
}

// DatabaseView is a registration as the API shows it: its counters and
// its linked schemas.
type DatabaseView struct {
	*dbsync.Database
	Counters dbsync.Counters
	Schemas  []LinkedSchema
}

// LinkedSchema is one link with what its schema says of it.
type LinkedSchema struct {
	dbsync.Link
	Name         string
	PublishState schema.PublishState
	// ContentHash is the content hash of the published contract the link
	// shipped and follows ("" while nothing shipped).
	ContentHash string
}

// DatabaseCreated is a create's answer.
type DatabaseCreated struct {
	View *DatabaseView
	// DDLDeltaID is the schema delta that ships the schema's tables (nil
	// when its schema was never published).
	DDLDeltaID     *int64
	StampedKeys    []StampedKeys
	CustodyWarning string
	// Notices restate propagate_not_null and pk_strategy with the
	// schema's own numbers.
	Notices []dbsync.Notice
}

// StampedKeys are the database keys of an entity type.
type StampedKeys struct {
	EntityType string
	Path       string
	Keys       []string
	Source     string
}

func (s *DatabaseService) ready() error {
	if s == nil || s.Databases == nil || s.UoW == nil {
		return coded(ErrNotSupported, "not_supported_yet", "database sync is not available on this storage")
	}
	return nil
}

func databaseNotFound(id string) error {
	return coded(ports.ErrNotFound, "not_found", "database %s not found", id)
}

// registryError turns the domain's refusals into coded errors.
func registryError(err error) error {
	var fe *dbsync.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return Invalid(fe.Field, "%s", fe.Detail)
	case errors.Is(err, dbsync.ErrLocked):
		return coded(ports.ErrConflict, CodeProjectionLocked, "%v: the consumer's tables were created with it; "+
			"register a new database (or reload from a snapshot after a migrate-projection) to change it", err)
	}
	return projectionError(LifecycleError(err))
}

// Create registers a database on schemaID and links it; a published
// schema's DDL ships as the feed's first delta in the same unit of work.
func (s *DatabaseService) Create(ctx context.Context, p *access.Principal, schemaID string, f dbsync.Fields) (*DatabaseCreated, error) {
	if err := access.Authorize(p, access.ActCreateDatabase); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	if err := checkID(schemaID); err != nil {
		return nil, Invalid("saved_schema_id", "saved_schema_id: %v", err)
	}
	now := s.Clock.Now()
	d, err := dbsync.New(s.IDs.NewID(), p.OrgID, f, now)
	if err != nil {
		return nil, registryError(err)
	}
	d.Links = []dbsync.Link{{SchemaID: schemaID, LinkedAt: now, EnrichmentEnabled: true}}
	out := &DatabaseCreated{}
	var sc *schema.Schema
	err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		var err error
		if sc, err = linkSchema(ctx, r, p.OrgID, schemaID, now); err != nil {
			return err
		}
		ship, err := shipLink(d, sc, now)
		if err != nil {
			return err
		}
		if err := r.Databases.CreateDatabase(ctx, d); err != nil {
			return err
		}
		out.DDLDeltaID, err = appendShip(ctx, r, d.ID, ship, now)
		return err
	})
	if err != nil {
		return nil, registryError(err)
	}
	schemaChanged(ctx, s.SchemaCache, p.OrgID, schemaID)
	if out.View, err = s.view(ctx, d); err != nil {
		return nil, err
	}
	if d.PurgeEntityState {
		out.CustodyWarning = CustodyWarning
	}
	out.StampedKeys = stampedKeys(d, sc)
	if out.Notices, err = d.Notices(schemaID, sc.PublishedContent); err != nil {
		return nil, registryError(err)
	}
	return out, nil
}

// List returns the organization's registrations (linked to schemaID when
// it is set), oldest first.
func (s *DatabaseService) List(ctx context.Context, p *access.Principal, schemaID string) ([]*DatabaseView, error) {
	if err := access.Authorize(p, access.ActListDatabases); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	if schemaID != "" {
		if err := checkID(schemaID); err != nil {
			return nil, err
		}
		if _, err := liveSchema(ctx, s.Schemas, p.OrgID, schemaID); err != nil {
			return nil, err
		}
	}
	ds, err := s.Databases.ListDatabases(ctx, p.OrgID, schemaID)
	if err != nil {
		return nil, err
	}
	out := make([]*DatabaseView, 0, len(ds))
	for _, d := range ds {
		v, err := s.view(ctx, d)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Get returns a registration.
func (s *DatabaseService) Get(ctx context.Context, p *access.Principal, id string) (*DatabaseView, error) {
	d, err := s.get(ctx, p, access.ActGetDatabase, id)
	if err != nil {
		return nil, err
	}
	return s.view(ctx, d)
}

func (s *DatabaseService) get(ctx context.Context, p *access.Principal, a access.Action, id string) (*dbsync.Database, error) {
	if err := access.Authorize(p, a); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	d, err := s.Databases.GetDatabase(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, databaseNotFound(id)
	}
	return d, err
}

// Update changes a registration's settings. A change of a projection
// option its shipped DDL fixed is 409 projection_locked.
func (s *DatabaseService) Update(ctx context.Context, p *access.Principal, id string, f dbsync.Fields) (*DatabaseView, error) {
	if err := access.Authorize(p, access.ActUpdateDatabase); err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	now := s.Clock.Now()
	d, err := s.Databases.UpdateDatabase(ctx, p.OrgID, id, func(d *dbsync.Database) error {
		if err := d.CheckLocked(f); err != nil {
			return err
		}
		return d.Apply(f, now)
	})
	if errors.Is(err, ports.ErrNotFound) {
		return nil, databaseNotFound(id)
	}
	if err != nil {
		return nil, registryError(err)
	}
	linksChanged(ctx, s.SchemaCache, d)
	return s.view(ctx, d)
}

// linksChanged says that the settings of d, which its linked schemas'
// enrichments read (on_gaps, key_language, enrichment_enabled), changed:
// the schema cache drops each schema, with the registrations it keeps of
// it.
func linksChanged(ctx context.Context, cache ports.SchemaCache, d *dbsync.Database) {
	for _, l := range d.Links {
		schemaChanged(ctx, cache, d.OrgID, l.SchemaID)
	}
}

// Delete removes a registration with its links, feed and deltas; a schema
// no other registration links is unlinked, with o's options (Force has no
// meaning here). Owner only. A second delete is
// 404, as a schema's or a key's.
func (s *DatabaseService) Delete(ctx context.Context, p *access.Principal, id string, o UnlinkOptions) error {
	if err := access.Authorize(p, access.ActDeleteDatabase); err != nil {
		return err
	}
	if err := s.ready(); err != nil {
		return err
	}
	if err := checkID(id); err != nil {
		return err
	}
	var unlinked []string
	now := s.Clock.Now()
	err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		d, err := r.Databases.GetDatabase(ctx, p.OrgID, id)
		if err != nil {
			return err
		}
		if err := r.Databases.DeleteDatabase(ctx, p.OrgID, id); err != nil {
			return err
		}
		for _, l := range d.Links {
			done, err := unlinkIfLast(ctx, r, p.OrgID, l.SchemaID, o, now)
			if err != nil {
				return err
			}
			if done {
				unlinked = append(unlinked, l.SchemaID)
			}
		}
		return nil
	})
	if errors.Is(err, ports.ErrNotFound) {
		if _, ok := AsError(err); !ok {
			return databaseNotFound(id)
		}
	}
	if err != nil {
		return err
	}
	for _, sid := range unlinked {
		schemaChanged(ctx, s.SchemaCache, p.OrgID, sid)
	}
	return nil
}

// view adds the counters and the linked schemas' names and states.
func (s *DatabaseService) view(ctx context.Context, d *dbsync.Database) (*DatabaseView, error) {
	c, err := s.Databases.Counters(ctx, d.OrgID, d.ID)
	if err != nil {
		return nil, fmt.Errorf("counters of database %s: %w", d.ID, err)
	}
	v := &DatabaseView{Database: d, Counters: c, Schemas: make([]LinkedSchema, 0, len(d.Links))}
	for _, l := range d.Links {
		ls := LinkedSchema{Link: l, PublishState: schema.Unpublished, ContentHash: l.ShippedHash}
		if sc, err := s.Schemas.GetSchema(ctx, d.OrgID, l.SchemaID); err == nil {
			ls.Name, ls.PublishState = sc.Name, sc.PublishState()
		} else if !errors.Is(err, ports.ErrNotFound) {
			return nil, err
		}
		v.Schemas = append(v.Schemas, ls)
	}
	return v, nil
}
