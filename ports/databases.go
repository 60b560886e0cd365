package ports

import (
	"context"

	"github.com/entityenrich/enrich/domain/dbsync"
)

// DatabaseStore keeps database registrations and their links to schemas
// (issue 28). Reads are scoped to one organization: another
// organization's registration is ErrNotFound. The feed, the entity layer,
// credentials and subscriptions have ports of their own.
type DatabaseStore interface {
	// CreateDatabase stores a registration with its links (at least one)
	// and an empty feed.
	CreateDatabase(ctx context.Context, d *dbsync.Database) error
	GetDatabase(ctx context.Context, orgID, id string) (*dbsync.Database, error)
	// ListDatabases returns the organization's registrations, oldest first;
	// with schemaID set, only those linked to that schema.
	ListDatabases(ctx context.Context, orgID, schemaID string) ([]*dbsync.Database, error)
	// UpdateDatabase loads the registration (locking it), calls fn and
	// stores what fn left, links included, when fn returns nil; fn's error
	// is returned as it is and nothing is written. Id, organization and
	// creation time never change.
	UpdateDatabase(ctx context.Context, orgID, id string, fn func(*dbsync.Database) error) (*dbsync.Database, error)
	// DeleteDatabase removes the registration with its links and its feed
	// (ErrNotFound when it is not there).
	DeleteDatabase(ctx context.Context, orgID, id string) error
	// Counters returns the live counts of a registration.
	Counters(ctx context.Context, orgID, id string) (dbsync.Counters, error)
	// PendingSchemaDeltas counts the registration's deltas of schemaID
	// that are neither acknowledged nor quarantined.
	PendingSchemaDeltas(ctx context.Context, orgID, id, schemaID string) (int64, error)
}
