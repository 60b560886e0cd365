package app

import (
	"context"
	"errors"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

// Entity listing bounds (GET /api/schemas/{id}/entities).
const (
	DefaultEntityLimit = 100
	MaxEntityLimit     = 1000
)

// EntityService reads a schema's entity layer, feeds stored or supplied
// outputs through it (sync-to-database) and reinjects quarantined
// entities.
type EntityService struct {
	Entities ports.EntityStore
	Schemas  ports.SchemaStore
	Records  ports.RecordStore
	// UoW writes the injected records and entities together; its
	// Repos.Records and Repos.Entities (and Repos.Feed for a reinject)
	// must be set.
	UoW      ports.UnitOfWork
	Compiler ports.SchemaCompiler
	Clock    ports.Clock
	IDs      ports.IDs
	// Feed lists and releases quarantined deltas (a reinject; nil: not
	// available on this storage).
	Feed ports.FeedStore
	// Events renders the schema events a sync-to-database queues (nil:
	// it queues none).
	Events *SchemaEvents
}

// NewEntityService returns an EntityService.
func NewEntityService(entities ports.EntityStore, schemas ports.SchemaStore, records ports.RecordStore, uow ports.UnitOfWork,
	compiler ports.SchemaCompiler, feed ports.FeedStore, clock ports.Clock, ids ports.IDs) *EntityService {
	return &EntityService{Entities: entities, Schemas: schemas, Records: records, UoW: uow, Compiler: compiler,
		Feed: feed, Clock: clock, IDs: ids}
}

func (s *EntityService) ready() error {
	if s == nil || s.Entities == nil || s.UoW == nil {
		return coded(ErrNotSupported, "not_supported_yet", "the entity layer is not available on this storage")
	}
	return nil
}

// List pages a schema's entities, most recently updated first: limit 1 to
// MaxEntityLimit, offset 0 or more, entity_type optional.
func (s *EntityService) List(ctx context.Context, p *access.Principal, schemaID string, q ports.EntityQuery) (ports.EntityPage, error) {
	if err := access.Authorize(p, access.ActListEntities); err != nil {
		return ports.EntityPage{}, err
	}
	if err := s.ready(); err != nil {
		return ports.EntityPage{}, err
	}
	switch {
	case q.Limit < 1 || q.Limit > MaxEntityLimit:
		return ports.EntityPage{}, Invalid("limit", "limit must be between 1 and %d", MaxEntityLimit)
	case q.Offset < 0:
		return ports.EntityPage{}, Invalid("offset", "offset must be 0 or more")
	}
	if err := checkID(schemaID); err != nil {
		return ports.EntityPage{}, err
	}
	if err := checkText("entity_type", q.EntityType); err != nil {
		return ports.EntityPage{}, err
	}
	if _, err := liveSchema(ctx, s.Schemas, p.OrgID, schemaID); err != nil {
		return ports.EntityPage{}, err
	}
	return s.Entities.ListEntities(ctx, p.OrgID, schemaID, q)
}

// entityWrites writes ws in a unit of work with the records recs; the
// store's refusal of an unrenderable state is a 400.
func writeEntities(ctx context.Context, r ports.Repos, ws []ports.EntityWrite) ([]ports.EntityWritten, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	if r.Entities == nil {
		return nil, coded(ErrNotSupported, "not_supported_yet", "the entity layer is not available on this storage")
	}
	out, err := r.Entities.WriteEntities(ctx, ws)
	if errors.Is(err, ports.ErrInvalid) {
		return nil, coded(ports.ErrInvalid, "entity_not_renderable", "%v", err)
	}
	return out, err
}
