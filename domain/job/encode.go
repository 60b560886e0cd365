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
// line is written through it (and every stored event through StoreData),
// so its cost is paid per event; TestMarshalData and FuzzMarshalData hold
// it to json.Marshal's bytes, and StoreData to the same value.
//
// It encodes into a pooled scratch buffer and returns an exact-size copy:
// stores keep what it returns, so spare capacity would be kept with it.
func MarshalData(m map[string]any) ([]byte, error) { return marshal(m, true) }

// StoreData returns the same JSON value as MarshalData with each object's
// keys in the map's own (random) order: for stores, which keep the value
// and give it back decoded, never the text. Sorting the keys of an event
// (about 20 with the common block) was half of MarshalData's time.
func StoreData(m map[string]any) ([]byte, error) { return marshal(m, false) }

func marshal(m map[string]any, sorted bool) ([]byte, error) {
	bp := scratch.Get().(*[]byte)
	b, err := appendJSON((*bp)[:0], m, sorted)
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
		// encoding/json writes %f between 1e-6 and 1e21 (and for 0);
		// anything else (exponents, NaN, infinities) goes to it.
		if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.AppendFloat(b, x, 'f', -1, 64), nil
		}
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		if !sorted {
			return appendMapAsIs(b, x)
		}
		return appendMap(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendList(b, x, sorted)
	case []string:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		var err error
		for i, it := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendString(b, it); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		return appendList(b, x, sorted)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// appendMap writes m's keys in order. Its frame holds the keys' array, so
// it is apart from appendJSON, which every value of every list goes
// through: a 512-byte frame there made each job's goroutine grow its stack.
func appendMap(b []byte, m map[string]any) ([]byte, error) {
	var onStack [32]string // an event's keys fit: no allocation for them
	keys := onStack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendJSON(b, m[k], true); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendMapAsIs writes m's keys in the map's order (StoreData).
func appendMapAsIs(b []byte, m map[string]any) ([]byte, error) {
	b = append(b, '{')
	var err error
	first := true
	for k, v := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		if b, err = appendString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendJSON(b, v, false); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
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

// appendString writes s quoted; a string with anything json.Marshal
// escapes (quotes, backslashes, control characters, <, >, &, non-ASCII
// for its checks of UTF-8 and U+2028/U+2029) is written by json.Marshal.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
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
