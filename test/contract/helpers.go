package contract

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/page"
)

// errBoom is what update closures return to test that an adapter passes
// their error through unchanged.
var errBoom = errors.New("contract: boom")

// zone is where input times are written, to check that adapters return UTC.
var zone = time.FixedZone("UTC+5:30", 5*3600+1800)

// base is the start of every case's timeline: microsecond precision, the
// finest that PostgreSQL keeps.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC).In(zone)

// at returns base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

func atPtr(n int) *time.Time {
	t := at(n)
	return &t
}

// newID returns a unique id with a readable prefix.
func newID(prefix string) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + "_" + hex.EncodeToString(b)
}

// sameTime asserts that got is want, in UTC.
func sameTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	if got.Location() != time.UTC {
		t.Errorf("%s is in %v, want UTC", what, got.Location())
	}
}

// sameTimePtr is sameTime for optional times.
func sameTimePtr(t *testing.T, what string, got, want *time.Time) {
	t.Helper()
	switch {
	case got == nil && want == nil:
	case got == nil || want == nil:
		t.Errorf("%s = %v, want %v", what, got, want)
	default:
		sameTime(t, what, *got, *want)
	}
}

// sameJSON asserts that two documents are equal as JSON. Empty means absent
// and equals only empty.
func sameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if len(got) == 0 || len(want) == 0 {
		if len(got) != len(want) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
		return
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s is not JSON: %v: %q", what, err, got)
		return
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("contract: bad test JSON %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// pages walks a listing from the first page with the given size, decoding
// each Next cursor the way the HTTP layer does, and returns the pages.
func pages[T any](t *testing.T, size int, list func(page.Request) (page.Result[T], error)) [][]T {
	t.Helper()
	is := is.New(t)
	var out [][]T
	req := page.Request{Size: size}
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("pagination does not end")
		}
		res, err := list(req)
		is.NoErr(err)
		out = append(out, res.Items)
		if res.Next == "" {
			return out
		}
		is.True(len(res.Items) > 0) // a page with a next cursor has items
		req, err = page.ParseRequest(size, res.Next)
		is.NoErr(err) // Next is a cursor that page.ParseRequest accepts
	}
}

// sizes returns the lengths of pages.
func sizes[T any](pp [][]T) []int {
	var n []int
	for _, p := range pp {
		n = append(n, len(p))
	}
	return n
}

// newestFirst is the order of every paginated listing: created descending,
// then id descending.
func newestFirst(ti time.Time, ii string, tj time.Time, ij string) bool {
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return ii > ij
}
