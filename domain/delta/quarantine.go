package delta

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Errors of a quarantine report; the HTTP layer answers 409 for both.
var (
	// ErrNotDelivered: the reported delta never went out in a claim.
	ErrNotDelivered = errors.New("delta not delivered")
	// ErrAlreadyAcked: the reported delta is acknowledged, so the consumer
	// said it applied it.
	ErrAlreadyAcked = errors.New("delta already acknowledged")
)

// ReportResult says what a quarantine report did.
type ReportResult struct {
	BatchKey string // the batch set aside (Delta.BatchKey of the reported row)
	// Already: the batch was set aside before; nothing changed.
	Already bool
	// LeaseReleased: the reported delta was in the leased window. The
	// consumer's transaction for that window failed, so none of it was
	// applied: the lease is released and the next claim delivers the window
	// again without the set-aside batch.
	LeaseReleased bool
}

// Report sets aside the batch of d, a delta the consumer's database refused
// (POST .../quarantine/report {delta_id, error}). The whole batch goes, since
// the consumer applies a batch as one unit. The watermark does not move:
// the feed skips the batch, and later acks pass over it, leaving it
// quarantined (not acknowledged) until it is deleted, reinjected or
// redriven. Reporting twice is idempotent. Later batches of the same entity
// still flow: an upsert carries the entity's whole state at a higher
// revision.
func Report(s State, d Delta) (ReportResult, State, error) {
	key := d.BatchKey()
	if s.IsQuarantined(d) {
		return ReportResult{BatchKey: key, Already: true}, s, nil
	}
	if d.ID <= s.Watermark {
		return ReportResult{}, s, fmt.Errorf("%w: delta %d, watermark %d", ErrAlreadyAcked, d.ID, s.Watermark)
	}
	if d.ID > s.Delivered {
		return ReportResult{}, s, fmt.Errorf("%w: delta %d, delivered up to %d", ErrNotDelivered, d.ID, s.Delivered)
	}
	i := sort.SearchStrings(s.Quarantined, key)
	s.Quarantined = slices.Insert(slices.Clone(s.Quarantined), i, key)
	res := ReportResult{BatchKey: key}
	if s.Lease.Held() && d.ID <= s.Lease.UpTo {
		s.Lease = Lease{}
		res.LeaseReleased = true
	}
	return res, s, nil
}

// Release takes batch keys out of quarantine. It is the state change of all
// three quarantine actions; they differ in what the store does with the
// rows:
//   - delete drops the quarantined rows (answered like an ack: purged_deltas);
//   - reinject (by entity) drops them and appends the entities' current
//     state as one new batch at the tail of the feed (answer: the new
//     batch_id, queued, removed), because the refused SQL may be stale while
//     the entity layer is the truth;
//   - redrive (by delta id) drops them and appends copies of the same rows
//     at the tail (Requeue), for what cannot be rebuilt from entity state,
//     such as a migration that failed until the consumer's database was
//     fixed (answer: queued, removed).
//
// Nothing goes back to its old id: the watermark may have passed it, and a
// consumer reading id > since would never see it. At the tail, FIFO holds
// for everything after it, and the revision guard of the idempotent SQL
// makes an older revision arriving late a no-op.
func Release(s State, keys ...string) State {
	q := slices.DeleteFunc(slices.Clone(s.Quarantined), func(k string) bool { return slices.Contains(keys, k) })
	if len(q) == 0 {
		q = nil
	}
	s.Quarantined = q
	return s
}

// Requeue returns the copies a redrive appends: rows grouped by batch in id
// order, each copy with id 0 for the store to assign (in this order, and a
// new batch id per group) and the feed's fields cleared.
func Requeue(rows []Delta) [][]Delta {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b Delta) int { return cmp.Compare(a.ID, b.ID) })
	index := map[string]int{}
	var out [][]Delta
	for _, d := range sorted {
		key := d.BatchKey()
		d.ID, d.BatchID = 0, ""
		d.AckedAt, d.ClaimExpiresAt, d.QuarantinedAt, d.ApplyError = nil, nil, nil, ""
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], d)
	}
	return out
}
