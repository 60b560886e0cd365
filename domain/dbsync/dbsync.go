package dbsync

import (
	"encoding/json"
	"time"

	"github.com/entityenrich/enrich/domain/relmap"
)

// OnGaps is the gap admission ladder: what a registration does with an
// entity whose run left non-nullable properties unfilled.
type OnGaps string

const (
	// RejectEntity writes nothing of the entity (database_rejected).
	RejectEntity OnGaps = "reject_entity"
	// SkipChildren drops the array items and 1-1 references that have gaps
	// of their own and admits the rest (status partial).
	SkipChildren OnGaps = "skip_children"
	// AcceptPartial writes the entity as it is, gaps as NULL.
	AcceptPartial OnGaps = "accept_partial"
)

// PKStrategy is how the consumer's tables are keyed (relmap).
type PKStrategy string

const (
	Surrogate PKStrategy = "surrogate"
	Natural   PKStrategy = "natural"
)

// IndexScalars is which index classes the consumer's tables materialize.
type IndexScalars string

const (
	IndexNone       IndexScalars = "none"
	IndexKeys       IndexScalars = "keys"
	IndexFilterable IndexScalars = "filterable"
	IndexAll        IndexScalars = "all"
)

// Dialect is the consumer's database; only PostgreSQL.
const Dialect = "postgres"

// Database is a registration: a consumer's database bound to the linked
// schemas whose union it replicates, with its feed settings.
type Database struct {
	ID      string
	OrgID   string
	Name    string
	Dialect string // always Dialect

	PageLimit            int  // default window of a claim
	PurgeOnAck           bool // delete deltas once acknowledged
	PurgeEntityState     bool // delete entity rows once acknowledged everywhere
	OnGaps               OnGaps
	PKStrategy           PKStrategy
	IndexScalars         IndexScalars
	NotifyDebounceS      int // webhook debounce
	MaxThresholdTimeoutS int // debounce hard cap
	KeyLanguage          string
	PropagateNotNull     bool

	Links []Link // in link order

	// SnapshotRequiredFrom is the feed's head when a schema was linked to
	// the registration after its shape had shipped while the schema
	// already had entity state (0: no snapshot required). Those rows were
	// never sent as deltas and exist only in the snapshot, so claims
	// deliver nothing until a snapshot as of at least this head is served.
	SnapshotRequiredFrom int64

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Link binds a schema to a registration.
type Link struct {
	SchemaID          string
	LinkedAt          time.Time
	EnrichmentEnabled bool // off: no data deltas or notifications; DDL still ships
	// WebhookURL is the link's delta-available endpoint ("" when none).
	WebhookURL string
	// WebhookSecret signs the link's notifications; minted on the first
	// attach and kept when the URL changes. Stored sealed by the store's
	// cipher where it has one; never in a listing.
	WebhookSecret string
	// Shipped is the relational projection the consumer has for this
	// schema: set when its DDL first ships (the link of a published schema,
	// or its first publish) and moved by every publish that ships DDL. Nil
	// while nothing shipped: the link then emits no data deltas (its
	// publish_state is unpublished) and the snapshot carries its state.
	// Data deltas are rendered against it.
	Shipped *relmap.Map
	// ShippedHash is the content hash (schema.ContentHash) of the
	// published contract Shipped follows: moved by every publish, with or
	// without DDL, since data deltas are rendered from that contract. ""
	// while nothing shipped.
	ShippedHash string
}

// Link returns the registration's link to schemaID.
func (d *Database) Link(schemaID string) (Link, bool) {
	for _, l := range d.Links {
		if l.SchemaID == schemaID {
			return l, true
		}
	}
	return Link{}, false
}

// Counters are a registration's live counts (never stored in its row).
type Counters struct {
	PendingDeltas     int64 // unacknowledged, not quarantined
	QuarantinedDeltas int64
	EntityCount       int64 // entities of every linked schema
}

// Entity is one entity's state in the entity layer of a schema: the latest
// admitted output of its identity, with a revision that rises on every
// change (and keeps rising across a purge and a re-create).
type Entity struct {
	ID         string // stable per (schema, entity type, key identity)
	OrgID      string
	SchemaID   string
	EntityType string
	// KeyIdentity is the canonical text of the identifying key values
	// (Keys), the entity's identity within its type.
	KeyIdentity  string
	Keys         map[string]string
	SemanticID   string
	Payload      json.RawMessage
	Revision     int64
	LastRecordID string
	UpdatedAt    time.Time
}
