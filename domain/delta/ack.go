package delta

import (
	"fmt"
	"time"
)

// Range is the id range (After, Through]; empty when Through <= After.
type Range struct {
	After   int64
	Through int64
}

// Empty reports whether the range holds no id.
func (r Range) Empty() bool { return r.Through <= r.After }

// Contains reports whether id is in the range.
func (r Range) Contains(id int64) bool { return id > r.After && id <= r.Through }

// AckResult says what a store does for an ack: mark the range's deltas
// acknowledged (quarantined ones stay as they are; the count of the others
// is the answer's acked) and purge what the flags say.
type AckResult struct {
	Acked Range
	// PurgeDeltas (purge_on_ack): delete the range's acknowledged deltas.
	PurgeDeltas bool
	// PurgeEntities (purge_entity_state): delete the entity rows whose latest
	// delta is in the range and for which EntityPurgeable holds.
	PurgeEntities bool
	// LeaseReleased: the ack covered the leased window (or the lease had
	// expired), so the next claim is served at once.
	LeaseReleased bool
}

// Ack acknowledges every delta with id <= upTo. An ack at or below the
// watermark is a repeat: an empty result and no error. An ack past the last
// delivered delta is ErrAckBeyondDelivered, whether or not a lease is live:
// a consumer that finished a window after its lease expired may still ack
// it, which saves a redelivery. An ack that covers the leased window releases
// the lease; a partial ack moves the watermark and leaves the rest of the
// window leased until the same expiry (not extended: the lease bounds how
// long a silent consumer holds the feed). An expired lease is dropped.
func Ack(s State, upTo int64, now time.Time, set Settings) (AckResult, State, error) {
	if upTo < 0 {
		return AckResult{}, s, paramErr("up_to_id", "must be a non-negative integer")
	}
	if upTo <= s.Watermark {
		return AckResult{Acked: Range{After: s.Watermark, Through: s.Watermark}}, s, nil
	}
	if upTo > s.Delivered {
		return AckResult{}, s, fmt.Errorf("%w: up_to_id %d, delivered up to %d", ErrAckBeyondDelivered, upTo, s.Delivered)
	}
	res := AckResult{Acked: Range{After: s.Watermark, Through: upTo}, PurgeDeltas: set.PurgeOnAck, PurgeEntities: set.PurgeEntityState}
	s.Watermark = upTo
	if s.Lease.Held() && (upTo >= s.Lease.UpTo || !s.Live(now)) {
		s.Lease = Lease{}
		res.LeaseReleased = true
	}
	return res, s, nil
}

// ClearAcked answers clear-acked: the acknowledged deltas to delete, which
// are every non-quarantined delta up to the watermark.
func ClearAcked(s State) Range { return Range{After: 0, Through: s.Watermark} }

// Replica is one registration that feeds from an entity's schema, as seen
// by the entity purge rule.
type Replica struct {
	PurgeEntityState bool
	Watermark        int64
	// LatestDeltaID is the id of the delta that carries the entity's latest
	// revision to this registration; 0 when none was emitted to it.
	LatestDeltaID int64
	// LatestQuarantined: that delta's batch is set aside, so the replica
	// does not have the revision.
	LatestQuarantined bool
}

// EntityPurgeable is the purge_entity_state rule: an entity row (live or
// deleted) may be deleted only when every registration that feeds from its
// schema has purge_entity_state on and has acknowledged the delta carrying
// its latest revision, which was not quarantined. One registration without
// the setting keeps the row, since its snapshot and checksum are built from
// entity state; a quarantined latest revision keeps it, since reinjecting
// needs it; an entity of no registration is kept, since the row is its only
// copy.
func EntityPurgeable(replicas []Replica) bool {
	if len(replicas) == 0 {
		return false
	}
	for _, r := range replicas {
		if !r.PurgeEntityState || r.LatestQuarantined || r.LatestDeltaID > r.Watermark {
			return false
		}
	}
	return true
}
