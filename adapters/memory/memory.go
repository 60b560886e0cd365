package memory

import (
	"bytes"
	"encoding/json"
	"sort"
	"time"

	"github.com/entityenrich/enrich/domain/page"
)

// ts normalises a stored time the way PostgreSQL's timestamptz does (UTC,
// microseconds), so that both adapters return the same values and cursors.
func ts(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func tsPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// cloneBytes copies b; empty and nil both become nil, as NULL does in SQL.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}

func cloneJSON(b json.RawMessage) json.RawMessage { return json.RawMessage(cloneBytes(b)) }

// listPage returns one page of items ordered newest first by (created, id).
// at extracts an item's key.
func listPage[T any](items []T, p page.Request, at func(T) (time.Time, string)) page.Result[T] {
	sort.Slice(items, func(i, j int) bool {
		ti, ii := at(items[i])
		tj, ij := at(items[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return ii > ij
	})
	size := pageSize(p.Size)
	out := make([]T, 0, size)
	skip := 0
	if p.After == nil {
		skip = p.Offset
	}
	for _, it := range items {
		t, id := at(it)
		if p.After != nil && !p.After.Before(t, id) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, it)
		if len(out) > size {
			break
		}
	}
	res := page.Result[T]{Total: len(items)}
	if len(out) > size {
		out = out[:size]
		t, id := at(out[size-1])
		res.Next = page.Cursor{CreatedAt: t, ID: id}.Encode()
	}
	res.Items = out
	return res
}

// pageSize applies the defaults of page.ParseRequest to a size that did not
// come through it.
func pageSize(n int) int {
	switch {
	case n <= 0:
		return page.DefaultSize
	case n > page.MaxSize:
		return page.MaxSize
	}
	return n
}

// oldestFirst orders by (created, id) ascending.
func oldestFirst(ti time.Time, ii string, tj time.Time, ij string) bool {
	if !ti.Equal(tj) {
		return ti.Before(tj)
	}
	return ii < ij
}
