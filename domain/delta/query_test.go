package delta_test

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
)

func TestParseChangesQuery(t *testing.T) {
	def := delta.ChangesQuery{Limit: 100, Lease: 120 * time.Second, Include: delta.Pending, Order: delta.Asc, Format: "json"}
	with := func(edit func(*delta.ChangesQuery)) delta.ChangesQuery { q := def; edit(&q); return q }
	tests := []struct {
		raw   string
		set   delta.Settings
		want  delta.ChangesQuery
		field string // the parameter named by the error; "" for success
	}{
		{raw: "", want: def},
		{raw: "since=0&claim=true&format=json", want: with(func(q *delta.ChangesQuery) { q.Claim = true })},
		{raw: "since=42&claim=false", want: with(func(q *delta.ChangesQuery) { q.Since = 42 })},
		{raw: "since=", want: def}, // empty counts as absent
		{raw: "", set: delta.Settings{PageLimit: 500}, want: with(func(q *delta.ChangesQuery) { q.Limit = 500 })},
		{raw: "", set: delta.Settings{PageLimit: 5000, Lease: time.Second}, want: with(func(q *delta.ChangesQuery) {
			q.Limit, q.Lease = 1000, 10*time.Second
		})},
		{raw: "limit=1", want: with(func(q *delta.ChangesQuery) { q.Limit = 1 })},
		{raw: "limit=1000", want: with(func(q *delta.ChangesQuery) { q.Limit = 1000 })},
		{raw: "lease_s=10", want: with(func(q *delta.ChangesQuery) { q.Lease = 10 * time.Second })},
		{raw: "lease_s=3600", want: with(func(q *delta.ChangesQuery) { q.Lease = time.Hour })},
		{raw: "include=acked", want: with(func(q *delta.ChangesQuery) { q.Include = delta.Acked })},
		{raw: "include=all&order=desc&before=9", want: with(func(q *delta.ChangesQuery) {
			q.Include, q.Order, q.Before = delta.All, delta.Desc, 9
		})},
		{raw: "claim=1", want: with(func(q *delta.ChangesQuery) { q.Claim = true })},
		{raw: "unknown=x", want: def},
		{raw: "since=-1", field: "since"},
		{raw: "since=abc", field: "since"},
		{raw: "since=1.5", field: "since"},
		{raw: "since=99999999999999999999", field: "since"},
		{raw: "since=1&since=2", field: "since"},
		{raw: "since=%00", field: "since"},
		{raw: "limit=0", field: "limit"},
		{raw: "limit=1001", field: "limit"},
		{raw: "limit=-5", field: "limit"},
		{raw: "limit=ten", field: "limit"},
		{raw: "lease_s=9", field: "lease_s"},
		{raw: "lease_s=3601", field: "lease_s"},
		{raw: "claim=yes", field: "claim"},
		{raw: "include=mine", field: "include"},
		{raw: "order=up", field: "order"},
		{raw: "format=sql", field: "format"},
		{raw: "before=0&order=desc", field: "before"},
		{raw: "before=5", field: "before"}, // before is a desc cursor
		{raw: "claim=true&order=desc", field: "order"},
		{raw: "claim=true&include=all", field: "include"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			is := is.New(t)
			v, err := url.ParseQuery(tt.raw)
			is.NoErr(err)
			got, err := delta.ParseChangesQuery(v, tt.set)
			if tt.field == "" {
				is.NoErr(err)
				is.Equal(got, tt.want)
				return
			}
			var pe *delta.ParamError
			is.True(errors.As(err, &pe))
			is.Equal(pe.Field, tt.field)
			is.True(errors.Is(err, delta.ErrInvalidParam))
		})
	}
}

func TestSettings(t *testing.T) {
	is := is.New(t)
	s := delta.Settings{}.WithDefaults()
	is.Equal(s.PageLimit, 100)
	is.Equal(s.Lease, 120*time.Second)
	is.NoErr(s.Validate())
	var pe *delta.ParamError
	is.True(errors.As(delta.Settings{PageLimit: 1001}.WithDefaults().Validate(), &pe))
	is.Equal(pe.Field, "page_limit")
	is.True(errors.As(delta.Settings{Lease: time.Second}.WithDefaults().Validate(), &pe))
	is.Equal(pe.Field, "lease_s")
}

// FuzzParseChangesQuery checks that any query either parses into values
// inside the documented bounds or fails naming a known parameter.
func FuzzParseChangesQuery(f *testing.F) {
	for _, s := range []string{"", "since=0&claim=true&format=json", "since=-1", "limit=1001", "lease_s=9",
		"include=all&order=desc&before=10", "claim=true&order=desc", "since=1&since=2", "since=%00",
		"limit=99999999999999999999999", "order=%ED%A0%80", "claim=TRUE&limit=1000&lease_s=3600"} {
		f.Add(s, 0)
	}
	f.Add("", 1000)
	known := map[string]bool{"since": true, "before": true, "claim": true, "limit": true, "lease_s": true,
		"include": true, "order": true, "format": true}
	f.Fuzz(func(t *testing.T, raw string, pageLimit int) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		set := delta.Settings{PageLimit: pageLimit}
		q, err := delta.ParseChangesQuery(v, set)
		if err != nil {
			var pe *delta.ParamError
			if !errors.As(err, &pe) || !known[pe.Field] {
				t.Fatalf("%q: error %v names no known parameter", raw, err)
			}
			return
		}
		switch {
		case q.Since < 0, q.Before < 0, q.Limit < delta.MinLimit, q.Limit > delta.MaxLimit:
			t.Fatalf("%q: out of bounds %+v", raw, q)
		case q.Lease < delta.MinLease, q.Lease > delta.MaxLease, q.Format != "json":
			t.Fatalf("%q: out of bounds %+v", raw, q)
		case q.Claim && (q.Order != delta.Asc || q.Include != delta.Pending || q.Before != 0):
			t.Fatalf("%q: claim outside the FIFO feed %+v", raw, q)
		}
	})
}
