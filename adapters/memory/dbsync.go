package memory

import (
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
)

// SyncStore keeps the database-sync state of the memory store in one place:
// registrations with their links, each registration's feed (state and
// deltas) and the entity layer. The registry, the feed and the entity layer
// are separate ports implemented on it, so that a write of the entity layer
// and the deltas it appends happen under one lock, as in one transaction.
type SyncStore struct {
	mu        sync.Mutex
	databases map[string]*dbsync.Database // by id
	feeds     map[string]*feed            // by registration id
	entities  map[entityKey]*dbsync.Entity
	// revisions is the last revision each identity reached, kept across a
	// purge of its entity row.
	revisions map[entityKey]int64
}

// NewSyncStore returns an empty SyncStore.
func NewSyncStore() *SyncStore {
	return &SyncStore{databases: map[string]*dbsync.Database{}, feeds: map[string]*feed{},
		entities: map[entityKey]*dbsync.Entity{}, revisions: map[entityKey]int64{}}
}

// feed is one registration's feed: its state and its deltas in id order.
type feed struct {
	state  delta.State
	nextID int64
	deltas []deltaRow
	// watermarkAt is when the watermark last moved.
	watermarkAt *time.Time
}

// deltaRow is a stored delta with what the feed keeps beside it.
type deltaRow struct {
	delta.Delta
	EntityID, SchemaID, RecordID string
	ApplyErrorAt                 *time.Time
}

// entityKey is an entity's identity within its schema.
type entityKey struct{ SchemaID, EntityType, KeyIdentity string }
