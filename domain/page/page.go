// Package page holds keyset pagination: page sizes and opaque cursors.
package page

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	DefaultSize = 50
	MaxSize     = 200
)

// ErrBadCursor is returned for a cursor this service did not issue.
var ErrBadCursor = errors.New("invalid cursor")

// Request asks for one page, newest first.
type Request struct {
	Size  int
	After *Cursor // nil for the first page
	// Offset skips that many items first; used only without a cursor (the
	// reference product's numbered pages).
	Offset int
}

// Cursor is the position after the last item of a page: items are ordered by
// (Rank, CreatedAt, ID) descending. Rank is a leading group (1 for pinned
// schemas, else 0), and CreatedAt is whichever time the listing orders by
// (a schema listing's is the update time).
type Cursor struct {
	Rank      int
	CreatedAt time.Time
	ID        string
}

// Encode returns the opaque form given to clients.
func (c Cursor) Encode() string {
	s := strconv.FormatInt(c.CreatedAt.UnixNano(), 10) + "|" + c.ID
	if c.Rank != 0 {
		s = strconv.Itoa(c.Rank) + "!" + s
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// Before reports whether an item at (t, id) of rank 0 comes after the
// cursor in descending order.
func (c Cursor) Before(t time.Time, id string) bool { return c.BeforeRanked(0, t, id) }

// BeforeRanked reports whether an item at (rank, t, id) comes after the
// cursor in descending order.
func (c Cursor) BeforeRanked(rank int, t time.Time, id string) bool {
	if rank != c.Rank {
		return rank < c.Rank
	}
	if t.Equal(c.CreatedAt) {
		return id < c.ID
	}
	return t.Before(c.CreatedAt)
}

// ParseRequest validates a page size (0 means default) and a cursor ("" means
// the first page).
func ParseRequest(size int, cursor string) (Request, error) {
	if size == 0 {
		size = DefaultSize
	}
	if size < 1 || size > MaxSize {
		return Request{}, fmt.Errorf("page_size must be between 1 and %d", MaxSize)
	}
	r := Request{Size: size}
	if cursor == "" {
		return r, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return Request{}, ErrBadCursor
	}
	ns, id, ok := strings.Cut(string(b), "|")
	rank := 0
	if rs, rest, ranked := strings.Cut(ns, "!"); ranked {
		if rank, err = strconv.Atoi(rs); err != nil || rank == 0 {
			return Request{}, ErrBadCursor
		}
		ns = rest
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return Request{}, ErrBadCursor
	}
	r.After = &Cursor{Rank: rank, CreatedAt: time.Unix(0, n).UTC(), ID: id}
	return r, nil
}

// Result is one page of items plus the cursor of the next page ("" at the
// end) and the number of items on every page together.
type Result[T any] struct {
	Items []T
	Next  string
	Total int
}

// Numbered is the request for page number n (from 1) of size items: an
// offset, no cursor.
func Numbered(n, size int) (Request, error) {
	r, err := ParseRequest(size, "")
	if err != nil {
		return Request{}, err
	}
	if n < 1 {
		return Request{}, fmt.Errorf("page must be at least 1")
	}
	r.Offset = (n - 1) * r.Size
	return r, nil
}

// Pages is how many pages of size hold total items.
func Pages(total, size int) int {
	if size <= 0 {
		return 0
	}
	return (total + size - 1) / size
}
