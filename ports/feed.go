package ports

import (
	"context"

	"github.com/entityenrich/enrich/domain/delta"
)

// FeedRow is a delta as its writer appends it: the delta's own fields (its
// ID is handed out by Append) and what the feed keeps beside it.
type FeedRow struct {
	delta.Delta
	EntityID string // data deltas: the entity layer's row
	SchemaID string // the linked schema the delta comes from
	RecordID string // data deltas: the record whose write queued it
}

// FeedWriter appends deltas to registrations' feeds. Inside a unit of work
// (Repos.Feed) the deltas commit with the unit's other writes, or not at
// all.
type FeedWriter interface {
	// Append appends rows to the feed of registration databaseID, in order,
	// and returns their ids. Ids are handed out under the feed's lock, held
	// until the unit of work ends, so a registration's ids are contiguous
	// and become visible in commit order: a reader never sees id n+1
	// before id n. ErrNotFound when the registration has no feed.
	Append(ctx context.Context, databaseID string, rows []FeedRow) ([]int64, error)
}
