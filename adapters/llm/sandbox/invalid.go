package sandbox

// Invalid returns a JSON object that parses but does not satisfy schema:
// every typed property gets a value of another type, and when no property
// is typed a required one is left out or an unexpected one added. It backs
// sandbox::broken and fake servers that must exercise output validation.
// A schema that accepts every object (no typed, required or closed
// properties) has no invalid object; then the result is merely odd.
func Invalid(schema map[string]any) map[string]any {
	g := newGen(schema, nil, "invalid")
	s := g.resolve(schema)
	out := map[string]any{}
	if s == nil {
		return out // the false schema rejects even {}
	}
	props, _ := s["properties"].(map[string]any)
	broken := false
	for _, k := range sortedKeys(props) {
		if w, ok := g.wrong(props[k]); ok {
			out[k] = w
			broken = true
		}
	}
	if broken {
		return out
	}
	if req, ok := s["required"].([]any); ok && len(req) > 0 {
		if k, ok := req[0].(string); ok {
			delete(out, k)
			return out
		}
	}
	if ap, ok := s["additionalProperties"].(bool); ok && !ap {
		out["sandbox_unexpected_property"] = true
		return out
	}
	if minP, ok := count(s["minProperties"]); ok && minP > 0 {
		return map[string]any{}
	}
	out["sandbox_broken"] = true
	return out
}

// wrong returns a value that node rejects, if it can find one cheaply.
func (g *gen) wrong(node any) (any, bool) {
	s := g.resolve(node)
	if s == nil {
		return "anything", true
	}
	candidates := []any{"not a number", 12345.5, true, []any{"unexpected"}, map[string]any{"unexpected": 1}}
	if c, ok := s["const"]; ok {
		for _, v := range candidates {
			if !sameJSON(v, c) {
				return v, true
			}
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		for _, v := range append(candidates, "sandbox-not-in-enum") {
			in := false
			for _, e := range enum {
				in = in || sameJSON(e, v)
			}
			if !in {
				return v, true
			}
		}
	}
	ts := types(s)
	if ts == nil {
		return nil, false
	}
	allowed := map[string]bool{}
	for _, t := range ts {
		allowed[t] = true
		if t == "number" {
			allowed["integer"] = true
		}
	}
	for _, v := range append(candidates, nil) {
		if !allowed[jsonType(v)] {
			return v, true
		}
	}
	return nil, false
}
