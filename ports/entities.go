package ports

import (
	"context"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
)

// EntityWrite is one entity-layer write of a record, as decided before the
// record's commit (dbsync.Decide): the admitted state and its identity,
// and the outcome the write carries out. Whoever assembles a job's end (or
// a unit of work) may read Outcome to queue what follows from it in the
// same commit (subscription deliveries).
type EntityWrite struct {
	dbsync.Write
	Outcome dbsync.Outcome
	// Feeds are the schema's registrations the decision read (nil: not
	// known). A store may render the write's deltas against them before
	// it locks anything, as long as it checks, in the commit, that the
	// feeding links are still these (else it renders again under lock).
	Feeds []*dbsync.Database
}

// EntityWritten is what a store wrote for one EntityWrite.
type EntityWritten struct {
	EntityID string
	Revision int64
	// Deltas are the ids handed out per registration, in write order.
	Deltas map[string][]int64
}

// EntityWriter writes the entity layer inside a unit of work
// (Repos.Entities): each write's entity row at its identity's next
// revision, the revision, and the data deltas of every registration that
// feeds on the schema, read under lock in the unit, so the record, the
// entity and its deltas commit together or not at all.
type EntityWriter interface {
	WriteEntities(ctx context.Context, writes []EntityWrite) ([]EntityWritten, error)
	// DeleteSchemaEntities deletes a schema's entity rows in the unit and
	// returns how many (a schema's purge); their revisions stay.
	DeleteSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error)
	// CountSchemaEntities counts a schema's entity rows in the unit.
	CountSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error)
	// EntitiesMentioning returns the organization's entities whose
	// semantic id is one of texts or whose state holds one of them as a
	// string value (a concept merge's redirect, a delete's impact), in id
	// order, locked until the unit ends.
	EntitiesMentioning(ctx context.Context, orgID string, texts ...string) ([]*dbsync.Entity, error)
	// EntitiesByID returns the organization's entities among ids, in id
	// order; the others are left out.
	EntitiesByID(ctx context.Context, orgID string, ids []string) ([]*dbsync.Entity, error)
	// DeleteEntities deletes the organization's entities ids (others are
	// skipped), each at its identity's next revision, which its delete
	// deltas carry to every registration that feeds on its schema
	// (dbsync.DeleteDeltas), under batchID.
	DeleteEntities(ctx context.Context, orgID string, ids []string, batchID string, at time.Time) ([]EntityWritten, error)
	// LockFeeds locks, until the unit ends, the feeds of the registrations
	// that feed on the schemas, in registration id order (byte-wise), the
	// order every writer appends to feeds in: a unit that then appends to
	// several feeds in more than one write (a merge's deletes, then its
	// upserts) cannot deadlock with a job's end.
	LockFeeds(ctx context.Context, schemaIDs []string) error
}

// EntityQuery pages an entity list.
type EntityQuery struct {
	EntityType    string // "" every type
	Limit, Offset int
}

// EntityPage is one page of a schema's entities, most recently updated
// first, with the total and every entity type the schema has.
type EntityPage struct {
	Entities    []*dbsync.Entity
	Total       int64
	EntityTypes []string
}

// EntityStore reads and purges the entity layer (issue 28). Reads are
// scoped to one organization.
type EntityStore interface {
	// SchemaDatabases are the registrations linked to schemaID with their
	// links (settings and shipped maps): what an entity-layer decision
	// reads.
	SchemaDatabases(ctx context.Context, orgID, schemaID string) ([]*dbsync.Database, error)
	ListEntities(ctx context.Context, orgID, schemaID string, q EntityQuery) (EntityPage, error)
	// GetEntity returns an entity by id (ErrNotFound when it is not the
	// organization's).
	GetEntity(ctx context.Context, orgID, id string) (*dbsync.Entity, error)
	// DeleteSchemaEntities deletes a schema's entity rows and returns how
	// many; their revisions stay (entity_revisions), so a re-created
	// entity keeps rising.
	DeleteSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error)
}
