package delta

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Kind says what a delta changes in the consumer's database.
type Kind string

const (
	// Data is a change of entity rows (op upsert or delete).
	Data Kind = "data"
	// Schema is DDL emitted by a published structural change (op migrate).
	// It is delivered before any data delta that needs it because it gets a
	// lower id.
	Schema Kind = "schema"
)

// Kinds lists every kind.
func Kinds() []Kind { return []Kind{Data, Schema} }

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: unknown delta kind %q", ErrInvalid, s)
}

// Op is the operation a delta's SQL performs.
type Op string

const (
	// Upsert writes an entity's rows at a revision (data deltas).
	Upsert Op = "upsert"
	// Delete removes an entity's rows (data deltas).
	Delete Op = "delete"
	// Migrate changes the consumer's tables (schema deltas).
	Migrate Op = "migrate"
)

// Ops lists every operation.
func Ops() []Op { return []Op{Upsert, Delete, Migrate} }

// ParseOp returns the operation named s.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops() {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("%w: unknown delta op %q", ErrInvalid, s)
}

// Allows reports whether op belongs to kind: data deltas upsert or delete,
// schema deltas migrate.
func (k Kind) Allows(op Op) bool {
	switch k {
	case Data:
		return op == Upsert || op == Delete
	case Schema:
		return op == Migrate
	}
	return false
}

// ErrInvalid is returned (wrapped, with detail) for a delta that breaks the
// rules of its fields.
var ErrInvalid = errors.New("invalid delta")

// Delta is one change in a registration's feed. Ids are monotonic per
// registration and are the cursor unit. Deltas sharing a BatchID were written
// by one enrichment (or one publish) and are applied in one consumer
// transaction; a delta without a BatchID is a batch of its own.
type Delta struct {
	ID         int64
	Kind       Kind
	Op         Op
	SQL        string          // idempotent SQL the consumer applies
	Payload    json.RawMessage // structured form of the change
	BatchID    string
	Revision   int64  // entity revision, data deltas only (>= 1)
	EntityType string // table, data deltas only
	CreatedAt  time.Time

	// Set by the feed, not by the writer.
	AckedAt        *time.Time
	ClaimExpiresAt *time.Time // leased pending row: the lease's end
	QuarantinedAt  *time.Time // its batch was set aside
	ApplyError     string     // on the one row the consumer reported
}

// Validate checks the fields a writer sets.
func (d Delta) Validate() error {
	switch {
	case d.ID < 1:
		return fmt.Errorf("%w: id %d is not positive", ErrInvalid, d.ID)
	case !d.Kind.Allows(d.Op):
		return fmt.Errorf("%w: op %q is not allowed for kind %q", ErrInvalid, d.Op, d.Kind)
	case d.SQL == "":
		return fmt.Errorf("%w: delta %d has no sql", ErrInvalid, d.ID)
	case d.Payload != nil && !json.Valid(d.Payload):
		return fmt.Errorf("%w: delta %d has a payload that is not JSON", ErrInvalid, d.ID)
	case d.Kind == Data && d.EntityType == "":
		return fmt.Errorf("%w: data delta %d has no entity_type", ErrInvalid, d.ID)
	case d.Kind == Data && d.Revision < 1:
		return fmt.Errorf("%w: data delta %d has revision %d", ErrInvalid, d.ID, d.Revision)
	case d.Kind == Schema && (d.Revision != 0 || d.EntityType != ""):
		return fmt.Errorf("%w: schema delta %d carries entity fields", ErrInvalid, d.ID)
	}
	return nil
}

// BatchKey names the batch d belongs to: its BatchID, or for a delta without
// one a key of its own ("#" and its id, which no UUID batch id can be).
func (d Delta) BatchKey() string {
	if d.BatchID != "" {
		return d.BatchID
	}
	return "#" + strconv.FormatInt(d.ID, 10)
}
