package job

import (
	"slices"
	"strings"
	"sync"
)

// kind says where a pair holds its value.
type kind uint8

const (
	kindAny    kind = iota // v, written by appendJSON
	kindString             // s
	kindInt                // n, an int
	kindInt64              // n
	kindFloat              // f
	kindBool               // b
)

// pair is one field of an event's data. The payloads of every job's events
// (model_started to completed) list their fields as pairs (pairer), the
// plain values unboxed, where they built a map: an event then costs no map
// and no boxing until something asks for its fields as a map (Fields), and
// the encoders write the pairs as they are. A map (an event read from a
// log, or the payload of a rarer event) is written through pairs of
// kindAny.
type pair struct {
	key  string
	kind kind
	b    bool
	n    int64
	f    float64
	s    string
	v    any
}

func strPair(k, s string) pair         { return pair{key: k, kind: kindString, s: s} }
func intPair(k string, n int) pair     { return pair{key: k, kind: kindInt, n: int64(n)} }
func int64Pair(k string, n int64) pair { return pair{key: k, kind: kindInt64, n: n} }
func floatPair(k string, f float64) pair {
	return pair{key: k, kind: kindFloat, f: f}
}
func boolPair(k string, b bool) pair { return pair{key: k, kind: kindBool, b: b} }
func anyPair(k string, v any) pair   { return pair{key: k, kind: kindAny, v: v} }

// value is the pair's value as a map holds it, of the payload's own type
// (int or int64), as the payloads' maps held them.
func (p pair) value() any {
	switch p.kind {
	case kindString:
		return p.s
	case kindInt:
		return int(p.n)
	case kindInt64:
		return p.n
	case kindFloat:
		return p.f
	case kindBool:
		return p.b
	}
	if bd, ok := p.v.(breakdowns); ok {
		return bd.value()
	}
	return p.v
}

// pairer is a payload that lists its fields as pairs (appended to ps, each
// key once); its Fields is fieldsOf.
type pairer interface {
	Payload
	pairs(ps []pair) []pair
}

// fieldsOf builds p's fields as a map.
func fieldsOf(p pairer) map[string]any {
	ps := getPairs()
	defer putPairs(ps)
	*ps = p.pairs((*ps)[:0])
	m := make(map[string]any, len(*ps))
	for _, f := range *ps {
		m[f.key] = f.value()
	}
	return m
}

// fieldOf returns p's field k (nil when it has none).
func fieldOf(p pairer, k string) (any, bool) {
	ps := getPairs()
	defer putPairs(ps)
	*ps = p.pairs((*ps)[:0])
	for _, f := range *ps {
		if f.key == k {
			return f.value(), true
		}
	}
	return nil, false
}

// mapPairs appends m's fields to ps.
func mapPairs(ps []pair, m map[string]any) []pair {
	for k, v := range m {
		ps = append(ps, anyPair(k, v))
	}
	return ps
}

func sortPairs(ps []pair) {
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
}

// pairPool keeps the scratch lists the encoders and readers fill; a list
// past maxPairs is dropped.
var pairPool = sync.Pool{New: func() any { s := make([]pair, 0, 32); return &s }}

const maxPairs = 256

func getPairs() *[]pair { return pairPool.Get().(*[]pair) }

func putPairs(ps *[]pair) {
	if cap(*ps) > maxPairs {
		return
	}
	clear(*ps) // drop what the values point at (past len: cleared before)
	*ps = (*ps)[:0]
	pairPool.Put(ps)
}
