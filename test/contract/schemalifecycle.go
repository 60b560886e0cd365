package contract

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// RunSchemaLifecycle runs the SchemaStore contract of the saved-schema
// lifecycle (every field kept, the live list's order, the trash, names,
// hashes, hard delete) against the stores newStore returns.
func RunSchemaLifecycle(t *testing.T, newStore func(t *testing.T) ports.SchemaStore) {
	ctx := context.Background()
	create := func(t *testing.T, s ports.SchemaStore, orgID string, n int, edit func(*schema.Schema)) *schema.Schema {
		t.Helper()
		sc := newSchema(orgID, n)
		sc.SetContent(sc.Content)
		if edit != nil {
			edit(sc)
		}
		is.New(t).NoErr(s.CreateSchema(ctx, sc))
		return sc
	}
	ids := func(scs []*schema.Schema) []string {
		var out []string
		for _, sc := range scs {
			out = append(out, sc.ID)
		}
		return out
	}
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.SchemaStore)
	}{
		{"every lifecycle field round trips, through create and update", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := create(t, s, newID("org"), 0, func(sc *schema.Schema) {
				sc.Tags, sc.IsPinned, sc.Linked = []string{"b", "a"}, true, true
				sc.PublishedContent, sc.PublishedHash, sc.PublishedAt = json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`), "ph", atPtr(2)
				sc.KeyLanguage, sc.DeletedAt = "fr", atPtr(3)
			})
			got, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkLifecycle(t, got, sc)
			got, err = s.UpdateSchema(ctx, sc.OrgID, sc.ID, func(c *schema.Schema) error {
				c.Tags, c.IsPinned, c.PublishedContent, c.PublishedHash, c.PublishedAt = nil, false, nil, "", nil
				c.KeyLanguage, c.DeletedAt = "", nil
				c.SetContent(json.RawMessage(`{"type":"object","properties":{"y":{"type":"string"}}}`))
				return nil
			})
			is.NoErr(err)
			again, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkLifecycle(t, again, got)
			is.Equal(len(again.Tags), 0)
			is.Equal(again.PublishedContent, nil)
			is.Equal(again.ContentHash, schema.ContentHash(json.RawMessage(`{"type":"object","properties":{"y":{"type":"string"}}}`)))
		}},
		{"the list holds live schemas, pinned first, then by update time", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			org := newID("org")
			old := create(t, s, org, 0, func(sc *schema.Schema) { sc.UpdatedAt = at(10) })
			pinnedOld := create(t, s, org, 1, func(sc *schema.Schema) { sc.IsPinned, sc.UpdatedAt = true, at(5) })
			fresh := create(t, s, org, 2, func(sc *schema.Schema) { sc.UpdatedAt = at(20) })
			pinnedNew := create(t, s, org, 3, func(sc *schema.Schema) { sc.IsPinned, sc.UpdatedAt = true, at(6) })
			tie := create(t, s, org, 4, func(sc *schema.Schema) { sc.UpdatedAt = at(10) })
			create(t, s, org, 5, func(sc *schema.Schema) { sc.DeletedAt, sc.UpdatedAt = atPtr(30), at(30) }) // trashed
			create(t, s, newID("org"), 6, nil)                                                               // another organization's
			second, third := old, tie
			if tie.ID > old.ID {
				second, third = tie, old
			}
			want := []string{pinnedNew.ID, pinnedOld.ID, fresh.ID, second.ID, third.ID}
			for _, size := range []int{1, 2, 5, 50} {
				var got []string
				for _, p := range pages(t, size, func(r page.Request) (page.Result[*schema.Schema], error) {
					return s.ListSchemas(ctx, org, r)
				}) {
					got = append(got, ids(p)...)
				}
				is.Equal(got, want) // every live schema once, in order, at every page size
			}
			res, err := s.ListSchemas(ctx, org, page.Request{Size: 2, Offset: 2})
			is.NoErr(err)
			is.Equal(ids(res.Items), want[2:4]) // numbered pages too
			is.Equal(res.Total, 5)              // the trashed one is not counted
		}},
		{"the trash lists deleted schemas, most recent first, bounded", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			org := newID("org")
			create(t, s, org, 0, nil)
			a := create(t, s, org, 1, func(sc *schema.Schema) { sc.DeletedAt = atPtr(5) })
			b := create(t, s, org, 2, func(sc *schema.Schema) { sc.DeletedAt = atPtr(7) })
			create(t, s, newID("org"), 3, func(sc *schema.Schema) { sc.DeletedAt = atPtr(9) })
			got, err := s.ListDeletedSchemas(ctx, org, 10)
			is.NoErr(err)
			is.Equal(ids(got), []string{b.ID, a.ID})
			sameTimePtr(t, "DeletedAt", got[0].DeletedAt, b.DeletedAt)
			got, err = s.ListDeletedSchemas(ctx, org, 1)
			is.NoErr(err)
			is.Equal(ids(got), []string{b.ID})
		}},
		{"names by prefix count live schemas of the organization only", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			org := newID("org")
			for i, name := range []string{"Company", "Company (2)", "Companion", "Person"} {
				create(t, s, org, i, func(sc *schema.Schema) { sc.Name = name })
			}
			create(t, s, org, 5, func(sc *schema.Schema) { sc.Name, sc.DeletedAt = "Company (3)", atPtr(6) })
			create(t, s, newID("org"), 6, func(sc *schema.Schema) { sc.Name = "Company (4)" })
			got, err := s.SchemaNames(ctx, org, "Company")
			is.NoErr(err)
			is.Equal(got, []string{"Company", "Company (2)"})
			got, err = s.SchemaNames(ctx, org, "Compan")
			is.NoErr(err)
			is.Equal(len(got), 3)
			got, err = s.SchemaNames(ctx, org, "Nobody")
			is.NoErr(err)
			is.Equal(len(got), 0)
		}},
		{"find by hash: the oldest live schema of the organization", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			org := newID("org")
			create(t, s, org, 0, func(sc *schema.Schema) { sc.DeletedAt = atPtr(1) }) // trashed, older
			first := create(t, s, org, 1, nil)
			create(t, s, org, 2, nil)
			other := create(t, s, org, 3, func(sc *schema.Schema) { sc.SetContent(json.RawMessage(`{"type":"object","properties":{"z":{}}}`)) })
			got, err := s.FindSchemaByHash(ctx, org, first.ContentHash)
			is.NoErr(err)
			is.Equal(got.ID, first.ID)
			got, err = s.FindSchemaByHash(ctx, org, other.ContentHash)
			is.NoErr(err)
			is.Equal(got.ID, other.ID)
			_, err = s.FindSchemaByHash(ctx, newID("org"), first.ContentHash)
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.FindSchemaByHash(ctx, org, "nope")
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"delete removes for good; unknown and foreign ids are not found", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := create(t, s, newID("org"), 0, nil)
			keep := create(t, s, sc.OrgID, 1, nil)
			is.True(errors.Is(s.DeleteSchema(ctx, newID("org"), sc.ID), ports.ErrNotFound))
			is.NoErr(s.DeleteSchema(ctx, sc.OrgID, sc.ID))
			_, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			is.True(errors.Is(s.DeleteSchema(ctx, sc.OrgID, sc.ID), ports.ErrNotFound))
			_, err = s.GetSchema(ctx, sc.OrgID, keep.ID)
			is.NoErr(err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

func checkLifecycle(t *testing.T, got, want *schema.Schema) {
	t.Helper()
	is := is.NewRelaxed(t)
	checkSchema(t, got, want)
	is.Equal(got.ContentHash, want.ContentHash)
	is.Equal(len(got.Tags), len(want.Tags))
	for i := range want.Tags {
		is.Equal(got.Tags[i], want.Tags[i]) // order kept
	}
	is.Equal(got.IsPinned, want.IsPinned)
	if want.PublishedContent == nil {
		is.Equal(got.PublishedContent, nil)
	} else {
		sameJSON(t, "PublishedContent", got.PublishedContent, want.PublishedContent)
	}
	is.Equal(got.PublishedHash, want.PublishedHash)
	sameTimePtr(t, "PublishedAt", got.PublishedAt, want.PublishedAt)
	is.Equal(got.KeyLanguage, want.KeyLanguage)
	sameTimePtr(t, "DeletedAt", got.DeletedAt, want.DeletedAt)
}

// RunRecordPurge runs the RecordStore contract of DeleteRecordsBySchema.
func RunRecordPurge(t *testing.T, newStore func(t *testing.T) ports.RecordStore) {
	ctx := context.Background()
	t.Run("delete by schema removes exactly that schema's records of the organization", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t)
		org, sch, other := newID("org"), newID("sch"), newID("sch")
		mk := func(orgID, schemaID string, n int) *enrichment.Record {
			r := newRecord(orgID, n)
			r.SchemaID = schemaID
			is.NoErr(s.CreateRecord(ctx, r))
			return r
		}
		mk(org, sch, 0)
		mk(org, sch, 1)
		keep := mk(org, other, 2)
		foreign := mk(newID("org"), sch, 3)
		bare := mk(org, "", 4)
		n, err := s.DeleteRecordsBySchema(ctx, org, sch)
		is.NoErr(err)
		is.Equal(n, 2)
		res, err := s.ListRecords(ctx, org, ports.RecordFilter{}, page.Request{Size: 10})
		is.NoErr(err)
		is.Equal(recordIDs(res.Items), []string{bare.ID, keep.ID})
		_, err = s.GetRecord(ctx, foreign.OrgID, foreign.ID)
		is.NoErr(err) // another organization's record of the same schema id stays
		n, err = s.DeleteRecordsBySchema(ctx, org, sch)
		is.NoErr(err)
		is.Equal(n, 0) // again: nothing left
	})
}

// RunPurgeInUnitOfWork checks that a purge's deletes (records, a schema)
// inside a unit of work roll back with it, and commit with it.
func RunPurgeInUnitOfWork(t *testing.T, newUoW func(t *testing.T) UnitOfWorkFixture) {
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		name := "rolled back"
		if commit {
			name = "committed"
		}
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			f := newUoW(t)
			org := newID("org")
			sc := newSchema(org, 0)
			is.NoErr(f.Repos.Schemas.CreateSchema(ctx, sc))
			r := newRecord(org, 0)
			r.SchemaID = sc.ID
			is.NoErr(f.Repos.Records.CreateRecord(ctx, r))
			err := f.UoW.InTx(ctx, func(ctx context.Context, rp ports.Repos) error {
				n, err := rp.Records.DeleteRecordsBySchema(ctx, org, sc.ID)
				if err != nil {
					return err
				}
				if n != 1 {
					return errors.New("want 1 record deleted")
				}
				if err := rp.Schemas.DeleteSchema(ctx, org, sc.ID); err != nil {
					return err
				}
				if !commit {
					return errBoom
				}
				return nil
			})
			if commit {
				is.NoErr(err)
			} else {
				is.Equal(err, errBoom)
			}
			_, errR := f.Repos.Records.GetRecord(ctx, org, r.ID)
			_, errS := f.Repos.Schemas.GetSchema(ctx, org, sc.ID)
			is.Equal(errors.Is(errR, ports.ErrNotFound), commit)
			is.Equal(errors.Is(errS, ports.ErrNotFound), commit)
		})
	}
}
