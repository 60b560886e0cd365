package enrichment

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// RepointConcept makes the record name the concept to where it named from
// (a merge's loser): each semantic concept ref of from takes to and its
// canonical text, and the output value at the ref's path takes to where it
// still is from (an output edited since keeps its value). It reports
// whether the record changed.
func (r *Record) RepointConcept(from, to, canonicalText string) bool {
	var paths []string
	for i, c := range r.SemanticConcepts {
		if c.ConceptID != from {
			continue
		}
		// The alias keeps its id: the merge moves the loser's aliases.
		r.SemanticConcepts[i].ConceptID, r.SemanticConcepts[i].CanonicalText = to, canonicalText
		paths = append(paths, c.JSONPath)
	}
	if len(paths) == 0 {
		return false
	}
	if out, ok := repointOutput(r.StructuredOutput, paths, from, to); ok {
		r.StructuredOutput = out
	}
	return true
}

// repointOutput sets the values at paths that equal from to to; false when
// none did (the output is then left byte for byte).
func repointOutput(raw json.RawMessage, paths []string, from, to string) (json.RawMessage, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers keep their digits
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	changed := false
	for _, p := range paths {
		if setAt(doc, pathSteps(p), from, to) {
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(doc)
	return b, err == nil
}

// pathStep is one step of a ref's path: a key, or an index when key is "".
type pathStep struct {
	key   string
	index int
}

// pathSteps reads a path of the form the enrichment writes ($.a.b[0].c);
// nil for any other.
func pathSteps(p string) []pathStep {
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil
	}
	var steps []pathStep
	for _, part := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		key, idx, _ := strings.Cut(part, "[")
		if key == "" {
			return nil
		}
		steps = append(steps, pathStep{key: key})
		for idx != "" {
			n, after, ok := strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			if !ok || err != nil || i < 0 {
				return nil
			}
			steps = append(steps, pathStep{index: i})
			idx = strings.TrimPrefix(after, "[")
		}
	}
	return steps
}

// setAt sets the string at steps in doc to to where it is from.
func setAt(doc any, steps []pathStep, from, to string) bool {
	if len(steps) == 0 {
		return false
	}
	cur := doc
	for _, st := range steps[:len(steps)-1] {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[st.key]
		case []any:
			if st.key != "" || st.index >= len(v) {
				return false
			}
			cur = v[st.index]
		default:
			return false
		}
	}
	last := steps[len(steps)-1]
	m, ok := cur.(map[string]any)
	if !ok || last.key == "" || m[last.key] != from {
		return false
	}
	m[last.key] = to
	return true
}
