package jobcodec

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
)

// The encoder writes exactly what json.Marshal writes (keys sorted, HTML
// characters escaped) without encoding/json's reflection for the values
// events are built of: strings, booleans, ints, float64, nil, []string,
// []any, map[string]any and []map[string]any at any depth, and the lists of
// this package (writer). Any other value, and any string or number that
// needs escaping or an exponent, is written by json.Marshal itself. Every
// event is encoded at least twice (stored, and on each SSE line), so this
// is paid per event; TestAppendJSONValues and FuzzAppendJSON hold it to
// json.Marshal's bytes. Unsorted, each object's keys come in the order they
// are listed (a payload's fields, then its common block) or, for a map, in
// the map's own order: stores keep the value and give it back decoded,
// never the text, and sorting an event's keys was a large part of encoding
// it.

// writer is a value of this package that writes itself.
type writer interface {
	appendTo(b []byte, sorted bool) ([]byte, error)
}

// encode runs write on a pooled scratch buffer and returns an exact-size
// copy of what it wrote: stores keep what it returns, so spare capacity
// would be kept with it.
func encode(write func([]byte) ([]byte, error)) ([]byte, error) {
	bp := scratch.Get().(*[]byte)
	b, err := write((*bp)[:0])
	var out []byte
	if err == nil {
		out = append([]byte(nil), b...)
	}
	if cap(b) <= maxScratch {
		*bp = b
		scratch.Put(bp)
	}
	return out, err
}

// maxScratch is the largest buffer encode keeps for reuse.
const maxScratch = 64 << 10

var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func appendJSON(b []byte, v any, sorted bool) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, x)
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		return appendFloat(b, x)
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendMap(b, x, sorted)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendList(b, x, sorted)
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendStrings(b, x)
	case []map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendList(b, x, sorted)
	case writer:
		return x.appendTo(b, sorted)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// field is a string field written over an object's own (an SSE line's
// event and job_id).
type field struct{ key, value string }

// appendFloat writes x as json.Marshal does: encoding/json writes %f
// between 1e-6 and 1e21 (and for 0); anything else (exponents, NaN,
// infinities) goes to it.
func appendFloat(b []byte, x float64) ([]byte, error) {
	if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, x, 'f', -1, 64), nil
	}
	out, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// appendPair writes one pair's value.
func appendPair(b []byte, p *pair, sorted bool) ([]byte, error) {
	switch p.kind {
	case kindString:
		return appendString(b, p.s)
	case kindInt:
		return strconv.AppendInt(b, p.n, 10), nil
	case kindFloat:
		return appendFloat(b, p.f)
	case kindBool:
		return strconv.AppendBool(b, p.b), nil
	case kindNull:
		return append(b, "null"...), nil
	}
	return appendJSON(b, p.v, sorted)
}

// appendMap writes m, its keys sorted or in the map's order.
func appendMap(b []byte, m map[string]any, sorted bool) ([]byte, error) {
	ps := getPairs()
	defer putPairs(ps)
	*ps = mapPairs((*ps)[:0], m)
	return appendObject(b, *ps, nil, nil, sorted)
}

// appendObject writes one JSON object: the fields ps, c's block under them
// (nil: none) and extra over both (sorted by key). Sorted, the keys come
// in order, as json.Marshal writes a map's: ps is sorted in place and
// merged with the block's keys, which are in order already.
func appendObject(b []byte, ps []pair, c *commonBlock, extra []field, sorted bool) ([]byte, error) {
	w := objectWriter{ps: ps, c: c, extra: extra}
	if c != nil {
		w.shadow()
	}
	var err error
	if sorted {
		b, err = w.sorted(append(b, '{'))
	} else {
		b, err = w.unsorted(append(b, '{'))
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// objectWriter writes the members of one object (appendObject). The bytes
// go through its methods' arguments, not a field, which would make
// everything it points at (extra, on the caller's stack) escape.
type objectWriter struct {
	n     int // members written
	ps    []pair
	c     *commonBlock
	extra []field
	// shadowed are the block's keys that ps or extra write instead.
	shadowed [len(commonKeys)]bool
}

func (w *objectWriter) shadow() {
	for i := range w.ps {
		if at, ok := slices.BinarySearch(commonKeys[:], w.ps[i].key); ok {
			w.shadowed[at] = true
		}
	}
	for _, f := range w.extra {
		if at, ok := slices.BinarySearch(commonKeys[:], f.key); ok {
			w.shadowed[at] = true
		}
	}
}

// own reports whether k, a key of ps, is written: no extra field replaces
// it.
func (w *objectWriter) own(k string) bool {
	for _, f := range w.extra {
		if f.key == k {
			return false
		}
	}
	return true
}

// block reports whether the block's field i is written.
func (w *objectWriter) block(i int) bool { return w.c != nil && !w.shadowed[i] }

// key writes a member's key.
func (w *objectWriter) key(b []byte, k string) ([]byte, error) {
	if w.n > 0 {
		b = append(b, ',')
	}
	w.n++
	b, err := appendString(b, k)
	return append(b, ':'), err
}

// unsorted writes ps, then the block, then extra.
func (w *objectWriter) unsorted(b []byte) ([]byte, error) {
	var err error
	for i := range w.ps {
		if !w.own(w.ps[i].key) {
			continue
		}
		if b, err = w.key(b, w.ps[i].key); err == nil {
			b, err = appendPair(b, &w.ps[i], false)
		}
		if err != nil {
			return nil, err
		}
	}
	for i, k := range commonKeys {
		if !w.block(i) {
			continue
		}
		if b, err = w.key(b, k); err == nil {
			b, err = w.c.appendValue(b, i)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, f := range w.extra {
		if b, err = w.key(b, f.key); err == nil {
			b, err = appendString(b, f.value)
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// sorted merges ps (sorted here), the block and extra in key order.
func (w *objectWriter) sorted(b []byte) ([]byte, error) {
	sortPairs(w.ps)
	di, ci, ei := 0, 0, 0
	for {
		for di < len(w.ps) && !w.own(w.ps[di].key) {
			di++
		}
		for ci < len(commonKeys) && !w.block(ci) {
			ci++
		}
		next, from := "", -1
		if di < len(w.ps) {
			next, from = w.ps[di].key, 0
		}
		if ci < len(commonKeys) && (from < 0 || commonKeys[ci] < next) {
			next, from = commonKeys[ci], 1
		}
		if ei < len(w.extra) && (from < 0 || w.extra[ei].key < next) {
			next, from = w.extra[ei].key, 2
		}
		if from < 0 {
			return b, nil
		}
		var err error
		b, err = w.key(b, next)
		switch {
		case err != nil:
		case from == 0:
			b, err = appendPair(b, &w.ps[di], true)
			di++
		case from == 1:
			b, err = w.c.appendValue(b, ci)
			ci++
		default:
			b, err = appendString(b, w.extra[ei].value)
			ei++
		}
		if err != nil {
			return nil, err
		}
	}
}

// appendStrings writes list as an array, [] when it is empty or nil.
func appendStrings(b []byte, list []string) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, it := range list {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, it); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendList[T any](b []byte, items []T, sorted bool) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, it, sorted); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// plain holds the bytes a JSON string carries as they are (json.Marshal's
// own set): printable ASCII but the quote, the backslash, <, > and &. One
// lookup a byte, where seven comparisons were a quarter of the time of
// encoding an event.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString writes s quoted; a string with anything json.Marshal
// escapes (quotes, backslashes, control characters, <, >, &, non-ASCII
// for its checks of UTF-8 and U+2028/U+2029) is written by json.Marshal.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			out, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			return append(b, out...), nil
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}
