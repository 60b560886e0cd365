package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// RunRecordDeletion runs the contract of soft and hard record deletion and
// of the created-range filter against the stores newStore returns.
func RunRecordDeletion(t *testing.T, newStore func(t *testing.T) ports.RecordStore) {
	ctx := context.Background()
	list := func(t *testing.T, s ports.RecordStore, org string, f ports.RecordFilter) ([]string, int) {
		t.Helper()
		var ids []string
		for _, p := range pages(t, 2, func(r page.Request) (page.Result[*enrichment.Record], error) {
			return s.ListRecords(ctx, org, f, r)
		}) {
			ids = append(ids, recordIDs(p)...)
		}
		res, err := s.ListRecords(ctx, org, f, page.Request{Size: 2})
		is.New(t).NoErr(err)
		return ids, res.Total
	}
	t.Run("every organization's records with AllOrgs", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		a, b := newRecord(newID("org"), 0), newRecord(newID("org"), 1)
		b.JobID = a.JobID // one filter that isolates the two from other cases' records
		for _, r := range []*enrichment.Record{a, b} {
			is.NoErr(s.CreateRecord(ctx, r))
		}
		got, err := s.GetRecord(ctx, ports.AllOrgs, b.ID)
		is.NoErr(err)
		is.Equal(got.OrgID, b.OrgID)
		ids, total := list(t, s, ports.AllOrgs, ports.RecordFilter{JobID: a.JobID})
		is.Equal(ids, []string{b.ID, a.ID})
		is.Equal(total, 2)
		d, err := s.DeleteRecords(ctx, ports.AllOrgs, []string{a.ID, b.ID}, false, at(10))
		is.NoErr(err)
		is.Equal(d.Deleted, []string{a.ID, b.ID})
		_, err = s.GetRecord(ctx, ports.AllOrgs, a.ID)
		is.True(errors.Is(err, ports.ErrNotFound)) // soft-deleted
		d, err = s.DeleteRecords(ctx, ports.AllOrgs, []string{b.ID}, true, at(11))
		is.NoErr(err)
		is.Equal(d.Deleted, []string{b.ID})
		ids, _ = list(t, s, ports.AllOrgs, ports.RecordFilter{JobID: a.JobID, IncludeDeleted: true})
		is.Equal(ids, []string{a.ID})
	})
	t.Run("soft delete hides, repeats, and keeps other organizations' records", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newID("org")
		r0, r1, r2 := newRecord(org, 0), newRecord(org, 1), newRecord(org, 2)
		foreign := newRecord(newID("org"), 3)
		for _, r := range []*enrichment.Record{r0, r1, r2, foreign} {
			is.NoErr(s.CreateRecord(ctx, r))
		}
		when := at(10)
		unknown := newID("rec")
		d, err := s.DeleteRecords(ctx, org, []string{r2.ID, unknown, foreign.ID, r0.ID, r2.ID}, false, when)
		is.NoErr(err)
		is.Equal(d.Deleted, []string{r2.ID, r0.ID}) // in the caller's order, once each
		is.Equal(len(d.AlreadyDeleted), 0)
		_, err = s.GetRecord(ctx, org, r0.ID)
		is.True(errors.Is(err, ports.ErrNotFound))
		got, err := s.GetRecord(ctx, foreign.OrgID, foreign.ID)
		is.NoErr(err) // another organization's record is untouched
		is.True(got.DeletedAt == nil)
		ids, total := list(t, s, org, ports.RecordFilter{})
		is.Equal(ids, []string{r1.ID})
		is.Equal(total, 1)
		ids, total = list(t, s, org, ports.RecordFilter{IncludeDeleted: true})
		is.Equal(ids, []string{r2.ID, r1.ID, r0.ID})
		is.Equal(total, 3)
		res, err := s.ListRecords(ctx, org, ports.RecordFilter{IncludeDeleted: true}, page.Request{Size: 10})
		is.NoErr(err)
		is.True(res.Items[0].DeletedAt != nil)
		sameTime(t, "DeletedAt", *res.Items[0].DeletedAt, when)
		is.True(res.Items[1].DeletedAt == nil)

		// Again: nothing new; the deleted ones are reported as such.
		d, err = s.DeleteRecords(ctx, org, []string{r0.ID, r1.ID}, false, at(11))
		is.NoErr(err)
		is.Equal(d.Deleted, []string{r1.ID})
		is.Equal(d.AlreadyDeleted, []string{r0.ID})
		res, err = s.ListRecords(ctx, org, ports.RecordFilter{IncludeDeleted: true}, page.Request{Size: 10})
		is.NoErr(err)
		sameTime(t, "DeletedAt", *res.Items[2].DeletedAt, when) // the first delete's time stays
	})
	t.Run("hard delete removes live and soft-deleted records", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newID("org")
		r0, r1, r2 := newRecord(org, 0), newRecord(org, 1), newRecord(org, 2)
		foreign := newRecord(newID("org"), 3)
		for _, r := range []*enrichment.Record{r0, r1, r2, foreign} {
			is.NoErr(s.CreateRecord(ctx, r))
		}
		_, err := s.DeleteRecords(ctx, org, []string{r0.ID}, false, at(10))
		is.NoErr(err)
		d, err := s.DeleteRecords(ctx, org, []string{r0.ID, r1.ID, foreign.ID}, true, at(11))
		is.NoErr(err)
		is.Equal(d.Deleted, []string{r0.ID, r1.ID})
		is.Equal(len(d.AlreadyDeleted), 0)
		ids, total := list(t, s, org, ports.RecordFilter{IncludeDeleted: true})
		is.Equal(ids, []string{r2.ID})
		is.Equal(total, 1)
		_, err = s.GetRecord(ctx, foreign.OrgID, foreign.ID)
		is.NoErr(err)
		d, err = s.DeleteRecords(ctx, org, []string{r0.ID, r1.ID}, true, at(12))
		is.NoErr(err) // idempotent: gone is gone
		is.Equal(len(d.Deleted)+len(d.AlreadyDeleted), 0)
		d, err = s.DeleteRecords(ctx, org, nil, true, at(12))
		is.NoErr(err)
		is.Equal(len(d.Deleted), 0)
	})
	t.Run("created range: from inclusive, before exclusive, with paging", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org := newID("org")
		var rs []*enrichment.Record
		for n := range 6 {
			r := newRecord(org, n)
			is.NoErr(s.CreateRecord(ctx, r))
			rs = append(rs, r)
		}
		from, before := at(1), at(4)
		for _, tt := range []struct {
			name string
			f    ports.RecordFilter
			want []*enrichment.Record
		}{
			{"from", ports.RecordFilter{CreatedFrom: &from}, []*enrichment.Record{rs[5], rs[4], rs[3], rs[2], rs[1]}},
			{"before", ports.RecordFilter{CreatedBefore: &before}, []*enrichment.Record{rs[3], rs[2], rs[1], rs[0]}},
			{"both", ports.RecordFilter{CreatedFrom: &from, CreatedBefore: &before}, []*enrichment.Record{rs[3], rs[2], rs[1]}},
			{"empty", ports.RecordFilter{CreatedFrom: &before, CreatedBefore: &from}, nil},
			{"with model", ports.RecordFilter{CreatedFrom: &from, Model: "none::such"}, nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				ids, total := list(t, s, org, tt.f)
				is.New(t).Equal(ids, recordIDs(tt.want))
				is.New(t).Equal(total, len(tt.want))
			})
		}
		// A numbered page of a filtered list.
		res, err := s.ListRecords(ctx, org, ports.RecordFilter{CreatedFrom: &from}, page.Request{Size: 2, Offset: 2})
		is.NoErr(err)
		is.Equal(recordIDs(res.Items), recordIDs([]*enrichment.Record{rs[3], rs[2]}))
		is.Equal(res.Total, 5)
	})
}

// RunRecordDeletionInUnitOfWork checks that a deletion inside a unit of work
// rolls back with it.
func RunRecordDeletionInUnitOfWork(t *testing.T, newUoW func(t *testing.T) UnitOfWorkFixture) {
	ctx := context.Background()
	for _, hard := range []bool{false, true} {
		t.Run(map[bool]string{false: "soft", true: "hard"}[hard], func(t *testing.T) {
			is := is.New(t)
			f := newUoW(t)
			org := newID("org")
			r := newRecord(org, 0)
			is.NoErr(f.Repos.Records.CreateRecord(ctx, r))
			err := f.UoW.InTx(ctx, func(ctx context.Context, rp ports.Repos) error {
				d, err := rp.Records.DeleteRecords(ctx, org, []string{r.ID}, hard, time.Now())
				if err != nil {
					return err
				}
				if len(d.Deleted) != 1 {
					return errors.New("want 1 record deleted")
				}
				return errBoom
			})
			is.Equal(err, errBoom)
			got, err := f.Repos.Records.GetRecord(ctx, org, r.ID)
			is.NoErr(err) // back, and live
			is.True(got.DeletedAt == nil)
		})
	}
}
