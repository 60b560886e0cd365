package job

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
)

// MarshalData returns an event's data exactly as json.Marshal writes it
// (keys sorted, HTML characters escaped), without encoding/json's
// reflection for the types events are built of: strings, booleans, ints,
// float64, nil, []string, []any, map[string]any and []map[string]any, at
// any depth. Any other value, and any string or number that needs
// escaping or an exponent, is written by json.Marshal itself. Every SSE
// line is written the same way (Event.MarshalJSON, and every stored event
// by Event.StoredData), so its cost is paid per event; TestMarshalData and
// FuzzMarshalData hold it to json.Marshal's bytes, and StoredData to the
// same value.
//
// It encodes into a pooled scratch buffer and returns an exact-size copy:
// stores keep what it returns, so spare capacity would be kept with it.
func MarshalData(m map[string]any) ([]byte, error) {
	return encode(func(b []byte) ([]byte, error) { return appendJSON(b, m, true) })
}

// StoredData returns the event's data (its fields and its common block) as
// stores keep it: the same JSON value as MarshalJSON's, without event and
// job_id, each object's keys in the map's own (random) order, for stores
// keep the value and give it back decoded, never the text, and sorting an
// event's keys was a large part of encoding it. Nil for an event without
// data.
func (e Event) StoredData() ([]byte, error) {
	p, typed := e.Payload.(pairer)
	typed = typed && e.Data == nil
	if e.Data == nil && e.Common == nil && !typed {
		return nil, nil
	}
	return encode(func(b []byte) ([]byte, error) { return appendEvent(b, e.Data, p, e.Common, nil, false) })
}

// MarshalJSON writes the event's data with the event field and the job id,
// the shape every SSE data line carries, keys sorted.
func (e Event) MarshalJSON() ([]byte, error) {
	p, _ := e.Payload.(pairer)
	extra := [...]field{{"event", string(e.Type)}, {"job_id", e.JobID}}
	return encode(func(b []byte) ([]byte, error) { return appendEvent(b, e.Data, p, e.Common, extra[:], true) })
}

// appendEvent writes an event's data: data, or, without it, the fields of
// its typed payload p, with the block c and extra (appendObject).
func appendEvent(b []byte, data map[string]any, p pairer, c *Common, extra []field, sorted bool) ([]byte, error) {
	ps := getPairs()
	defer putPairs(ps)
	if data != nil || p == nil {
		*ps = mapPairs((*ps)[:0], data)
	} else {
		*ps = p.pairs((*ps)[:0])
	}
	return appendObject(b, *ps, c, extra, sorted)
}

// encode runs write on a pooled scratch buffer and returns an exact-size
// copy of what it wrote.
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

// maxScratch is the largest buffer MarshalData keeps for reuse.
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
	case breakdowns:
		return x.appendTo(b)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// field is a string field written over an object's own (Event.MarshalJSON's
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
	case kindInt, kindInt64:
		return strconv.AppendInt(b, p.n, 10), nil
	case kindFloat:
		return appendFloat(b, p.f)
	case kindBool:
		return strconv.AppendBool(b, p.b), nil
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
func appendObject(b []byte, ps []pair, c *Common, extra []field, sorted bool) ([]byte, error) {
	var shadowed [len(commonKeys)]bool // the block's keys that ps or extra writes instead
	if c != nil {
		for i := range ps {
			if at, ok := slices.BinarySearch(commonKeys[:], ps[i].key); ok {
				shadowed[at] = true
			}
		}
		for _, f := range extra {
			if at, ok := slices.BinarySearch(commonKeys[:], f.key); ok {
				shadowed[at] = true
			}
		}
	}
	ownKey := func(k string) bool { // a key of ps that no extra field replaces
		for _, f := range extra {
			if f.key == k {
				return false
			}
		}
		return true
	}
	b = append(b, '{')
	n := 0
	var err error
	key := func(k string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if b, err = appendString(b, k); err == nil {
			b = append(b, ':')
		}
	}
	if !sorted {
		for i := range ps {
			if !ownKey(ps[i].key) {
				continue
			}
			if key(ps[i].key); err == nil {
				b, err = appendPair(b, &ps[i], false)
			}
			if err != nil {
				return nil, err
			}
		}
		for i, k := range commonKeys {
			if c == nil || shadowed[i] {
				continue
			}
			if key(k); err == nil {
				b, err = c.appendValue(b, i)
			}
			if err != nil {
				return nil, err
			}
		}
		for _, f := range extra {
			if key(f.key); err == nil {
				b, err = appendString(b, f.value)
			}
			if err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	sortPairs(ps)
	di, ci, ei := 0, 0, 0
	for {
		for di < len(ps) && !ownKey(ps[di].key) {
			di++
		}
		for c != nil && ci < len(commonKeys) && shadowed[ci] {
			ci++
		}
		next, from := "", -1
		if di < len(ps) {
			next, from = ps[di].key, 0
		}
		if c != nil && ci < len(commonKeys) && (from < 0 || commonKeys[ci] < next) {
			next, from = commonKeys[ci], 1
		}
		if ei < len(extra) && (from < 0 || extra[ei].key < next) {
			next, from = extra[ei].key, 2
		}
		if from < 0 {
			return append(b, '}'), nil
		}
		if key(next); err == nil {
			switch from {
			case 0:
				b, err = appendPair(b, &ps[di], true)
				di++
			case 1:
				b, err = c.appendValue(b, ci)
				ci++
			case 2:
				b, err = appendString(b, extra[ei].value)
				ei++
			}
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
