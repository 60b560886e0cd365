package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// TestRecordBatchDelete: soft delete (hidden from reads and listings,
// shown with include_deleted, repeatable), hard delete (owners only), the
// 1..100 limit, and tenant isolation, on memory and PostgreSQL.
func TestRecordBatchDelete(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres
		}
		t.Run(b.name, func(t *testing.T) { testRecordBatchDelete(t, b.dsn(t)) })
	}
}

type deleteAnswer struct {
	DeletedCount        int      `json:"deleted_count"`
	DeletedIDs          []string `json:"deleted_ids"`
	AlreadyDeletedCount int      `json:"already_deleted_count"`
	AlreadyDeletedIDs   []string `json:"already_deleted_ids"`
	NotFoundCount       int      `json:"not_found_count"`
	NotFoundIDs         []string `json:"not_found_ids"`
	HardDelete          bool     `json:"hard_delete"`
	Message             string   `json:"message"`
}

type recordList struct {
	Records []struct {
		ID        string  `json:"id"`
		Model     string  `json:"model"`
		IsDeleted bool    `json:"is_deleted"`
		DeletedAt *string `json:"deleted_at"`
		CreatedAt string  `json:"created_at"`
	} `json:"records"`
	Total      int     `json:"total"`
	NextCursor *string `json:"next_cursor"`
}

func (l recordList) ids() []string {
	var out []string
	for _, r := range l.Records {
		out = append(out, r.ID)
	}
	return out
}

// putRecord stores a record of an organization directly (a fixture with a
// chosen creation time and model).
func putRecord(t *testing.T, s *service, orgID, model string, created time.Time) string {
	t.Helper()
	id := fmt.Sprintf("rec-%d", time.Now().UnixNano())
	if err := s.srv.Stores.Records.CreateRecord(context.Background(), &enrichment.Record{ID: id, OrgID: orgID,
		Type: enrichment.RecordEnrichment, Model: model, Strategy: enrichment.SinglePass,
		EntityData: json.RawMessage(`{"name":"Acme"}`), StructuredOutput: json.RawMessage(`{"name":"Acme"}`), CreatedAt: created}); err != nil {
		t.Fatal(err)
	}
	return id
}

func testRecordBatchDelete(t *testing.T, dsn string) {
	is := is.New(t)
	s := start(t, testConfig(dsn))
	home, other := s.register("home@example.com"), s.register("other@example.com")
	operator := s.newKey(home.key, "operator")
	schemaID := s.createSchema(home.key, "Company", companySchema)
	var done struct {
		RecordID string `json:"record_id"`
	}
	is.Equal(s.call("POST", "/api/single/enrich/sync", operator, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID,
		"models": []string{"sandbox::echo"}}, &done), 200)
	real := done.RecordID
	is.True(real != "")
	now := time.Now().UTC()
	b, c := putRecord(t, s, home.orgID, "sandbox::echo", now.Add(-2*time.Hour)), putRecord(t, s, home.orgID, "sandbox::echo", now.Add(-3*time.Hour))
	foreign := putRecord(t, s, other.orgID, "sandbox::echo", now.Add(-time.Hour))

	// Limits: 1..100 ids, one spelling at a time.
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("id-%d", i)
	}
	for _, tt := range []struct {
		body  any
		field string
	}{
		{obj{}, "ids"},
		{obj{"ids": []string{}}, "ids"},
		{obj{"ids": many}, "ids"},
		{obj{"record_ids": many}, "record_ids"},
		{obj{"ids": []string{b}, "record_ids": []string{c}}, "record_ids"},
		{obj{"ids": []string{""}}, "ids"},
		{obj{"ids": "x"}, "ids"},
		{obj{"ids": []string{b}, "bogus": true}, "bogus"},
	} {
		var e apiError
		is.Equal(s.call("POST", "/api/records/batch-delete", operator, tt.body, &e), 400)
		is.Equal(e.Field, tt.field)
	}
	// all_orgs (the reference's admin query parameter) is declared: a
	// non-boolean is refused, true is the system administrators' (403 for
	// anyone else, on every records route), false is a no-op.
	for _, path := range []string{"/api/records/batch-delete", "/api/records", "/api/records/" + b} {
		method, body := "GET", any(nil)
		if path == "/api/records/batch-delete" {
			method, body = "POST", obj{"ids": []string{b}}
		}
		var e apiError
		is.Equal(s.call(method, path+"?all_orgs=maybe", operator, body, &e), 400)
		is.Equal(e.Field, "all_orgs")
		is.Equal(s.call(method, path+"?all_orgs=true", home.key, body, &e), 403)
	}
	var d deleteAnswer
	is.Equal(s.call("POST", "/api/records/batch-delete?all_orgs=false", operator, obj{"ids": []string{"nope"}}, &d), 200)
	is.Equal(d.NotFoundIDs, []string{"nope"})
	is.Equal(s.call("POST", "/api/records/batch-delete", operator, obj{"ids": many[:100]}, &d), 200) // 100 is fine
	is.Equal(d.NotFoundCount, 100)

	// Another organization's ids are neither deleted nor revealed: they
	// answer like unknown ids.
	is.Equal(s.call("POST", "/api/records/batch-delete", other.key, obj{"ids": []string{real, b}, "hard_delete": true}, &d), 200)
	is.Equal(d.DeletedCount, 0)
	is.Equal(d.NotFoundIDs, []string{real, b})
	is.Equal(s.call("GET", "/api/records/"+real, home.key, nil, nil), 200)

	// Soft delete.
	is.Equal(s.call("POST", "/api/records/batch-delete", operator, obj{"ids": []string{real, b, foreign, "nope", b}}, &d), 200)
	is.Equal(d.DeletedIDs, []string{real, b})
	is.Equal(d.DeletedCount, 2)
	is.Equal(d.NotFoundIDs, []string{foreign, "nope"})
	is.Equal(d.AlreadyDeletedIDs, []string{})
	is.True(!d.HardDelete)
	is.Equal(s.call("GET", "/api/records/"+real, home.key, nil, nil), 404)
	is.Equal(s.call("GET", "/api/records/"+foreign, other.key, nil, nil), 200) // untouched
	var l recordList
	is.Equal(s.call("GET", "/api/records", home.key, nil, &l), 200)
	is.Equal(l.ids(), []string{c})
	is.Equal(l.Total, 1)
	is.Equal(s.call("GET", "/api/records?include_deleted=true", home.key, nil, &l), 200)
	is.Equal(l.ids(), []string{real, b, c})
	is.Equal(l.Total, 3)
	is.True(l.Records[0].IsDeleted && l.Records[0].DeletedAt != nil)
	is.True(!l.Records[2].IsDeleted && l.Records[2].DeletedAt == nil)
	var e apiError
	is.Equal(s.call("GET", "/api/records?include_deleted=maybe", home.key, nil, &e), 400)
	is.Equal(e.Field, "include_deleted")

	// Again: idempotent, with the already deleted ones said so.
	is.Equal(s.call("POST", "/api/records/batch-delete", operator, obj{"record_ids": []string{real, b}}, &d), 200)
	is.Equal(d.DeletedCount, 0)
	is.Equal(d.AlreadyDeletedIDs, []string{real, b})

	// Hard delete: the owner's; an operator is refused and nothing changes.
	is.Equal(s.call("POST", "/api/records/batch-delete", operator, obj{"ids": []string{c}, "hard_delete": true}, &e), 403)
	is.Equal(s.call("GET", "/api/records/"+c, home.key, nil, nil), 200)
	is.Equal(s.call("POST", "/api/records/batch-delete", home.key, obj{"ids": []string{real, c, foreign}, "hard_delete": true}, &d), 200)
	is.Equal(d.DeletedIDs, []string{real, c})
	is.Equal(d.NotFoundIDs, []string{foreign})
	is.True(d.HardDelete)
	is.Equal(s.call("GET", "/api/records?include_deleted=true", home.key, nil, &l), 200)
	is.Equal(l.ids(), []string{b})
	is.Equal(s.call("POST", "/api/records/batch-delete", home.key, obj{"ids": []string{real, c}, "hard_delete": true}, &d), 200)
	is.Equal(d.NotFoundIDs, []string{real, c}) // gone is gone
	is.Equal(s.call("GET", "/api/records/"+foreign, other.key, nil, nil), 200)

	// A system administrator (a signed-in user; an access key is its
	// organization's) with all_orgs reads, lists and deletes any
	// organization's records; without it, only its own.
	admin := s.register("admin@example.com")
	is.Equal(s.call("GET", "/api/records/"+foreign, admin.token, nil, nil), 404)
	is.Equal(s.call("GET", "/api/records/"+foreign+"?all_orgs=true", admin.token, nil, nil), 200)
	is.Equal(s.call("GET", "/api/records?all_orgs=true&include_deleted=true", admin.token, nil, &l), 200)
	is.True(slices.Contains(l.ids(), foreign) && slices.Contains(l.ids(), b))
	is.Equal(s.call("GET", "/api/records", admin.token, nil, &l), 200)
	is.Equal(l.Total, 0)
	is.Equal(s.call("POST", "/api/records/batch-delete", admin.token, obj{"ids": []string{foreign}}, &d), 200)
	is.Equal(d.NotFoundIDs, []string{foreign})
	is.Equal(s.call("POST", "/api/records/batch-delete?all_orgs=true", admin.token, obj{"ids": []string{foreign}}, &d), 200)
	is.Equal(d.DeletedIDs, []string{foreign})
	is.Equal(s.call("GET", "/api/records/"+foreign, other.key, nil, nil), 404)
}

// TestRecordFilters: model and the created range on GET /api/records,
// with cursor and numbered pages, on memory and PostgreSQL.
func TestRecordFilters(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) { testRecordFilters(t, b.dsn(t)) })
	}
}

func testRecordFilters(t *testing.T, dsn string) {
	is := is.New(t)
	s := start(t, testConfig(dsn))
	home, other := s.register("home@example.com"), s.register("other@example.com")
	day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	type rec struct {
		id    string
		model string
		at    time.Time
	}
	var recs []rec
	for i := range 8 {
		m := "sandbox::echo"
		if i%2 == 1 {
			m = "sandbox::other"
		}
		at := day.Add(time.Duration(i) * 12 * time.Hour) // 2026-03-10 00:00, 12:00, 03-11 00:00, ...
		recs = append(recs, rec{putRecord(t, s, home.orgID, m, at), m, at})
	}
	putRecord(t, s, other.orgID, "sandbox::echo", day.Add(time.Hour))
	want := func(keep func(r rec) bool) []string {
		var out []rec
		for _, r := range recs {
			if keep(r) {
				out = append(out, r)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
		ids := []string{}
		for _, r := range out {
			ids = append(ids, r.id)
		}
		return ids
	}
	// all walks every page by cursor (page_size 2) and checks the total.
	all := func(query string) ([]string, int) {
		t.Helper()
		ids := []string{}
		total := -1
		q := query + "&page_size=2"
		for {
			var l recordList
			is.Equal(s.call("GET", "/api/records?"+q, home.key, nil, &l), 200)
			ids = append(ids, l.ids()...)
			if total >= 0 {
				is.Equal(l.Total, total) // every page counts the same
			}
			total = l.Total
			if l.NextCursor == nil {
				return ids, total
			}
			q = query + "&page_size=2&cursor=" + url.QueryEscape(*l.NextCursor)
		}
	}
	from, before := day.Add(12*time.Hour), day.Add(72*time.Hour) // inclusive, exclusive
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"model=sandbox::other", want(func(r rec) bool { return r.model == "sandbox::other" })},
		{"provider=sandbox::echo", want(func(r rec) bool { return r.model == "sandbox::echo" })},
		{"since=" + from.Format(time.RFC3339), want(func(r rec) bool { return !r.at.Before(from) })},
		{"start_date=" + from.Format(time.RFC3339), want(func(r rec) bool { return !r.at.Before(from) })},
		{"created_after=" + from.Format(time.RFC3339Nano), want(func(r rec) bool { return !r.at.Before(from) })},
		{"end_date=" + before.Format(time.RFC3339), want(func(r rec) bool { return r.at.Before(before) })},
		{"created_before=2026-03-12", want(func(r rec) bool { return r.at.Before(day.Add(48 * time.Hour)) })},
		{"since=2026-03-11&end_date=2026-03-12", want(func(r rec) bool {
			return !r.at.Before(day.Add(24*time.Hour)) && r.at.Before(day.Add(48*time.Hour))
		})},
		{"since=2026-03-11T00:00:00%2B02:00", want(func(r rec) bool { return !r.at.Before(day.Add(22 * time.Hour)) })},
		{"model=sandbox::echo&since=" + from.Format(time.RFC3339) + "&end_date=" + before.Format(time.RFC3339), want(func(r rec) bool {
			return r.model == "sandbox::echo" && !r.at.Before(from) && r.at.Before(before)
		})},
		{"since=2030-01-01", []string{}},
		{"since=2026-03-12&end_date=2026-03-11", []string{}},
		{"since=2026-03-11&start_date=2026-03-11T00:00:00Z", want(func(r rec) bool { return !r.at.Before(day.Add(24 * time.Hour)) })},
	} {
		ids, total := all(tt.query)
		if fmt.Sprint(ids) != fmt.Sprint(tt.want) || total != len(tt.want) {
			t.Errorf("%s: got %v (total %d), want %v", tt.query, ids, total, tt.want)
		}
	}
	// A numbered page of a filtered list.
	var l recordList
	is.Equal(s.call("GET", "/api/records?model=sandbox::echo&page=2&page_size=2", home.key, nil, &l), 200)
	echo := want(func(r rec) bool { return r.model == "sandbox::echo" })
	is.Equal(l.ids(), echo[2:4])
	is.Equal(l.Total, 4)
	// Bad values name their parameter.
	for _, tt := range []struct{ query, field string }{
		{"since=yesterday", "since"},
		{"start_date=2026-13-01", "start_date"},
		{"created_after=2026-03-11T25:00:00Z", "created_after"},
		{"end_date=03/11/2026", "end_date"},
		{"created_before=1741651200", "created_before"},
		{"since=2026-03-11&start_date=2026-03-12", "start_date"},
	} {
		var e apiError
		is.Equal(s.call("GET", "/api/records?"+tt.query, home.key, nil, &e), 400)
		if e.Field != tt.field {
			t.Errorf("%s: field %q, want %q", tt.query, e.Field, tt.field)
		}
	}
}
