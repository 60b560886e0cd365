package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Limits of a sample set (schema generation, the conformance check).
const (
	MaxSamples = 50
	// DefaultCommonalityThreshold is the share of the combined top-level
	// field set every sample must cover (the reference's default).
	DefaultCommonalityThreshold = 0.5
	// MaxExamples bounds the distinct observed values kept as a property's
	// examples.
	MaxExamples = 5
	// maxExampleLen bounds one string example (longer values are free text,
	// not examples).
	maxExampleLen = 200
)

// Sentinels of the checks made on samples before any model is called.
var (
	// ErrSampleCommonality: the samples do not describe one entity type.
	ErrSampleCommonality = errors.New("the samples do not describe one entity type")
	// ErrSampleConformance: array items in the samples share no field.
	ErrSampleConformance = errors.New("array items of the samples share no field")
)

// ParseSamples reads entity_samples: a JSON array of objects or one bare
// object. Each sample must be a non-empty object.
func ParseSamples(raw json.RawMessage) ([]map[string]any, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("entity_samples", "entity_samples is required: one or more sample objects of the same entity type")
	}
	var list []json.RawMessage
	if raw[0] == '{' {
		list = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid("entity_samples", "entity_samples must be an array of objects (or one object)")
	}
	if len(list) == 0 {
		return nil, invalid("entity_samples", "entity_samples must hold at least one sample")
	}
	if len(list) > MaxSamples {
		return nil, invalid("entity_samples", "entity_samples holds %d samples; at most %d", len(list), MaxSamples)
	}
	out := make([]map[string]any, 0, len(list))
	for i, r := range list {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(r)))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil || m == nil {
			return nil, invalid(fmt.Sprintf("entity_samples.%d", i), "entity_samples.%d must be a JSON object", i)
		}
		if len(m) == 0 {
			return nil, invalid(fmt.Sprintf("entity_samples.%d", i), "entity_samples.%d is an empty object", i)
		}
		out = append(out, m)
	}
	return out, nil
}

// languageCode matches an ISO 639-1 code, optionally with a region
// (en, fr, pt-BR).
var languageCode = regexp.MustCompile(`^[a-z]{2}(-[A-Z]{2})?$`)

// localized reports whether v is a language map: an object of at least two
// language-code keys whose values are all strings or null.
func localized(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) < 2 {
		return nil, false
	}
	for k, x := range m {
		if !languageCode.MatchString(k) {
			return nil, false
		}
		if _, s := x.(string); !s && x != nil {
			return nil, false
		}
	}
	return m, true
}

// Collapsed is a sample set with its language maps collapsed.
type Collapsed struct {
	Samples []map[string]any
	// Localized are the paths (see Paths) whose values were language maps:
	// the generated schema marks them multilingual.
	Localized []string
}

// CollapseLocalized replaces every language map in the samples
// ({"en": "Anvils", "fr": "Enclumes"}) by one of its values (English when
// present, else the first language in code order), so that the model sees
// one value per field, and reports where it did. The samples are not
// changed.
func CollapseLocalized(samples []map[string]any) Collapsed {
	seen := map[string]bool{}
	var walk func(v any, path string) any
	walk = func(v any, path string) any {
		if m, ok := localized(v); ok {
			seen[path] = true
			if s, ok := m["en"]; ok && s != nil {
				return s
			}
			keys := sortedKeys(m)
			for _, k := range keys {
				if m[k] != nil {
					return m[k]
				}
			}
			return nil
		}
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, join(path, k))
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, path+"[]")
			}
			return out
		}
		return v
	}
	c := Collapsed{Samples: make([]map[string]any, len(samples))}
	for i, s := range samples {
		// A sample itself is an entity, never a language map, whatever its
		// keys look like ({"en": "...", "fr": "..."} is two fields).
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = walk(v, k)
		}
		c.Samples[i] = out
	}
	for p := range seen {
		c.Localized = append(c.Localized, p)
	}
	sort.Strings(c.Localized)
	return c
}

// join appends a property name to a dotted path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Site is one parent-object site of the samples: the root entity (path
// ""), a nested object ("headquarters") or the items of an array of
// objects ("offices[]"), and how the field sets observed there agree.
type Site struct {
	Path      string `json:"path"`
	ArrayItem bool   `json:"array_item"`
	// Observations counts the objects seen at the site.
	Observations int `json:"observations"`
	// AlwaysPresent are the fields every observation has; Drifting the
	// others.
	AlwaysPresent []string `json:"always_present"`
	Drifting      []string `json:"drifting"`
	// Shapes are the distinct field sets observed, each sorted.
	Shapes [][]string `json:"shapes"`
	// Fatal: an array-item site with several observations that share no
	// field (a field renamed between items leaves nothing to identify them).
	Fatal bool `json:"fatal"`
}

// Conformance is the verdict of the checks made on samples before any
// spend (the reference's SampleConformanceResponse).
type Conformance struct {
	OK bool `json:"ok"`
	// CommonalityErrors say which samples share too few top-level fields
	// with the others; Errors which array-item sites share no field (when
	// strict).
	CommonalityErrors []string `json:"commonality_errors"`
	Errors            []string `json:"errors"`
	Sites             []Site   `json:"sites"`
}

// Err returns the verdict as an error: ErrSampleCommonality or
// ErrSampleConformance wrapped with the first problems, or nil when OK.
func (c Conformance) Err() error {
	switch {
	case len(c.CommonalityErrors) > 0:
		return fmt.Errorf("%w: %s", ErrSampleCommonality, strings.Join(c.CommonalityErrors, "; "))
	case len(c.Errors) > 0:
		return fmt.Errorf("%w: %s", ErrSampleConformance, strings.Join(c.Errors, "; "))
	}
	return nil
}

// CheckSamples checks that samples describe one entity type and that their
// array items agree, before a model is asked anything:
//   - commonality: each sample must cover at least threshold (0..1) of the
//     combined set of top-level fields of all samples (with one sample there
//     is nothing to compare);
//   - field conformance: at each array-of-objects site with two or more
//     items, the items must share at least one field; with strict false such
//     a site is reported (fatal) but not an error.
//
// The samples should be collapsed first (CollapseLocalized).
func CheckSamples(samples []map[string]any, threshold float64, strict bool) Conformance {
	c := Conformance{CommonalityErrors: commonality(samples, threshold), Errors: []string{}, Sites: []Site{}}
	for _, st := range observeSites(samples) {
		st.settle()
		if st.Fatal && strict {
			c.Errors = append(c.Errors, fmt.Sprintf("the items of %s share no field (shapes: %s); rename the drifting fields so that every item has the same ones",
				strings.TrimSuffix(st.Path, "[]"), describeShapes(st.Shapes)))
		}
		c.Sites = append(c.Sites, *st)
	}
	c.OK = len(c.CommonalityErrors) == 0 && len(c.Errors) == 0
	return c
}

// commonality says which samples cover less than threshold of the combined
// set of top-level fields (never nil, so that it encodes as a list).
func commonality(samples []map[string]any, threshold float64) []string {
	errs := []string{}
	if len(samples) < 2 {
		return errs
	}
	union := map[string]bool{}
	for _, s := range samples {
		for k := range s {
			union[k] = true
		}
	}
	for i, s := range samples {
		share := float64(len(s)) / float64(len(union))
		if share+1e-9 >= threshold {
			continue
		}
		var missing []string
		for _, k := range sortedKeys(union) {
			if _, ok := s[k]; !ok {
				missing = append(missing, k)
			}
		}
		errs = append(errs, fmt.Sprintf(
			"sample %d has %d of the %d top-level fields the samples use (%.0f%%, below %.0f%%); it lacks %s",
			i+1, len(s), len(union), share*100, threshold*100, strings.Join(missing, ", ")))
	}
	return errs
}

// observeSites gathers the parent-object sites of the samples, sorted by
// path, each with its observations and distinct shapes.
func observeSites(samples []map[string]any) []*Site {
	o := siteObserver{sites: map[string]*Site{}, shapes: map[string]map[string]bool{}}
	for _, s := range samples {
		o.observe(s, "", false)
	}
	sort.Strings(o.order)
	out := make([]*Site, 0, len(o.order))
	for _, p := range o.order {
		out = append(out, o.sites[p])
	}
	return out
}

type siteObserver struct {
	sites  map[string]*Site
	shapes map[string]map[string]bool // the shapes seen at each site, keys joined
	order  []string
}

// observe records m at path and the objects nested in it.
func (o *siteObserver) observe(m map[string]any, path string, item bool) {
	st, ok := o.sites[path]
	if !ok {
		st = &Site{Path: path, ArrayItem: item}
		o.sites[path], o.shapes[path] = st, map[string]bool{}
		o.order = append(o.order, path)
	}
	st.Observations++
	keys := sortedKeys(m)
	shape := strings.Join(keys, "\x00")
	if !o.shapes[path][shape] {
		o.shapes[path][shape] = true
		st.Shapes = append(st.Shapes, keys)
	}
	for _, k := range keys {
		switch x := m[k].(type) {
		case map[string]any:
			o.observe(x, join(path, k), false)
		case []any:
			for _, e := range x {
				if obj, ok := e.(map[string]any); ok {
					o.observe(obj, join(path, k)+"[]", true)
				}
			}
		}
	}
}

// settle sorts the site's fields into always present and drifting, and
// marks an array-item site fatal when its items share no field.
func (st *Site) settle() {
	count := map[string]int{}
	for _, sh := range st.Shapes {
		for _, k := range sh {
			count[k]++
		}
	}
	// A field is always present when every distinct shape has it.
	st.AlwaysPresent, st.Drifting = []string{}, []string{}
	for _, k := range sortedKeys(count) {
		if count[k] == len(st.Shapes) {
			st.AlwaysPresent = append(st.AlwaysPresent, k)
		} else {
			st.Drifting = append(st.Drifting, k)
		}
	}
	st.Fatal = st.ArrayItem && st.Observations > 1 && len(st.AlwaysPresent) == 0
}

func describeShapes(shapes [][]string) string {
	parts := make([]string, 0, len(shapes))
	for i, sh := range shapes {
		if i == 4 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, "{"+strings.Join(sh, ", ")+"}")
	}
	return strings.Join(parts, " ")
}

// Observation is what the samples show of one property path.
type Observation struct {
	// Seen counts the parent objects that had the field with a non-null
	// value; Parents counts the parent objects at the site.
	Seen, Parents int
	// Values are the distinct scalar values observed, in first-seen order
	// (at most MaxExamples).
	Values []any
}

// Nullable reports whether some parent lacked the field or held null.
func (o Observation) Nullable() bool { return o.Seen < o.Parents }

// Observe records, for every property path of the samples (dotted, with []
// for array items, as in Site), how often it was filled and its distinct
// scalar values.
func Observe(samples []map[string]any) map[string]*Observation {
	obs := map[string]*Observation{}
	get := func(p string) *Observation {
		o, ok := obs[p]
		if !ok {
			o = &Observation{}
			obs[p] = o
		}
		return o
	}
	// children lists, per site, the fields any of its objects has, so that
	// an object without one counts as a parent that lacked it.
	fields := map[string]map[string]bool{}
	var collect func(m map[string]any, path string)
	collect = func(m map[string]any, path string) {
		if fields[path] == nil {
			fields[path] = map[string]bool{}
		}
		for k, v := range m {
			fields[path][k] = true
			switch x := v.(type) {
			case map[string]any:
				collect(x, join(path, k))
			case []any:
				for _, e := range x {
					if o, ok := e.(map[string]any); ok {
						collect(o, join(path, k)+"[]")
					}
				}
			}
		}
	}
	for _, s := range samples {
		collect(s, "")
	}
	var walk func(m map[string]any, path string)
	walk = func(m map[string]any, path string) {
		for k := range fields[path] {
			p := join(path, k)
			o := get(p)
			o.Parents++
			v, ok := m[k]
			if !ok || v == nil {
				continue
			}
			o.Seen++
			switch x := v.(type) {
			case map[string]any:
				walk(x, p)
			case []any:
				for _, e := range x {
					switch item := e.(type) {
					case map[string]any:
						walk(item, p+"[]")
					default:
						addValue(get(p+"[]"), item)
					}
				}
			default:
				addValue(o, x)
			}
		}
	}
	for _, s := range samples {
		walk(s, "")
	}
	return obs
}

func addValue(o *Observation, v any) {
	switch x := v.(type) {
	case string:
		if x == "" || len(x) > maxExampleLen {
			return
		}
	case json.Number, float64, bool:
	default:
		return
	}
	if len(o.Values) >= MaxExamples || slices.ContainsFunc(o.Values, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return
	}
	o.Values = append(o.Values, v)
}
