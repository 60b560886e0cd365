package ports

import (
	"context"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
)

// CredentialStore keeps registrations' database credentials (only the
// hash of their refresh token) and the access tokens exchanged for them,
// so that revoking a credential can deny its live access tokens.
type CredentialStore interface {
	// CreateCredential stores c as the registration's active credential
	// and revokes the one it replaces (returned, nil when none), in one
	// step. ErrNotFound when c.DatabaseID is not a registration of c.OrgID.
	CreateCredential(ctx context.Context, c *dbsync.Credential) (replaced *dbsync.Credential, err error)
	// LatestCredential returns the registration's newest credential,
	// active or revoked; nil and no error when it never had one.
	// ErrNotFound: the registration is not the organization's.
	LatestCredential(ctx context.Context, orgID, databaseID string) (*dbsync.Credential, error)
	// RevokeCredential revokes the registration's active credential at
	// `at` and returns it (ErrNotFound when none is active).
	RevokeCredential(ctx context.Context, orgID, databaseID string, at time.Time) (*dbsync.Credential, error)
	// ExchangeCredential finds the active credential with this hash, notes
	// seen and records the access token tok, in one step that orders
	// itself with RevokeCredential: a token recorded here is listed by a
	// revocation that commits after it, and a credential revoked first is
	// ErrNotFound here. DatabaseName is set on the answer.
	ExchangeCredential(ctx context.Context, hash string, seen dbsync.Seen, tok access.DeniedToken) (*dbsync.Credential, error)
	// CredentialTokens lists the credential's access tokens that expire
	// after `after`.
	CredentialTokens(ctx context.Context, id string, after time.Time) ([]access.DeniedToken, error)
	// NoteCredentialSeen moves an active credential's last_seen forward
	// (a no-op for a revoked or unknown one).
	NoteCredentialSeen(ctx context.Context, id string, seen dbsync.Seen) error
	// NoteCredentialApplied raises the last_apply_delta_id of the
	// registration's active credential to upTo (never lowers it; a no-op
	// without one).
	NoteCredentialApplied(ctx context.Context, databaseID string, upTo int64) error
}

// SnapshotView is one consistent read of a registration: its links (with
// their shipped projections), the feed's head and its entities, all as of
// one instant.
type SnapshotView struct {
	Database *dbsync.Database
	// Head is the id of the last delta appended and committed (0 for an
	// empty feed): the entities are the state that follows from every
	// delta up to it.
	Head int64
	// Entities returns up to limit entities of schemaID after the cursor,
	// in (entity type, key identity) order.
	Entities func(ctx context.Context, schemaID string, after EntityCursor, limit int) ([]*dbsync.Entity, error)
}

// EntityCursor is where a page of entities starts (zero: the beginning).
type EntityCursor struct{ EntityType, KeyIdentity string }

// SnapshotReader reads registrations consistently for the snapshot and
// the checksum.
type SnapshotReader interface {
	// ReadSnapshot calls fn with a view of the organization's registration
	// that stays consistent until fn returns (ErrNotFound: not the
	// organization's).
	ReadSnapshot(ctx context.Context, orgID, databaseID string, fn func(ctx context.Context, v SnapshotView) error) error
	// SnapshotServed notes that a whole snapshot as of head was served:
	// it clears the registration's snapshot_required when the link that
	// set it is covered (dbsync.Database.SnapshotServed); a no-op
	// otherwise.
	SnapshotServed(ctx context.Context, orgID, databaseID string, head int64) error
}
