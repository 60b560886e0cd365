// Package fusion merges the answers several models gave for one entity,
// field by field, with provenance: the reference product's rule-based
// fusion (REFERENCE.md §4). It is pure: values are decoded JSON (maps,
// slices, strings, float64, bools, nil).
//
// Detection: scalars agree when they match after trimming, lowercasing and
// rounding numbers to Precision decimals; arrays are compared as sets,
// objects recursively; null counts as missing. A multilingual field (an
// object keyed by language codes) is compared per language, and when only
// the translations differ (the primary language agrees) it counts as
// agreement.
//
// Resolution: strings by majority (a tie goes to the longest), numbers by
// median, booleans by majority (true wins a tie), arrays by union, objects
// recursively, a value beats null; the remaining ties go to the model with
// the higher output price, then the higher input price, then the
// alphabetically first key. Candidates are put in that order first, so the
// order in which they are given never changes the result.
package fusion

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Precision is the number of decimals numbers are rounded to before they
// are compared: 2, so 3.14159 and 3.14 agree, 3.14 and 3.15 do not.
const Precision = 2

// WildRatio is the spread past which disagreeing numbers are escalated to
// an arbiter even without one requested: the largest absolute value is more
// than WildRatio times the smallest, both non-zero (or their signs differ).
const WildRatio = 10

// Methods of a fusion.
const (
	MethodRuleBased = "rule_based"
	MethodLLM       = "llm"
)

// Field types of a conflict (the reference's FieldConflict.field_type).
const (
	TypeScalar       = "scalar"
	TypeArray        = "array"
	TypeObject       = "object"
	TypeMultilingual = "multilingual"
)

// Value types of a scalar conflict (Conflict.ValueType, ours).
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeMixed   = "mixed"
)

// Candidate is one model's answer.
type Candidate struct {
	// Model is the model's composite key.
	Model string
	// Value is the model's answer (a JSON object).
	Value map[string]any
	// OutputPrice and InputPrice break the remaining ties (higher wins).
	OutputPrice, InputPrice int64
}

// Options tunes a fusion.
type Options struct {
	// Schema is the (localized) JSON Schema of the answers: it says which
	// properties are multilingual ("multilingual" or "x-multilingual") and
	// which numbers are integers. Nil: none and none.
	Schema map[string]any
	// Primary is the primary language of multilingual fields ("en" when
	// empty).
	Primary string
}

// Provenance says where a field's value came from.
type Provenance struct {
	// Models are the keys of the models whose value was chosen, sorted.
	Models []string `json:"models"`
	// Arbitrated is true when an arbiter chose the value.
	Arbitrated bool `json:"arbitrated"`
}

// Conflict is a field on which the models disagree.
type Conflict struct {
	Path string `json:"path"`
	// FieldType is scalar, multilingual, array or object; ValueType is a
	// scalar's kind: string, number, boolean or mixed (different kinds).
	FieldType string `json:"field_type"`
	ValueType string `json:"value_type,omitempty"`
	// ValuesByModel is every model's value (null when it gave none).
	ValuesByModel map[string]any `json:"values_by_model"`
	// NeedsArbitration is true when the models genuinely disagree
	// (translation-only variance does not).
	NeedsArbitration bool `json:"needs_arbitration"`
	TranslationOnly  bool `json:"translation_only"`
	// Resolved is the value the rules chose.
	Resolved any `json:"resolved_value"`
	// Wild is true for numbers that disagree past WildRatio.
	Wild bool `json:"wild,omitempty"`

	segs []string
}

// Segments returns the path's keys.
func (c Conflict) Segments() []string { return c.segs }

// Report is the conflict report.
type Report struct {
	Conflicts        []Conflict `json:"conflicts"`
	AgreedFields     int        `json:"agreed_fields"`
	ConflictedFields int        `json:"conflicted_fields"`
	TotalFields      int        `json:"total_fields"`
}

// Summary is the reference's fusion block.
type Summary struct {
	AgreedFields     int    `json:"agreed_fields"`
	ConflictedFields int    `json:"conflicted_fields"`
	TotalFields      int    `json:"total_fields"`
	Method           string `json:"method"`
	ArbitrationModel string `json:"arbitration_model"`
}

// Result is a fusion.
type Result struct {
	Merged map[string]any
	// Provenance maps each field path (keys joined by ".") to its origin.
	Provenance map[string]Provenance
	Report     Report
	Summary    Summary
}

// MetadataKey is the block that the merged result carries where clients
// of the reference read it (fusion_completed's merged_result and the
// merge's answer): how the conflicts were resolved (method) and the
// arbiter whose decisions were applied or which was asked
// (arbitration_model, null for none), as in the Summary. Clients delete it
// from their output, so the clean output (the fused record, the job's
// result) never holds it.
const MetadataKey = "_arbitration_metadata"

// Annotated returns a copy of r.Merged with the MetadataKey block. r.Merged
// is left clean.
func (r Result) Annotated() map[string]any {
	out := make(map[string]any, len(r.Merged)+1)
	for k, v := range r.Merged {
		out[k] = v
	}
	var arbiter any
	if r.Summary.ArbitrationModel != "" {
		arbiter = r.Summary.ArbitrationModel
	}
	out[MetadataKey] = map[string]any{"method": r.Summary.Method, "arbitration_model": arbiter}
	return out
}

// Fuse merges the candidates' answers by the rules.
func Fuse(cands []Candidate, opt Options) Result {
	cs := Ordered(cands)
	if opt.Primary == "" {
		opt.Primary = "en"
	}
	f := &fuser{cands: cs, opt: opt, prov: map[string]Provenance{}}
	vals := make([]any, len(cs))
	present := false
	for i, c := range cs {
		if c.Value != nil {
			vals[i] = c.Value
			present = true
		}
	}
	merged := map[string]any{}
	if present {
		merged, _ = f.object(nil, vals, opt.Schema).(map[string]any)
	}
	r := Result{Merged: merged, Provenance: f.prov, Report: f.report}
	if r.Report.Conflicts == nil {
		r.Report.Conflicts = []Conflict{}
	}
	r.Summary = Summary{AgreedFields: r.Report.AgreedFields, ConflictedFields: r.Report.ConflictedFields,
		TotalFields: r.Report.TotalFields, Method: MethodRuleBased}
	return r
}

// Ordered returns the candidates in tie-break order: higher output price,
// then higher input price, then key.
func Ordered(cands []Candidate) []Candidate {
	cs := append([]Candidate(nil), cands...)
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.OutputPrice != b.OutputPrice {
			return a.OutputPrice > b.OutputPrice
		}
		if a.InputPrice != b.InputPrice {
			return a.InputPrice > b.InputPrice
		}
		return a.Model < b.Model
	})
	return cs
}

type fuser struct {
	cands  []Candidate
	opt    Options
	prov   map[string]Provenance
	report Report
}

func join(segs []string) string { return strings.Join(segs, ".") }

// object merges the values at path, all maps or nil.
func (f *fuser) object(segs []string, vals []any, schema map[string]any) any {
	keys := map[string]bool{}
	anyKey := false
	for _, v := range vals {
		m, _ := v.(map[string]any)
		for k := range m {
			keys[k] = true
			anyKey = true
		}
	}
	out := map[string]any{}
	if !anyKey {
		return out
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		sub := make([]any, len(vals))
		has := false
		for i, v := range vals {
			if m, ok := v.(map[string]any); ok {
				if x, ok := m[k]; ok {
					has = true
					sub[i] = x
				}
			}
		}
		if !has {
			continue
		}
		out[k] = f.field(append(append([]string(nil), segs...), k), sub, property(schema, k, f.opt.Schema))
	}
	return out
}

// field merges one field's values (nil: missing or null).
func (f *fuser) field(segs []string, vals []any, schema map[string]any) any {
	var idx []int
	for i, v := range vals {
		if v != nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		f.agreed(segs, nil)
		return nil
	}
	allObj, allArr := true, true
	for _, i := range idx {
		if _, ok := vals[i].(map[string]any); !ok {
			allObj = false
		}
		if _, ok := vals[i].([]any); !ok {
			allArr = false
		}
	}
	switch {
	case allObj && multilingual(schema):
		return f.multilingual(segs, vals, idx)
	case allObj:
		return f.object(segs, vals, schema)
	case allArr:
		return f.array(segs, vals, idx, schema)
	}
	// Scalars (or a mix of kinds).
	groups := f.groups(vals, idx)
	if len(groups) == 1 {
		f.agreed(segs, groups[0].models)
		return vals[groups[0].first]
	}
	kind := kindOf(vals, idx)
	var g group
	var v any
	switch kind {
	case TypeString:
		g = f.majority(groups, func(a, b group) bool {
			return utf8.RuneCountInString(strings.TrimSpace(vals[a.first].(string))) > utf8.RuneCountInString(strings.TrimSpace(vals[b.first].(string)))
		})
		v = vals[g.first]
	case TypeBoolean:
		g = f.majority(groups, func(a, b group) bool { return vals[a.first] == true && vals[b.first] != true })
		v = vals[g.first]
	case TypeNumber:
		v, g = f.median(vals, idx, groups, integer(schema))
	default:
		g = f.majority(groups, func(group, group) bool { return false })
		v = vals[g.first]
	}
	c := f.conflict(segs, TypeScalar, vals, v)
	c.ValueType = kind
	if kind == TypeNumber {
		c.Wild = wild(vals, idx)
	}
	f.add(c, g.models)
	return v
}

// group is the candidates that agree on a value.
type group struct {
	key    string
	first  int // index of the first candidate (tie-break order) in it
	models []string
	n      int
}

func (f *fuser) groups(vals []any, idx []int) []group {
	var gs []group
	at := map[string]int{}
	for _, i := range idx {
		k := Key(vals[i])
		j, ok := at[k]
		if !ok {
			j = len(gs)
			at[k] = j
			gs = append(gs, group{key: k, first: i})
		}
		gs[j].models = append(gs[j].models, f.cands[i].Model)
		gs[j].n++
	}
	for i := range gs {
		sort.Strings(gs[i].models)
	}
	return gs
}

// majority picks the largest group; among equals better decides, then the
// tie-break order (groups are in the order of their first candidate).
func (f *fuser) majority(gs []group, better func(a, b group) bool) group {
	best := gs[0]
	for _, g := range gs[1:] {
		if g.n > best.n || (g.n == best.n && better(g, best)) {
			best = g
		}
	}
	return best
}

// median picks the median of the numbers: the middle value, or for an even
// count the mean of the two middle ones; for an integer field whose mean
// is fractional, the middle value of the candidate first in tie-break
// order.
func (f *fuser) median(vals []any, idx []int, gs []group, isInt bool) (any, group) {
	type num struct {
		x float64
		i int
	}
	var ns []num
	for _, i := range idx {
		x, ok := vals[i].(float64)
		if !ok {
			g := f.majority(gs, func(group, group) bool { return false })
			return vals[g.first], g
		}
		ns = append(ns, num{x, i})
	}
	// Ties in value keep tie-break order.
	sort.SliceStable(ns, func(a, b int) bool { return ns[a].x < ns[b].x })
	groupOf := func(i int) group {
		k := Key(vals[i])
		for _, g := range gs {
			if g.key == k {
				return g
			}
		}
		return gs[0]
	}
	n := len(ns)
	if n%2 == 1 {
		g := groupOf(ns[n/2].i)
		return vals[g.first], g
	}
	lo, hi := ns[n/2-1], ns[n/2]
	glo, ghi := groupOf(lo.i), groupOf(hi.i)
	if glo.key == ghi.key {
		return vals[glo.first], glo
	}
	mean := (lo.x + hi.x) / 2
	if isInt && mean != math.Trunc(mean) {
		if glo.first < ghi.first {
			return vals[glo.first], glo
		}
		return vals[ghi.first], ghi
	}
	both := group{key: Key(mean), first: min(glo.first, ghi.first), n: glo.n + ghi.n,
		models: append(append([]string(nil), glo.models...), ghi.models...)}
	sort.Strings(both.models)
	return mean, both
}

// array merges arrays: equal as sets, the value of the first candidate;
// otherwise the union, in tie-break order, each element once.
func (f *fuser) array(segs []string, vals []any, idx []int, schema map[string]any) any {
	gs := f.groups(vals, idx)
	if len(gs) == 1 {
		f.agreed(segs, gs[0].models)
		return vals[gs[0].first]
	}
	seen := map[string]bool{}
	var out []any
	var models []string
	for n, i := range idx {
		arr := vals[i].([]any)
		for _, e := range arr {
			k := Key(e)
			if n == 0 || !seen[k] {
				out = append(out, e)
			}
			seen[k] = true
		}
		if len(arr) > 0 {
			models = append(models, f.cands[i].Model)
		}
	}
	if mx, ok := schema["maxItems"].(float64); ok && len(out) > int(mx) {
		out = out[:int(mx)]
	}
	if out == nil {
		out = []any{}
	}
	sort.Strings(models)
	f.add(f.conflict(segs, TypeArray, vals, out), models)
	return out
}

// multilingual merges a field keyed by language: per language by the
// string rules; translation-only variance counts as agreement.
func (f *fuser) multilingual(segs []string, vals []any, idx []int) any {
	gs := f.groups(vals, idx)
	if len(gs) == 1 {
		f.agreed(segs, gs[0].models)
		return vals[gs[0].first]
	}
	langs := map[string]bool{}
	for _, i := range idx {
		for l := range vals[i].(map[string]any) {
			langs[l] = true
		}
	}
	names := make([]string, 0, len(langs))
	for l := range langs {
		names = append(names, l)
	}
	sort.Strings(names)
	out := map[string]any{}
	sub := &fuser{cands: f.cands, opt: f.opt, prov: map[string]Provenance{}}
	for _, l := range names {
		lv := make([]any, len(vals))
		for _, i := range idx {
			lv[i] = vals[i].(map[string]any)[l]
		}
		out[l] = sub.field(append(append([]string(nil), segs...), l), lv, nil)
	}
	for k, p := range sub.prov {
		f.prov[k] = p
	}
	primary := sub.prov[join(append(append([]string(nil), segs...), f.opt.Primary))]
	pvals := make([]any, len(vals))
	for _, i := range idx {
		pvals[i] = vals[i].(map[string]any)[f.opt.Primary]
	}
	primaryAgrees := len(f.groups(pvals, nonNil(pvals))) <= 1
	c := f.conflict(segs, TypeMultilingual, vals, out)
	c.TranslationOnly = primaryAgrees
	c.NeedsArbitration = !primaryAgrees
	models := primary.Models
	if models == nil {
		models = allModels(f.cands, idx)
	}
	f.report.Conflicts = append(f.report.Conflicts, c)
	f.report.TotalFields++
	if primaryAgrees {
		f.report.AgreedFields++
	} else {
		f.report.ConflictedFields++
	}
	f.prov[join(segs)] = Provenance{Models: models}
	return out
}

func nonNil(vals []any) []int {
	var idx []int
	for i, v := range vals {
		if v != nil {
			idx = append(idx, i)
		}
	}
	return idx
}

func allModels(cs []Candidate, idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, cs[i].Model)
	}
	sort.Strings(out)
	return out
}

func (f *fuser) agreed(segs []string, models []string) {
	f.report.TotalFields++
	f.report.AgreedFields++
	if models == nil {
		models = []string{}
	}
	f.prov[join(segs)] = Provenance{Models: models}
}

func (f *fuser) conflict(segs []string, kind string, vals []any, resolved any) Conflict {
	by := make(map[string]any, len(f.cands))
	for i, c := range f.cands {
		by[c.Model] = vals[i]
	}
	return Conflict{Path: join(segs), FieldType: kind, ValuesByModel: by, NeedsArbitration: true, Resolved: resolved,
		segs: append([]string(nil), segs...)}
}

func (f *fuser) add(c Conflict, models []string) {
	f.report.Conflicts = append(f.report.Conflicts, c)
	f.report.TotalFields++
	f.report.ConflictedFields++
	f.prov[c.Path] = Provenance{Models: models}
}

func kindOf(vals []any, idx []int) string {
	kind := ""
	for _, i := range idx {
		var k string
		switch vals[i].(type) {
		case string:
			k = TypeString
		case float64:
			k = TypeNumber
		case bool:
			k = TypeBoolean
		default:
			k = TypeMixed
		}
		if kind == "" {
			kind = k
		} else if kind != k {
			return TypeMixed
		}
	}
	return kind
}

// wild reports numbers that disagree past WildRatio.
func wild(vals []any, idx []int) bool {
	lo, hi := math.Inf(1), 0.0
	pos, neg := false, false
	for _, i := range idx {
		x, ok := vals[i].(float64)
		if !ok {
			return false
		}
		if x == 0 {
			continue
		}
		if x > 0 {
			pos = true
		} else {
			neg = true
		}
		a := math.Abs(x)
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	if pos && neg {
		return true
	}
	return hi > 0 && lo > 0 && hi/lo > WildRatio
}

// Key is a value's normal form for comparison: strings trimmed and
// lowercased, numbers rounded to Precision decimals, arrays as sets,
// objects by key, null members dropped.
func Key(v any) string {
	b, _ := json.Marshal(normal(v))
	return string(b)
}

func normal(v any) any {
	switch x := v.(type) {
	case string:
		return "s:" + strings.ToLower(strings.TrimSpace(x))
	case float64:
		p := math.Pow(10, Precision)
		r := math.Round(x*p) / p
		if r == 0 {
			r = 0 // no negative zero
		}
		return r
	case []any:
		seen := map[string]bool{}
		var ks []string
		for _, e := range x {
			k := Key(e)
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		return map[string]any{"set": ks}
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out["k:"+k] = normal(e)
			}
		}
		return out
	}
	return v
}

// property returns the schema of an object's property (nil when unknown),
// following one local $ref.
func property(schema map[string]any, name string, root map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	p, _ := props[name].(map[string]any)
	return deref(p, root)
}

func deref(p, root map[string]any) map[string]any {
	ref, _ := p["$ref"].(string)
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
			if d, ok := defs[name].(map[string]any); ok {
				return d
			}
		}
	}
	return p
}

func multilingual(schema map[string]any) bool {
	a, _ := schema["multilingual"].(bool)
	b, _ := schema["x-multilingual"].(bool)
	return a || b
}

// integer reports a schema whose numbers must be integers.
func integer(schema map[string]any) bool {
	switch t := schema["type"].(type) {
	case string:
		return t == "integer"
	case []any:
		for _, e := range t {
			if e == "integer" {
				return true
			}
		}
	}
	return false
}

// MarshalJSON writes arbitration_model as null when no arbiter ran.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	var arb any
	if s.ArbitrationModel != "" {
		arb = s.ArbitrationModel
	}
	return json.Marshal(struct {
		plain
		ArbitrationModel any `json:"arbitration_model"`
	}{plain(s), arb})
}
