package fusion

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Arbitrable returns the conflicts an arbiter decides: the genuine
// disagreements (translation-only variance is not one).
func Arbitrable(r Result) []Conflict {
	var out []Conflict
	for _, c := range r.Report.Conflicts {
		if c.NeedsArbitration {
			out = append(out, c)
		}
	}
	return out
}

// Escalate reports whether a rule-based fusion should ask an arbiter
// anyway: some numbers disagree wildly (WildRatio).
func Escalate(r Result) bool {
	for _, c := range r.Report.Conflicts {
		if c.Wild {
			return true
		}
	}
	return false
}

// Apply applies an arbiter's decisions (conflict path -> chosen value) to a
// rule-based fusion. Every decision must name an arbitrable conflict and
// choose one of its candidates' values or the rules' value (compared like
// detection compares); otherwise nothing is applied and the error says
// why. A conflict without a decision keeps the rules' value.
func Apply(r Result, decisions map[string]any, arbiter string) (Result, error) {
	byPath := map[string]Conflict{}
	for _, c := range Arbitrable(r) {
		byPath[c.Path] = c
	}
	paths := make([]string, 0, len(decisions))
	for p := range decisions {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	type choice struct {
		c      Conflict
		v      any
		models []string
	}
	var chosen []choice
	for _, p := range paths {
		c, ok := byPath[p]
		if !ok {
			return r, fmt.Errorf("decision for %q: no such conflict", p)
		}
		v := decisions[p]
		k := Key(v)
		var models []string
		for m, cv := range c.ValuesByModel {
			if cv != nil && Key(cv) == k {
				models = append(models, m)
			}
		}
		if models == nil {
			if Key(c.Resolved) != k {
				return r, fmt.Errorf("decision for %q is none of the candidates", p)
			}
			models = r.Provenance[p].Models
		}
		sort.Strings(models)
		chosen = append(chosen, choice{c, v, models})
	}
	out := Result{Merged: deepCopy(r.Merged).(map[string]any), Provenance: map[string]Provenance{}, Report: r.Report, Summary: r.Summary}
	for k, p := range r.Provenance {
		out.Provenance[k] = p
	}
	for _, ch := range chosen {
		set(out.Merged, ch.c.segs, ch.v)
		out.Provenance[ch.c.Path] = Provenance{Models: ch.models, Arbitrated: true}
		// Per-language provenance under a multilingual field follows.
		for k := range out.Provenance {
			if strings.HasPrefix(k, ch.c.Path+".") {
				out.Provenance[k] = Provenance{Models: ch.models, Arbitrated: true}
			}
		}
	}
	out.Summary.Method = MethodLLM
	out.Summary.ArbitrationModel = arbiter
	return out, nil
}

func set(m map[string]any, segs []string, v any) {
	for i, s := range segs {
		if i == len(segs)-1 {
			m[s] = v
			return
		}
		next, ok := m[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s] = next
		}
		m = next
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// arbiterItem is one conflicting field as the arbiter is shown it.
type arbiterItem struct {
	Path       string         `json:"path"`
	FieldType  string         `json:"field_type"`
	Candidates map[string]any `json:"candidates"`
}

// ArbiterView is the conflicts as the arbiter's prompt shows them (JSON):
// each field's path, its type (a scalar's value type when known) and the
// models' non-null candidates.
func ArbiterView(conflicts []Conflict) []byte {
	items := make([]arbiterItem, len(conflicts))
	for i, c := range conflicts {
		cand := map[string]any{}
		for m, v := range c.ValuesByModel {
			if v != nil {
				cand[m] = v
			}
		}
		t := c.FieldType
		if c.ValueType != "" {
			t = c.ValueType
		}
		items[i] = arbiterItem{Path: c.Path, FieldType: t, Candidates: cand}
	}
	b, _ := json.Marshal(items)
	return b
}
