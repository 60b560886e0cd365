package delta_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
)

func TestReport(t *testing.T) {
	live := delta.State{Watermark: 2, Delivered: 6, Lease: leased(6, t0.Add(lease), 2), Claims: 2}
	older := delta.State{Watermark: 2, Delivered: 8, Lease: leased(4, t0.Add(lease), 3), Claims: 3}
	tests := []struct {
		name  string
		state delta.State
		d     delta.Delta
		err   error
		want  delta.ReportResult
		next  delta.State
	}{
		{name: "in the leased window: set aside, lease released", state: live, d: row(4, "b"),
			want: delta.ReportResult{BatchKey: "b", LeaseReleased: true},
			next: delta.State{Watermark: 2, Delivered: 6, Quarantined: []string{"b"}, Claims: 2}},
		{name: "delivered before, outside the live lease: lease kept", state: older, d: row(7, "d"),
			want: delta.ReportResult{BatchKey: "d"},
			next: delta.State{Watermark: 2, Delivered: 8, Lease: older.Lease, Quarantined: []string{"d"}, Claims: 3}},
		{name: "row without batch", state: live, d: row(5, ""),
			want: delta.ReportResult{BatchKey: "#5", LeaseReleased: true},
			next: delta.State{Watermark: 2, Delivered: 6, Quarantined: []string{"#5"}, Claims: 2}},
		{name: "again: idempotent", state: delta.State{Watermark: 2, Delivered: 6, Quarantined: []string{"b"}},
			d: row(3, "b"), want: delta.ReportResult{BatchKey: "b", Already: true},
			next: delta.State{Watermark: 2, Delivered: 6, Quarantined: []string{"b"}}},
		{name: "acknowledged", state: live, d: row(2, "a"), err: delta.ErrAlreadyAcked, next: live},
		{name: "never delivered", state: live, d: row(7, "d"), err: delta.ErrNotDelivered, next: live},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			res, next, err := delta.Report(tt.state, tt.d)
			is.Equal(next, tt.next)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(res, tt.want)
		})
	}
}

func TestReportKeepsSetSortedAndUnshared(t *testing.T) {
	is := is.New(t)
	s := delta.State{Delivered: 10, Quarantined: []string{"a", "c"}}
	_, next, err := delta.Report(s, row(5, "b"))
	is.NoErr(err)
	is.Equal(next.Quarantined, []string{"a", "b", "c"})
	is.Equal(s.Quarantined, []string{"a", "c"}) // the old state is untouched
}

func TestQuarantineMovesFeedOn(t *testing.T) {
	is := is.New(t)
	rows := feed(1, "a:2 b:2 c:2")
	res, s, err := delta.Claim(delta.State{}, t0, lease, rows, 10)
	is.NoErr(err)
	is.Equal(ids(res.Deltas), span(1, 6))
	_, s, err = delta.Report(s, rows[2]) // the consumer's database refused batch b
	is.NoErr(err)
	res, s, err = delta.Claim(s, t0.Add(time.Second), lease, rows, 10) // no wait for the lease
	is.NoErr(err)
	is.Equal(ids(res.Deltas), []int64{1, 2, 5, 6})
	is.True(res.Redelivery)
	ack, s, err := delta.Ack(s, 6, t0.Add(2*time.Second), delta.Settings{})
	is.NoErr(err)
	is.Equal(ack.Acked, delta.Range{After: 0, Through: 6})
	is.True(!s.IsAcked(rows[2]) && !s.IsPending(rows[2])) // passed over, still quarantined
	s = delta.Release(s, "b")
	is.Equal(s.Quarantined, nil)
	is.True(s.IsAcked(rows[2])) // released below the watermark: gone from the feed (hence requeue at the tail)
}

func TestRelease(t *testing.T) {
	is := is.New(t)
	s := delta.State{Quarantined: []string{"a", "b", "c"}}
	is.Equal(delta.Release(s, "b", "x").Quarantined, []string{"a", "c"})
	is.Equal(s.Quarantined, []string{"a", "b", "c"})
	is.Equal(delta.Release(s, "a", "b", "c").Quarantined, nil)
}

func TestRequeue(t *testing.T) {
	is := is.New(t)
	rows := []delta.Delta{row(9, "b"), row(3, "a"), row(4, "a"), row(7, "")}
	for i := range rows {
		rows[i].QuarantinedAt, rows[i].ApplyError = &t0, "boom"
	}
	got := delta.Requeue(rows)
	is.Equal(len(got), 3)
	is.Equal(len(got[0]), 2) // batch a, first by id
	is.Equal(len(got[1]), 1) // the row without a batch
	is.Equal(len(got[2]), 1) // batch b
	for _, group := range got {
		for _, d := range group {
			is.Equal(d.ID, int64(0))
			is.Equal(d.BatchID, "")
			is.True(d.QuarantinedAt == nil && d.ApplyError == "" && d.ClaimExpiresAt == nil && d.AckedAt == nil)
			is.Equal(d.SQL, "INSERT") // the same change
		}
	}
	is.True(rows[0].QuarantinedAt != nil) // input untouched
}
