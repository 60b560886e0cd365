package sandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits that keep a hostile or careless schema from making the generator
// recurse forever or allocate without bound. Past them the output may be
// invalid, never a panic.
const (
	// Past softDepth objects get only their required properties and arrays
	// their minimum length, so that a recursive schema (a tree of nodes)
	// gives a small answer instead of one that doubles with every level.
	softDepth = 6
	maxDepth  = 32
	maxRefs   = 64
	maxItems  = 64
	maxLength = 4096
)

// Generate returns a value valid against schema, a decoded JSON Schema
// (draft 2020-12 or 07). Properties present in known (the entity's
// attributes) are echoed where their value fits; every other value is
// derived from a hash of seed, the property's path and known, so the same
// inputs always give the same value and another seed gives other values.
//
// Supported: type (and type arrays), enum, const, properties, required,
// additionalProperties, patternProperties, dependentRequired,
// min/maxProperties, items, prefixItems, min/maxItems,
// uniqueItems, contains, min/maxLength, pattern, format (date, date-time,
// time, email, uri, hostname, ipv4, ipv6, uuid), minimum, maximum,
// exclusive bounds, multipleOf, local $ref, allOf (merged), anyOf and oneOf
// (first non-null branch). not, if/then/else and dependent schemas are
// ignored.
func Generate(schema map[string]any, known map[string]any, seed string) any {
	g := newGen(schema, known, seed)
	return g.value(schema, "", "value", known, known != nil, 0)
}

type gen struct {
	root   map[string]any
	seed   string
	entity string
	res    map[string]*regexp.Regexp
}

func newGen(schema, known map[string]any, seed string) *gen {
	// encoding/json sorts map keys, so this is a canonical form of the
	// entity for hashing.
	e, _ := json.Marshal(known)
	return &gen{root: schema, seed: seed, entity: string(e), res: map[string]*regexp.Regexp{}}
}

// hash is the only source of variation.
func (g *gen) hash(path, salt string) uint64 {
	h := sha256.New()
	for _, s := range []string{g.seed, g.entity, path, salt} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// resolve follows local $refs and merges allOf, returning a schema object
// without either (nil for the false schema, an empty map for true or junk).
func (g *gen) resolve(node any) map[string]any {
	return g.resolveN(node, 0)
}

func (g *gen) resolveN(node any, n int) map[string]any {
	switch s := node.(type) {
	case bool:
		if !s {
			return nil
		}
		return map[string]any{}
	case map[string]any:
		if n > maxRefs {
			return map[string]any{}
		}
		out := s
		if ref, ok := s["$ref"].(string); ok {
			target := g.resolveN(g.pointer(ref), n+1)
			if target == nil {
				return nil
			}
			// In 2020-12 keywords beside $ref apply too; the local ones win.
			out = merge(target, without(s, "$ref"))
		}
		if all, ok := out["allOf"].([]any); ok {
			m := without(out, "allOf")
			for _, sub := range all {
				r := g.resolveN(sub, n+1)
				if r == nil {
					return nil
				}
				m = mergeAll(m, r)
			}
			out = m
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			if branches, ok := out[k].([]any); ok && len(branches) > 0 {
				pick := branches[0]
				for _, b := range branches {
					if r := g.resolveN(b, n+1); r != nil && !onlyNull(r) {
						pick = b
						break
					}
				}
				r := g.resolveN(pick, n+1)
				if r == nil {
					return nil
				}
				out = mergeAll(without(out, k), r)
			}
		}
		return out
	default:
		return map[string]any{}
	}
}

// pointer looks up a local reference ("#", "#/$defs/a", "#/definitions/a").
func (g *gen) pointer(ref string) any {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return map[string]any{}
	}
	var cur any = g.root
	if frag == "" {
		return cur
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return map[string]any{}
			}
			cur = c[i]
		default:
			return map[string]any{}
		}
	}
	if cur == nil {
		return map[string]any{}
	}
	return cur
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// merge returns base with over's keys replacing base's.
func merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// mergeAll combines two schemas that must both hold: properties and
// required are joined, types intersected, other keywords kept from a.
func mergeAll(a, b map[string]any) map[string]any {
	out := merge(b, a)
	pa, _ := a["properties"].(map[string]any)
	pb, _ := b["properties"].(map[string]any)
	if pa != nil || pb != nil {
		p := map[string]any{}
		for k, v := range pb {
			p[k] = v
		}
		for k, v := range pa {
			if w, ok := p[k]; ok {
				p[k] = map[string]any{"allOf": []any{v, w}}
			} else {
				p[k] = v
			}
		}
		out["properties"] = p
	}
	ra, _ := a["required"].([]any)
	rb, _ := b["required"].([]any)
	if ra != nil || rb != nil {
		out["required"] = append(append([]any{}, ra...), rb...)
	}
	ta, tb := types(a), types(b)
	if ta != nil && tb != nil {
		var both []any
		for _, t := range ta {
			for _, u := range tb {
				if t == u || (t == "integer" && u == "number") {
					both = append(both, t)
				} else if t == "number" && u == "integer" {
					both = append(both, u)
				}
			}
		}
		out["type"] = both
	}
	return out
}

func types(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, v := range t {
			if str, ok := v.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func onlyNull(s map[string]any) bool {
	t := types(s)
	if len(t) == 1 && t[0] == "null" {
		return true
	}
	c, ok := s["const"]
	return ok && c == nil
}

// value generates a value for node at path. known is the entity's value
// at the same place, if any (hasKnown).
func (g *gen) value(node any, path, label string, known any, hasKnown bool, depth int) any {
	s := g.resolve(node)
	if s == nil {
		return nil // false schema: nothing is valid
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		if hasKnown {
			for _, e := range enum {
				if sameJSON(e, known) {
					return e
				}
			}
		}
		// Prefer the values the schema's other keywords also accept
		// ("type": "string" beside a mixed enum, say).
		ok := enum[:0:0]
		for _, e := range enum {
			if g.admits(s, e) {
				ok = append(ok, e)
			}
		}
		if len(ok) == 0 {
			ok = enum
		}
		return ok[g.hash(path, "enum")%uint64(len(ok))]
	}
	ts := types(s)
	if ts == nil {
		ts = inferTypes(s, known, hasKnown)
	}
	t := g.pickType(s, ts, known, hasKnown)
	if depth >= maxDepth {
		return shallow(t)
	}
	switch t {
	case "null":
		return nil
	case "boolean":
		if hasKnown && fitsScalar(s, t, known, g) {
			return known
		}
		return g.hash(path, "bool")%2 == 0
	case "integer", "number":
		if hasKnown && fitsScalar(s, t, known, g) {
			return known
		}
		return g.number(s, path, label, t == "integer")
	case "string":
		if hasKnown && fitsScalar(s, t, known, g) {
			return known
		}
		return g.str(s, path, label)
	case "array":
		k, _ := known.([]any)
		return g.array(s, path, label, k, depth)
	default:
		k, _ := known.(map[string]any)
		return g.object(s, path, k, depth)
	}
}

func shallow(t string) any {
	switch t {
	case "null":
		return nil
	case "boolean":
		return false
	case "integer", "number":
		return 0.0
	case "string":
		return ""
	case "array":
		return []any{}
	}
	return map[string]any{}
}

// inferTypes guesses the type of a schema without "type" from its keywords.
func inferTypes(s map[string]any, known any, hasKnown bool) []string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := s[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties"):
		return []string{"object"}
	case has("items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"):
		return []string{"array"}
	case has("minLength", "maxLength", "pattern", "format"):
		return []string{"string"}
	case has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
		return []string{"number"}
	}
	if hasKnown {
		return []string{jsonType(known)}
	}
	return []string{"string"}
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "string"
}

// pickType chooses among a schema's types: the known value's type when it
// is allowed (so it can be echoed), else the first non-null type, so that
// nullable properties get a value rather than null.
func (g *gen) pickType(s map[string]any, ts []string, known any, hasKnown bool) string {
	if len(ts) == 0 {
		return "null" // "type": [] allows nothing; null is as good as any
	}
	if hasKnown {
		kt := jsonType(known)
		for _, t := range ts {
			if t == kt || (t == "number" && kt == "integer") {
				if kt == "null" {
					return "null"
				}
				if fitsScalar(s, t, known, g) || kt == "object" || kt == "array" {
					return t
				}
			}
		}
	}
	for _, t := range ts {
		if t != "null" {
			return t
		}
	}
	return ts[0]
}

func sameJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// admits reports whether v has one of s's types and, for a scalar, meets
// s's scalar keywords.
func (g *gen) admits(s map[string]any, v any) bool {
	ts := types(s)
	if ts == nil {
		return true
	}
	vt := jsonType(v)
	for _, t := range ts {
		if t == vt || (t == "number" && vt == "integer") {
			switch vt {
			case "object", "array", "null":
				return true
			}
			return fitsScalar(s, t, v, g)
		}
	}
	return false
}

// fitsScalar reports whether a known scalar satisfies s's scalar keywords.
func fitsScalar(s map[string]any, t string, v any, g *gen) bool {
	switch t {
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer", "number":
		f, ok := num(v)
		if !ok || (t == "integer" && f != math.Trunc(f)) {
			return false
		}
		lo, loEx, hi, hiEx := bounds(s)
		if f < lo || f > hi || (loEx && f == lo) || (hiEx && f == hi) {
			return false
		}
		if m, ok := num(s["multipleOf"]); ok && m > 0 {
			q := f / m
			return math.Abs(q-math.Round(q)) < 1e-9
		}
		return true
	case "string":
		str, ok := v.(string)
		return ok && g.stringFits(s, str)
	}
	return false
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil && !math.IsInf(f, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func count(v any) (int, bool) {
	f, ok := num(v)
	if !ok || f < 0 {
		return 0, false
	}
	if f > 1<<30 {
		return 1 << 30, true
	}
	return int(math.Ceil(f)), true
}

// bounds reads the numeric range, accepting draft-04's boolean exclusives.
func bounds(s map[string]any) (lo float64, loEx bool, hi float64, hiEx bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if v, ok := num(s["minimum"]); ok {
		lo = v
	}
	if v, ok := num(s["maximum"]); ok {
		hi = v
	}
	switch v := s["exclusiveMinimum"].(type) {
	case bool:
		loEx = v
	default:
		if f, ok := num(v); ok && f >= lo {
			lo, loEx = f, true
		}
	}
	switch v := s["exclusiveMaximum"].(type) {
	case bool:
		hiEx = v
	default:
		if f, ok := num(v); ok && f <= hi {
			hi, hiEx = f, true
		}
	}
	return lo, loEx, hi, hiEx
}

func (g *gen) number(s map[string]any, path, label string, integer bool) float64 {
	lo, loEx, hi, hiEx := bounds(s)
	h := g.hash(path, "number")
	// Without bounds, pick from a range that reads like data.
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		lo, hi = 1, 1000
		if strings.Contains(strings.ToLower(label), "year") {
			lo, hi = 1950, 2024
		}
	case math.IsInf(lo, -1):
		lo = hi - 1000
	case math.IsInf(hi, 1):
		hi = lo + 1000
	}
	if m, ok := num(s["multipleOf"]); ok && m > 0 {
		kmin, kmax := math.Ceil(lo/m), math.Floor(hi/m)
		if loEx && kmin*m <= lo {
			kmin++
		}
		if hiEx && kmax*m >= hi {
			kmax--
		}
		k := kmin
		if span := kmax - kmin; span > 0 {
			k += float64(h % uint64(math.Min(span, 1e9)+1))
		}
		return decimalRound(k*m, m)
	}
	if integer {
		a, b := math.Ceil(lo), math.Floor(hi)
		if loEx && a <= lo {
			a++
		}
		if hiEx && b >= hi {
			b--
		}
		if b <= a {
			return finite(a)
		}
		return finite(a + float64(h%uint64(math.Min(b-a, 1e9)+1)))
	}
	frac := float64(h%10000) / 10000
	v := math.Round((lo+frac*(hi-lo))*100) / 100
	if v < lo || v > hi || (loEx && v <= lo) || (hiEx && v >= hi) {
		v = lo + (hi-lo)/2
	}
	return finite(v)
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// decimalRound removes the binary noise of k*m (3*0.1) so that the value
// prints as the decimal multiple the validator checks for.
func decimalRound(v, m float64) float64 {
	ms := strconv.FormatFloat(m, 'f', -1, 64)
	dec := 0
	if i := strings.IndexByte(ms, '.'); i >= 0 {
		dec = len(ms) - i - 1
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', min(dec, 15), 64), 64)
	if err != nil {
		return finite(v)
	}
	return finite(r)
}

var words = []string{
	"Amber", "Birch", "Cobalt", "Delta", "Ember", "Fjord", "Garnet", "Harbor",
	"Indigo", "Juniper", "Kestrel", "Lumen", "Meridian", "Nimbus", "Onyx", "Pine",
	"Quartz", "Raven", "Sierra", "Tundra", "Umber", "Vertex", "Willow", "Xenon",
	"Yarrow", "Zephyr", "Atlas", "Beacon", "Cedar", "Dune", "Echo", "Flint",
}

func (g *gen) str(s map[string]any, path, label string) string {
	h := g.hash(path, "string")
	var cand string
	format, _ := s["format"].(string)
	switch format {
	case "date":
		cand = g.date(h).Format("2006-01-02")
	case "date-time":
		cand = g.date(h).Add(time.Duration(h>>20%86400) * time.Second).Format(time.RFC3339)
	case "time":
		cand = time.Unix(int64(h>>20%86400), 0).UTC().Format("15:04:05") + "Z"
	case "email", "idn-email":
		cand = fmt.Sprintf("contact.%04x@example.com", h&0xffff)
	case "uri", "url", "iri", "uri-reference", "iri-reference":
		cand = fmt.Sprintf("https://example.com/%s/%04x", slug(label), h&0xffff)
	case "hostname", "idn-hostname":
		cand = fmt.Sprintf("%s-%04x.example.com", slug(label), h&0xffff)
	case "ipv4":
		cand = fmt.Sprintf("192.0.2.%d", h%254+1)
	case "ipv6":
		cand = fmt.Sprintf("2001:db8::%x", h&0xffff)
	case "uuid":
		b := fmt.Sprintf("%016x%016x", h, g.hash(path, "uuid"))
		cand = b[:8] + "-" + b[8:12] + "-4" + b[13:16] + "-8" + b[17:20] + "-" + b[20:32]
	case "duration":
		cand = fmt.Sprintf("P%dD", h%30+1)
	default:
		cand = fmt.Sprintf("%s %s %d", words[h%uint64(len(words))], humanize(label), h>>8%100)
	}
	if g.stringFits(s, cand) {
		return cand
	}
	minL, _ := count(s["minLength"])
	maxL, hasMax := count(s["maxLength"])
	minL = min(minL, maxLength)
	if !hasMax || maxL > maxLength {
		maxL = max(maxLength, minL)
	}
	if p, ok := s["pattern"].(string); ok {
		if re := g.regexp(p); re != nil {
			for _, reps := range []int{0, 1, 2, 3, 5, 8, minL} {
				if out, ok := fromRegexp(p, reps); ok && re.MatchString(out) && g.stringFits(s, out) {
					return out
				}
			}
		}
	}
	return fitLength(cand, minL, maxL)
}

func (g *gen) date(h uint64) time.Time {
	return time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(h%(75*365)))
}

func (g *gen) regexp(p string) *regexp.Regexp {
	if re, ok := g.res[p]; ok {
		return re
	}
	re, _ := regexp.Compile(p)
	g.res[p] = re
	return re
}

func (g *gen) stringFits(s map[string]any, str string) bool {
	n := utf8.RuneCountInString(str)
	if m, ok := count(s["minLength"]); ok && n < m {
		return false
	}
	if m, ok := count(s["maxLength"]); ok && n > m {
		return false
	}
	if p, ok := s["pattern"].(string); ok {
		re := g.regexp(p)
		if re == nil || !re.MatchString(str) {
			return false
		}
	}
	return true
}

func fitLength(s string, minL, maxL int) string {
	r := []rune(s)
	if len(r) > maxL {
		r = []rune(strings.TrimRight(string(r[:maxL]), " "))
	}
	for len(r) < minL {
		r = append(r, 'x')
	}
	return string(r)
}

func humanize(label string) string {
	return strings.Join(strings.FieldsFunc(label, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }), " ")
}

func slug(label string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(label) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			sb.WriteRune(r)
		} else if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "-") {
			sb.WriteByte('-')
		}
	}
	out := strings.Trim(sb.String(), "-")
	if out == "" {
		return "item"
	}
	return out
}

// object generates an object for s: its declared properties, then those
// that required, dependentRequired and minProperties call for, trimmed to
// maxProperties.
func (g *gen) object(s map[string]any, path string, known map[string]any, depth int) map[string]any {
	o := objectGen{g: g, s: s, path: path, known: known, depth: depth, out: map[string]any{}}
	o.props, _ = s["properties"].(map[string]any)
	o.declared()
	required := stringsOf(s["required"])
	for _, k := range required {
		o.add(k)
	}
	o.dependentRequired()
	if minP, ok := count(s["minProperties"]); ok && s["additionalProperties"] != false {
		for i := 1; len(o.out) < min(minP, maxItems) && i <= maxItems; i++ {
			o.add(fmt.Sprintf("extra_%d", i))
		}
	}
	if maxP, ok := count(s["maxProperties"]); ok {
		trimProperties(o.out, maxP, required)
	}
	return o.out
}

// objectGen is one object being generated.
type objectGen struct {
	g        *gen
	s, props map[string]any
	path     string
	known    map[string]any
	depth    int
	out      map[string]any
}

// declared generates the declared properties in name order; beyond
// softDepth only those the known value holds, so that deep schemas end.
func (o *objectGen) declared() {
	for _, k := range sortedKeys(o.props) {
		kv, ok := lookup(o.known, k)
		if o.depth >= softDepth && !ok {
			continue // required ones are added after
		}
		o.out[k] = o.g.value(o.props[k], o.path+"/"+escape(k), k, kv, ok, o.depth+1)
	}
}

// add generates property k unless it is there already, from its declared
// schema, else the first matching patternProperties, else
// additionalProperties (else anything).
func (o *objectGen) add(k string) {
	if _, done := o.out[k]; done {
		return
	}
	sub := o.s["additionalProperties"]
	if p, ok := o.props[k]; ok {
		sub = p
	} else if pp, ok := o.s["patternProperties"].(map[string]any); ok {
		for _, p := range sortedKeys(pp) {
			if re := o.g.regexp(p); re != nil && re.MatchString(k) {
				sub = pp[p]
				break
			}
		}
	}
	if sub == nil {
		sub = map[string]any{}
	}
	kv, ok := lookup(o.known, k)
	o.out[k] = o.g.value(sub, o.path+"/"+escape(k), k, kv, ok, o.depth+1)
}

// dependentRequired adds the properties that present ones require.
func (o *objectGen) dependentRequired() {
	dr, _ := o.s["dependentRequired"].(map[string]any)
	for _, trig := range sortedKeys(dr) {
		if _, present := o.out[trig]; !present {
			continue
		}
		for _, k := range stringsOf(dr[trig]) {
			o.add(k)
		}
	}
}

// trimProperties drops properties from the end of name order, never a
// required one, until out has at most maxP.
func trimProperties(out map[string]any, maxP int, required []string) {
	if len(out) <= maxP {
		return
	}
	keep := map[string]bool{}
	for _, k := range required {
		keep[k] = true
	}
	keys := sortedKeys(out)
	for i := len(keys) - 1; i >= 0 && len(out) > maxP; i-- {
		if !keep[keys[i]] {
			delete(out, keys[i])
		}
	}
}

// stringsOf is the strings of a JSON array (nil when v is not one).
func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func lookup(known map[string]any, k string) (any, bool) {
	if known == nil {
		return nil, false
	}
	if v, ok := known[k]; ok {
		return v, true
	}
	nk := normalize(k)
	for _, kk := range sortedKeys(known) {
		if normalize(kk) == nk {
			return known[kk], true
		}
	}
	return nil, false
}

func normalize(s string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(s) {
		if r != '_' && r != '-' && r != ' ' && r != '.' {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func (g *gen) array(s map[string]any, path, label string, known []any, depth int) []any {
	var prefix []any
	if p, ok := s["prefixItems"].([]any); ok {
		prefix = p
	} else if p, ok := s["items"].([]any); ok { // draft-07 tuple form
		prefix = p
	}
	items := s["items"]
	if _, tuple := items.([]any); tuple {
		items = s["additionalItems"]
	}
	n := 1 + int(g.hash(path, "len")%2)
	if depth >= softDepth {
		n = 0
	}
	if known != nil {
		n = len(known)
	}
	minI, _ := count(s["minItems"])
	maxI, hasMax := count(s["maxItems"])
	if !hasMax || maxI > maxItems {
		maxI = maxItems
	}
	if items == false {
		maxI = min(maxI, len(prefix))
	}
	n = min(max(n, minI), maxI)
	unique, _ := s["uniqueItems"].(bool)
	out := make([]any, 0, n)
	seen := map[string]bool{}
	for i := 0; len(out) < n && i < n+maxItems; i++ {
		var sub any = items
		if i < len(prefix) {
			sub = prefix[i]
		}
		if i == 0 && s["contains"] != nil && len(prefix) == 0 {
			sub = map[string]any{"allOf": []any{orEmpty(items), s["contains"]}}
		}
		if sub == nil {
			sub = map[string]any{}
		}
		var kv any
		hasKV := i < len(known)
		if hasKV {
			kv = known[i]
		}
		v := g.value(sub, path+"/"+strconv.Itoa(i), label, kv, hasKV, depth+1)
		if unique && i >= len(prefix) {
			b, _ := json.Marshal(v)
			if seen[string(b)] {
				continue
			}
			seen[string(b)] = true
		}
		out = append(out, v)
	}
	return out
}

func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}
