package concept

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// IdentityText composes the identity text of obj, a decoded JSON object
// (REFERENCE.md §7, ladder step 1): the values of its identifying
// properties, then those of its 1-1 nested objects, joined by one space.
// It is the text as given; the ladder compares Normalize of it, and the
// given form becomes a new concept's canonical text.
//
// identifying names obj's own identifying properties. nested are paths,
// one property name per step, into objects nested 1-1 in obj (a property
// holding an object, not an array): ["publisher", "name"] reads
// obj["publisher"]["name"]. A path that crosses an array reads nothing:
// array items are entities of their own and never part of their parent's
// identity.
//
// The order is stable whatever the order of the arguments: the
// identifying properties by name, then the nested paths by their steps.
// A value that is absent, null, an empty or blank string, an object or
// an array adds nothing; a number adds its shortest decimal form, a
// boolean true or false. A property named twice is read once.
func IdentityText(obj map[string]any, identifying []string, nested [][]string) string {
	paths := make([][]string, 0, len(identifying)+len(nested))
	own := slices.Clone(identifying)
	slices.Sort(own)
	for _, k := range slices.Compact(own) {
		paths = append(paths, []string{k})
	}
	deep := make([][]string, 0, len(nested))
	for _, p := range nested {
		if len(p) > 0 {
			deep = append(deep, p)
		}
	}
	slices.SortFunc(deep, slices.Compare)
	deep = slices.CompactFunc(deep, slices.Equal)
	paths = append(paths, deep...)

	parts := make([]string, 0, len(paths))
	for _, p := range paths {
		if s, ok := scalarText(lookup(obj, p)); ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// lookup follows path through nested objects; nil when a step is missing
// or is not an object.
func lookup(obj map[string]any, path []string) any {
	var v any = obj
	for _, step := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[step]
	}
	return v
}

// scalarText is a scalar value as identity text; false for what adds
// nothing (nil, blank strings, objects, arrays, non-finite numbers).
func scalarText(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return "", false
		}
		s = strconv.FormatFloat(float64(x), 'f', -1, 32)
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case bool:
		s = strconv.FormatBool(x)
	default:
		return "", false
	}
	if strings.TrimSpace(s) == "" {
		return "", false
	}
	return s, true
}
