package ports

import (
	"context"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/schema"
)

// The caches the use cases read through. The use cases decide what may be
// read from a cache and say when a write has committed; the adapter keeps
// the entries, bounds their life and their number, and tells the other
// instances (Invalidations). With none, the use cases read the stores.

// SchemaCache serves the saved schemas that start jobs, so that a job start
// needs no storage round trip. The schema endpoints read the SchemaStore,
// so the API always shows the truth.
type SchemaCache interface {
	// GetSchema is SchemaStore.GetSchema (a trashed schema included), as
	// read at most the cache's TTL ago and not changed through Changed
	// since. The caller gets its own struct; its documents are shared and
	// must not be changed in place.
	GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error)
	// Changed says that a write of the schema, or of what its enrichments
	// read of its registrations (a link, an unlink, a registration's
	// settings), has committed: it is dropped here before Changed returns,
	// and on the other instances as soon as they hear of it.
	Changed(ctx context.Context, orgID, id string)
}

// AuthCache serves the access keys and users that authenticate requests,
// so that authenticating needs no storage round trip. Revocation and expiry
// are still checked on every request, by the caller.
type AuthCache interface {
	// FindKeysByPrefix is APIKeyStore.FindKeysByPrefix, as read at most the
	// cache's TTL ago and not changed through KeyChanged since.
	FindKeysByPrefix(ctx context.Context, prefix string) ([]*access.APIKey, error)
	// GetUser is UserStore.GetUser, likewise.
	GetUser(ctx context.Context, id string) (*access.User, error)
	// KeyChanged says that a write of key k (its role, its revocation) has
	// committed; UserChanged the same of user id. The entry is dropped here
	// before they return, and on the other instances as soon as they hear
	// of it.
	KeyChanged(ctx context.Context, k *access.APIKey)
	UserChanged(ctx context.Context, id string)
}

// Memo keeps values that are derived from immutable inputs (a key that
// names the inputs by content), so that they are built once. It bounds its
// size and may drop any entry at any time; nothing ever invalidates one.
// Values are shared between callers and must never be changed.
type Memo[K comparable, V any] interface {
	// Get returns key's value, building it with build on a miss. A build
	// that fails keeps nothing and returns its error. Concurrent Gets of
	// one key share one build.
	Get(ctx context.Context, key K, build func(ctx context.Context, key K) (V, error)) (V, error)
}
