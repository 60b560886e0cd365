package sandbox

import (
	"encoding/json"
	"sort"
	"strings"
)

// Contrarian is sandbox::contrarian's answer: echo's answer with planned
// disagreements, so that echo, alt and contrarian together show every
// fusion rule. Walking each object's properties in name order:
//   - strings at even positions (0, 2, …) take contrarian's own value (with
//     alt's, usually a three-way tie: the longest wins); strings at odd
//     positions keep echo's (echo and contrarian outvote alt);
//   - numbers and arrays take contrarian's own values (a median of three,
//     a union of three);
//   - booleans are echo's negated (a majority against echo when alt
//     agrees with contrarian);
//   - objects (multilingual ones too) follow the same rules inside.
//
// Values echoed from the entity come out the same for every seed, so all
// three models agree on them.
func Contrarian(schema, entity map[string]any) any {
	return contrary(Generate(schema, entity, "echo"), Generate(schema, entity, "contrarian"))
}

func contrary(base, own any) any {
	bm, ok := base.(map[string]any)
	om, ok2 := own.(map[string]any)
	if !ok || !ok2 {
		return base
	}
	keys := make([]string, 0, len(bm))
	for k := range bm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]any, len(bm))
	for i, k := range keys {
		bv := bm[k]
		ov, has := om[k]
		out[k] = bv
		if !has {
			continue
		}
		switch x := bv.(type) {
		case map[string]any:
			out[k] = contrary(x, ov)
		case string:
			if _, isStr := ov.(string); isStr && i%2 == 0 {
				out[k] = ov
			}
		case float64, []any:
			out[k] = ov
		case bool:
			out[k] = !x
		}
	}
	return out
}

// arbitrate answers an arbitration call (ports.TaskArbitration): for each
// conflicting field, the candidate of the alphabetically first model.
// sandbox::broken answers a decision for a field that is not in conflict,
// which the application must refuse (the rules then stand).
func arbitrate(in TaskInput) any {
	if in.Seed == "broken" {
		return map[string]any{"decisions": []any{map[string]any{"path": "__not_a_conflict__", "value": "x"}}}
	}
	var items []struct {
		Path       string         `json:"path"`
		Candidates map[string]any `json:"candidates"`
	}
	if i := strings.Index(in.Prompt, "Conflicting fields:"); i >= 0 {
		_ = json.NewDecoder(strings.NewReader(in.Prompt[i+len("Conflicting fields:"):])).Decode(&items)
	}
	decisions := []any{}
	for _, it := range items {
		models := make([]string, 0, len(it.Candidates))
		for m := range it.Candidates {
			models = append(models, m)
		}
		if len(models) == 0 {
			continue
		}
		sort.Strings(models)
		decisions = append(decisions, map[string]any{"path": it.Path, "value": it.Candidates[models[0]],
			"reason": "the sandbox arbiter picks the alphabetically first model's value"})
	}
	return map[string]any{"decisions": decisions}
}
