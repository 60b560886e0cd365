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

// fieldSet reads one event's fields: its map, or its typed payload's
// pairs, listed once (close gives the list back).
type fieldSet struct {
	data map[string]any
	ps   *[]pair // nil: data
}

func openFields(data map[string]any, p Payload) fieldSet {
	if pp, ok := p.(pairer); ok && data == nil {
		ps := getPairs()
		*ps = pp.pairs((*ps)[:0])
		return fieldSet{ps: ps}
	}
	return fieldSet{data: data}
}

func (f fieldSet) close() {
	if f.ps != nil {
		putPairs(f.ps)
	}
}

func (f fieldSet) find(k string) *pair {
	for i := range *f.ps {
		if (*f.ps)[i].key == k {
			return &(*f.ps)[i]
		}
	}
	return nil
}

// get returns field k as a map holds it.
func (f fieldSet) get(k string) (any, bool) {
	if f.ps == nil {
		v, ok := f.data[k]
		return v, ok
	}
	if p := f.find(k); p != nil {
		return p.value(), true
	}
	return nil, false
}

// str returns field k when it is a string, without boxing it.
func (f fieldSet) str(k string) string {
	if f.ps == nil {
		s, _ := f.data[k].(string)
		return s
	}
	if p := f.find(k); p != nil {
		if p.kind == kindString {
			return p.s
		}
		s, _ := p.v.(string)
		return s
	}
	return ""
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
