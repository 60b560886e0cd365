package delta

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrAckBeyondDelivered is returned (wrapped, with detail) for an ack whose
// up_to_id passes the last delta any claim delivered: the consumer cannot
// have applied what it never received. The HTTP layer answers 409.
var ErrAckBeyondDelivered = errors.New("ack beyond the delivered deltas")

// State is a registration's feed position, kept by a store in one row (the
// quarantined batch keys may live in their own rows). The zero value is a
// new feed.
type State struct {
	// Watermark: every delta with id <= Watermark is acknowledged, except
	// quarantined ones, which the feed moved past.
	Watermark int64
	// Delivered is the highest id any claim delivered. Everything between
	// Watermark and Delivered that is not quarantined went out at least once,
	// so an ack up to Delivered is believable and one past it is not.
	Delivered int64
	// Lease is the claimed window; the zero value when none is held.
	Lease Lease
	// Quarantined holds the batch keys (Delta.BatchKey) set aside, sorted.
	Quarantined []string
	// Claims counts the leases granted; the last one is the live lease's
	// token. A store can use the token for compare-and-set.
	Claims uint64
}

// Lease is a claimed window: the pending deltas after the watermark up to
// and including UpTo, reserved for the claimant until ExpiresAt.
type Lease struct {
	UpTo      int64
	ExpiresAt time.Time
	Token     uint64
}

// Held reports whether a lease was granted and not yet released (it may
// have expired).
func (l Lease) Held() bool { return l.Token != 0 }

// Live reports whether a lease is held and has not expired at now; at
// ExpiresAt itself it has expired.
func (s State) Live(now time.Time) bool {
	return s.Lease.Held() && now.Before(s.Lease.ExpiresAt)
}

// IsQuarantined reports whether d's batch is set aside, by its row or by
// the state.
func (s State) IsQuarantined(d Delta) bool {
	if d.QuarantinedAt != nil {
		return true
	}
	key := d.BatchKey()
	i := sort.SearchStrings(s.Quarantined, key)
	return i < len(s.Quarantined) && s.Quarantined[i] == key
}

// IsPending reports whether d waits for delivery: not acknowledged and not
// quarantined (the registration's pending_deltas counts these).
func (s State) IsPending(d Delta) bool { return d.ID > s.Watermark && !s.IsQuarantined(d) }

// IsAcked reports whether d is acknowledged.
func (s State) IsAcked(d Delta) bool { return d.ID <= s.Watermark && !s.IsQuarantined(d) }

// ClaimResult is what a claim delivers.
type ClaimResult struct {
	Deltas  []Delta // the window, each with ClaimExpiresAt set
	HasMore bool    // pending deltas remain after the window (or under a live lease)
	// LeaseExpiresAt is the lease of the window; when Busy it is the live
	// lease's end, the earliest instant its deltas can be claimed again.
	// Zero when nothing is pending.
	LeaseExpiresAt time.Time
	// Busy: another claim's lease is live, so this one gets nothing new.
	Busy bool
	// Redelivery: the window starts with deltas delivered before, whose
	// lease expired without an ack.
	Redelivery bool
}

// Claim leases the next FIFO window. candidates are the stored deltas after
// the watermark in id order: complete batches, and at least one row past
// the window when there is one, so that HasMore is right (rows at or below
// the watermark are ignored). While a lease is live the claim gets nothing new
// and the state is unchanged. Otherwise the window starts right after the
// watermark, so an expired lease is delivered again first, in the same
// order. The window is leased for leaseFor from now.
func Claim(s State, now time.Time, leaseFor time.Duration, candidates []Delta, limit int) (ClaimResult, State, error) {
	if limit < MinLimit || leaseFor <= 0 {
		return ClaimResult{}, s, fmt.Errorf("%w: limit %d, lease %s", ErrInvalidParam, limit, leaseFor)
	}
	if err := checkOrder(candidates); err != nil {
		return ClaimResult{}, s, err
	}
	after := s.after(candidates)
	if s.Live(now) {
		return ClaimResult{Busy: true, LeaseExpiresAt: s.Lease.ExpiresAt, HasMore: s.anyPending(after)}, s, nil
	}
	win, more := pick(after, limit, s.IsQuarantined)
	s.Lease = Lease{}
	if len(win) == 0 {
		return ClaimResult{}, s, nil
	}
	s.Claims++
	s.Lease = Lease{UpTo: win[len(win)-1].ID, ExpiresAt: now.Add(leaseFor), Token: s.Claims}
	res := ClaimResult{Deltas: s.annotate(win, now), HasMore: more, LeaseExpiresAt: s.Lease.ExpiresAt,
		Redelivery: win[0].ID <= s.Delivered}
	s.Delivered = max(s.Delivered, s.Lease.UpTo)
	return res, s, nil
}

// after returns the candidates with ids above the watermark.
func (s State) after(candidates []Delta) []Delta {
	i := sort.Search(len(candidates), func(i int) bool { return candidates[i].ID > s.Watermark })
	return candidates[i:]
}

func (s State) anyPending(rows []Delta) bool {
	for _, d := range rows {
		if s.IsPending(d) {
			return true
		}
	}
	return false
}

// annotate returns copies of rows with ClaimExpiresAt set on the pending
// ones under a live lease.
func (s State) annotate(rows []Delta, now time.Time) []Delta {
	out := make([]Delta, len(rows))
	for i, d := range rows {
		if s.Live(now) && s.IsPending(d) && d.ID <= s.Lease.UpTo {
			exp := s.Lease.ExpiresAt
			d.ClaimExpiresAt = &exp
		} else {
			d.ClaimExpiresAt = nil
		}
		out[i] = d
	}
	return out
}

// Page is what a read (claim=false) returns.
type Page struct {
	Deltas     []Delta
	HasMore    bool
	NextCursor int64 // the last id returned (pass as since, or as before in desc order); 0 when none
}

// Read answers claim=false: a pure read that changes nothing and can be
// replayed. rows are the stored deltas in the query's order (ascending for
// asc, descending for desc), at least one more than the limit when there
// are, and complete batches. Pending reads in asc order keep batches whole,
// like a claim; desc reads are for browsing and stop at the limit.
func Read(s State, now time.Time, q ChangesQuery, rows []Delta) (Page, error) {
	ordered := rows
	if q.Order == Desc {
		ordered = make([]Delta, len(rows))
		for i, d := range rows {
			ordered[len(rows)-1-i] = d
		}
	}
	if err := checkOrder(ordered); err != nil {
		return Page{}, err
	}
	keep := make([]Delta, 0, len(rows))
	for _, d := range rows {
		if d.ID > q.Since && (q.Before == 0 || d.ID < q.Before) && s.includes(q.Include, d) {
			keep = append(keep, d)
		}
	}
	var out []Delta
	more := false
	if q.Order == Asc && q.Include == Pending {
		out, more = pick(keep, q.Limit, func(Delta) bool { return false })
	} else {
		out, more = keep[:min(q.Limit, len(keep))], len(keep) > q.Limit
	}
	p := Page{Deltas: s.annotate(out, now), HasMore: more}
	if len(out) > 0 {
		p.NextCursor = out[len(out)-1].ID
	}
	return p, nil
}

func (s State) includes(in Include, d Delta) bool {
	switch in {
	case Pending:
		return s.IsPending(d)
	case Acked:
		return s.IsAcked(d)
	}
	return true
}
