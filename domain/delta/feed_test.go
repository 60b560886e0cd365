package delta_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
)

const lease = 120 * time.Second

func leased(upTo int64, exp time.Time, token uint64) delta.Lease {
	return delta.Lease{UpTo: upTo, ExpiresAt: exp, Token: token}
}

func TestClaim(t *testing.T) {
	rows := feed(1, "a:2 b:2 c:2")
	tests := []struct {
		name      string
		state     delta.State
		now       time.Time
		limit     int
		want      []int64
		more      bool
		busy      bool
		redeliver bool
		expires   time.Time // the result's LeaseExpiresAt
		next      delta.State
	}{
		{name: "first claim", now: t0, limit: 4, want: span(1, 4), more: true, expires: t0.Add(lease),
			next: delta.State{Delivered: 4, Lease: leased(4, t0.Add(lease), 1), Claims: 1}},
		{name: "after the watermark", state: delta.State{Watermark: 2, Delivered: 2, Claims: 1}, now: t0, limit: 10,
			want: span(3, 6), expires: t0.Add(lease),
			next: delta.State{Watermark: 2, Delivered: 6, Lease: leased(6, t0.Add(lease), 2), Claims: 2}},
		{name: "live lease: nothing new, reports its expiry",
			state: delta.State{Delivered: 2, Lease: leased(2, t0.Add(time.Minute), 1), Claims: 1},
			now:   t0, limit: 10, want: []int64{}, more: true, busy: true, expires: t0.Add(time.Minute),
			next: delta.State{Delivered: 2, Lease: leased(2, t0.Add(time.Minute), 1), Claims: 1}},
		{name: "expired lease: same ids first",
			state: delta.State{Delivered: 2, Lease: leased(2, t0, 1), Claims: 1},
			now:   t0, limit: 2, want: span(1, 2), more: true, redeliver: true, expires: t0.Add(lease),
			next: delta.State{Delivered: 2, Lease: leased(2, t0.Add(lease), 2), Claims: 2}},
		{name: "expired lease, larger limit: same ids first, then new ones",
			state: delta.State{Delivered: 2, Lease: leased(2, t0.Add(-time.Second), 1), Claims: 1},
			now:   t0, limit: 4, want: span(1, 4), more: true, redeliver: true, expires: t0.Add(lease),
			next: delta.State{Delivered: 4, Lease: leased(4, t0.Add(lease), 2), Claims: 2}},
		{name: "nothing pending", state: delta.State{Watermark: 6, Delivered: 6, Claims: 3}, now: t0, limit: 10,
			want: []int64{}, next: delta.State{Watermark: 6, Delivered: 6, Claims: 3}},
		{name: "expired lease with nothing left is dropped",
			state: delta.State{Watermark: 6, Delivered: 6, Lease: leased(6, t0, 3), Claims: 3}, now: t0, limit: 10,
			want: []int64{}, next: delta.State{Watermark: 6, Delivered: 6, Claims: 3}},
		{name: "skips a quarantined batch", state: delta.State{Delivered: 2, Quarantined: []string{"a"}, Claims: 1},
			now: t0, limit: 10, want: span(3, 6), redeliver: false, expires: t0.Add(lease),
			next: delta.State{Delivered: 6, Lease: leased(6, t0.Add(lease), 2), Quarantined: []string{"a"}, Claims: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			res, next, err := delta.Claim(tt.state, tt.now, lease, rows, tt.limit)
			is.NoErr(err)
			is.Equal(ids(res.Deltas), tt.want)
			is.Equal(res.HasMore, tt.more)
			is.Equal(res.Busy, tt.busy)
			is.Equal(res.Redelivery, tt.redeliver)
			is.Equal(res.LeaseExpiresAt, tt.expires)
			is.Equal(next, tt.next)
			for _, d := range res.Deltas {
				is.Equal(*d.ClaimExpiresAt, tt.expires) // every delivered row shows its lease
			}
		})
	}
}

func TestClaimRejects(t *testing.T) {
	is := is.New(t)
	_, _, err := delta.Claim(delta.State{}, t0, lease, []delta.Delta{row(2, "a"), row(1, "b")}, 10)
	is.True(errors.Is(err, delta.ErrUnordered))
	_, _, err = delta.Claim(delta.State{}, t0, lease, nil, 0)
	is.True(errors.Is(err, delta.ErrInvalidParam))
	_, _, err = delta.Claim(delta.State{}, t0, 0, nil, 10)
	is.True(errors.Is(err, delta.ErrInvalidParam))
}

func TestClaimDoesNotShareRows(t *testing.T) {
	is := is.New(t)
	rows := feed(1, "a:2")
	res, _, err := delta.Claim(delta.State{}, t0, lease, rows, 10)
	is.NoErr(err)
	is.True(rows[0].ClaimExpiresAt == nil) // the caller's rows are not written
	is.True(res.Deltas[0].ClaimExpiresAt != nil)
}

func TestRead(t *testing.T) {
	rows := feed(1, "a:2 b:2 c:2 d:2")
	rows[6].QuarantinedAt = &t0 // batch d is set aside
	rows[7].QuarantinedAt = &t0
	desc := func(ds []delta.Delta) []delta.Delta {
		out := make([]delta.Delta, len(ds))
		for i, d := range ds {
			out[len(ds)-1-i] = d
		}
		return out
	}
	st := delta.State{Watermark: 2, Delivered: 4, Lease: leased(4, t0.Add(lease), 1), Claims: 1}
	q := func(since int64, limit int, in delta.Include, o delta.Order, before int64) delta.ChangesQuery {
		return delta.ChangesQuery{Since: since, Limit: limit, Include: in, Order: o, Before: before, Format: "json"}
	}
	tests := []struct {
		name   string
		q      delta.ChangesQuery
		rows   []delta.Delta
		want   []int64
		more   bool
		leased []int64
	}{
		{"pending from the watermark", q(0, 10, delta.Pending, delta.Asc, 0), rows, span(3, 6), false, span(3, 4)},
		{"pending keeps batches whole", q(0, 3, delta.Pending, delta.Asc, 0), rows, span(3, 4), true, span(3, 4)},
		{"pending since a cursor", q(4, 10, delta.Pending, delta.Asc, 0), rows, span(5, 6), false, []int64{}},
		{"acked", q(0, 10, delta.Acked, delta.Asc, 0), rows, span(1, 2), false, []int64{}},
		{"all", q(0, 10, delta.All, delta.Asc, 0), rows, span(1, 8), false, span(3, 4)},
		{"all cuts at the limit", q(0, 3, delta.All, delta.Asc, 0), rows, span(1, 3), true, []int64{3}},
		{"desc from before", q(0, 3, delta.All, delta.Desc, 7), desc(rows), []int64{6, 5, 4}, true, []int64{4}},
		{"desc down to since", q(4, 10, delta.All, delta.Desc, 0), desc(rows), []int64{8, 7, 6, 5}, false, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p, err := delta.Read(st, t0, tt.q, tt.rows)
			is.NoErr(err)
			is.Equal(ids(p.Deltas), tt.want)
			is.Equal(p.HasMore, tt.more)
			var leasedIDs = []int64{}
			for _, d := range p.Deltas {
				if d.ClaimExpiresAt != nil {
					leasedIDs = append(leasedIDs, d.ID)
				}
			}
			is.Equal(leasedIDs, tt.leased)
			if len(tt.want) > 0 {
				is.Equal(p.NextCursor, tt.want[len(tt.want)-1])
			}
		})
	}
	is := is.New(t)
	p, err := delta.Read(st, t0, q(8, 10, delta.Pending, delta.Asc, 0), rows)
	is.NoErr(err)
	is.Equal(p.NextCursor, int64(0)) // nothing returned: no cursor
	_, err = delta.Read(st, t0, q(0, 10, delta.All, delta.Desc, 0), rows)
	is.True(errors.Is(err, delta.ErrUnordered)) // desc wants descending rows
}

func TestAck(t *testing.T) {
	live := delta.State{Watermark: 2, Delivered: 6, Lease: leased(6, t0.Add(lease), 2), Claims: 2}
	expired := live
	expired.Lease.ExpiresAt = t0
	tests := []struct {
		name  string
		state delta.State
		upTo  int64
		set   delta.Settings
		err   error
		want  delta.AckResult
		next  delta.State
	}{
		{name: "whole window releases the lease", state: live, upTo: 6,
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 6}, LeaseReleased: true},
			next: delta.State{Watermark: 6, Delivered: 6, Claims: 2}},
		{name: "partial ack keeps the rest leased", state: live, upTo: 4,
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 4}},
			next: delta.State{Watermark: 4, Delivered: 6, Lease: live.Lease, Claims: 2}},
		{name: "after expiry the ack still counts and drops the lease", state: expired, upTo: 4,
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 4}, LeaseReleased: true},
			next: delta.State{Watermark: 4, Delivered: 6, Claims: 2}},
		{name: "repeat is idempotent", state: live, upTo: 2,
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 2}}, next: live},
		{name: "older repeat is idempotent", state: live, upTo: 0,
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 2}}, next: live},
		{name: "beyond the window", state: live, upTo: 7, err: delta.ErrAckBeyondDelivered, next: live},
		{name: "nothing delivered", state: delta.State{}, upTo: 1, err: delta.ErrAckBeyondDelivered},
		{name: "negative", state: live, upTo: -1, err: delta.ErrInvalidParam, next: live},
		{name: "purge flags", state: live, upTo: 6, set: delta.Settings{PurgeOnAck: true, PurgeEntityState: true},
			want: delta.AckResult{Acked: delta.Range{After: 2, Through: 6}, PurgeDeltas: true, PurgeEntities: true,
				LeaseReleased: true},
			next: delta.State{Watermark: 6, Delivered: 6, Claims: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			res, next, err := delta.Ack(tt.state, tt.upTo, t0, tt.set)
			is.Equal(next, tt.next)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(res, tt.want)
			is.Equal(res.Acked.Empty(), tt.upTo <= tt.state.Watermark)
		})
	}
}

func TestAckedRangeAndClearAcked(t *testing.T) {
	is := is.New(t)
	r := delta.Range{After: 2, Through: 4}
	is.True(!r.Contains(2) && r.Contains(3) && r.Contains(4) && !r.Contains(5))
	is.Equal(delta.ClearAcked(delta.State{Watermark: 9}), delta.Range{Through: 9})
	is.True(delta.ClearAcked(delta.State{}).Empty())
}

func TestStatePredicates(t *testing.T) {
	is := is.New(t)
	s := delta.State{Watermark: 2, Quarantined: []string{"q"}}
	is.True(s.IsAcked(row(2, "a")) && !s.IsPending(row(2, "a")))
	is.True(s.IsPending(row(3, "a")) && !s.IsAcked(row(3, "a")))
	is.True(!s.IsPending(row(3, "q")) && !s.IsAcked(row(1, "q")) && s.IsQuarantined(row(1, "q")))
	flagged := row(4, "b")
	flagged.QuarantinedAt = &t0
	is.True(s.IsQuarantined(flagged) && !s.IsPending(flagged))
}

func TestEntityPurgeable(t *testing.T) {
	acked := delta.Replica{PurgeEntityState: true, Watermark: 10, LatestDeltaID: 7}
	tests := []struct {
		name string
		reps []delta.Replica
		want bool
	}{
		{"no registration keeps the only copy", nil, false},
		{"acked everywhere", []delta.Replica{acked, {PurgeEntityState: true, Watermark: 3, LatestDeltaID: 3}}, true},
		{"nothing emitted to one", []delta.Replica{acked, {PurgeEntityState: true}}, true},
		{"one has not acked", []delta.Replica{acked, {PurgeEntityState: true, Watermark: 3, LatestDeltaID: 4}}, false},
		{"one keeps entity state", []delta.Replica{acked, {Watermark: 10, LatestDeltaID: 7}}, false},
		{"latest revision quarantined", []delta.Replica{{PurgeEntityState: true, Watermark: 10, LatestDeltaID: 7,
			LatestQuarantined: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { is.New(t).Equal(delta.EntityPurgeable(tt.reps), tt.want) })
	}
}
