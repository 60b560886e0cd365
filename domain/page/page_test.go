package page_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/page"
)

func TestCursorRoundTrip(t *testing.T) {
	is := is.New(t)
	c := page.Cursor{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), ID: "abc|d"}
	r, err := page.ParseRequest(10, c.Encode())
	is.NoErr(err)
	is.Equal(r.Size, 10)
	is.True(r.After.CreatedAt.Equal(c.CreatedAt))
	is.Equal(r.After.ID, c.ID)
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		size   int
		cursor string
		want   int
		ok     bool
	}{
		{0, "", page.DefaultSize, true},
		{200, "", 200, true},
		{201, "", 0, false},
		{-1, "", 0, false},
		{5, "!!", 0, false},
		{5, "bm9waXBl", 0, false}, // "nopipe"
	}
	for _, tt := range tests {
		is := is.New(t)
		r, err := page.ParseRequest(tt.size, tt.cursor)
		if !tt.ok {
			is.True(err != nil)
			continue
		}
		is.NoErr(err)
		is.Equal(r.Size, tt.want)
	}
	_, err := page.ParseRequest(5, "eHx5")
	is.New(t).True(errors.Is(err, page.ErrBadCursor))
}

func FuzzParseRequest(f *testing.F) {
	f.Add(10, "")
	f.Add(10, page.Cursor{CreatedAt: time.Unix(1, 0), ID: "x"}.Encode())
	f.Add(10, page.Cursor{Rank: 1, CreatedAt: time.Unix(1, 0), ID: "x|y"}.Encode())
	f.Fuzz(func(t *testing.T, size int, cursor string) {
		r, err := page.ParseRequest(size, cursor)
		if err == nil && (r.Size < 1 || r.Size > page.MaxSize) {
			t.Fatalf("accepted size %d", r.Size)
		}
		if err == nil && r.After != nil { // an accepted cursor survives a round trip
			again, err := page.ParseRequest(size, r.After.Encode())
			if err != nil || *again.After != *r.After {
				t.Fatalf("cursor %+v does not round-trip: %v", *r.After, err)
			}
		}
	})
}

func TestRankedCursor(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	c := page.Cursor{Rank: 1, CreatedAt: at, ID: "abc"}
	r, err := page.ParseRequest(10, c.Encode())
	is.NoErr(err)
	is.Equal(*r.After, page.Cursor{Rank: 1, CreatedAt: at, ID: "abc"})
	is.True(c.BeforeRanked(0, at.Add(time.Hour), "zzz")) // unpinned after pinned, whatever the time
	is.True(!c.BeforeRanked(1, at.Add(time.Hour), "a"))  // a later pinned one came before
	is.True(c.BeforeRanked(1, at, "abb"))
	_, err = page.ParseRequest(10, "MCExfGE") // "0!1|a": rank 0 is never written
	is.True(errors.Is(err, page.ErrBadCursor))
}
