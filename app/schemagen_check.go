package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/schema"
)

// validated is an answer that passed every rule.
type validated struct {
	doc         map[string]any
	raw         json.RawMessage
	suggestions []string
}

// check reads and validates one answer; the error is what the model is
// told on the next attempt. A schema past the schema limits is refused
// before it is compiled (the compiler holds it to them), and the model is
// told which limit.
func (s *SchemaGenerator) check(ctx context.Context, text string, sp *schemaPlan) (validated, error) {
	a, err := schema.ParseAnswer(text)
	if err != nil {
		return validated{}, err
	}
	if sp.gen != nil {
		schema.PostProcess(a.Schema, schema.Observe(sp.collapsed.Samples), sp.collapsed.Localized)
	}
	raw, err := json.Marshal(a.Schema)
	if err != nil {
		return validated{}, fmt.Errorf("the schema does not encode: %w", err)
	}
	if err := checkText("schema", raw); err != nil {
		return validated{}, fmt.Errorf("the schema holds text that cannot be stored: %w", err)
	}
	if _, err := s.Compiler.Compile(ctx, raw); err != nil {
		if errors.Is(err, schema.ErrTooComplex) {
			return validated{}, fmt.Errorf("the schema is too complex, answer a simpler one: %w", err)
		}
		return validated{}, fmt.Errorf("the schema does not compile as JSON Schema: %w", err)
	}
	v := schema.CheckStructure(a.Schema)
	if sp.edit != nil {
		// An edit answers for what it changes: a rule the working copy
		// already broke (a schema saved by hand may) is not its fault.
		var cur map[string]any
		_ = json.Unmarshal(sp.current.Content, &cur)
		had := schema.CheckStructure(cur)
		v = slices.DeleteFunc(v, func(x string) bool { return slices.Contains(had, x) })
	}
	if len(v) > 0 {
		return validated{}, fmt.Errorf("the schema breaks %d rule(s): %s", len(v), strings.Join(v, "; "))
	}
	if a.Suggestions == nil {
		a.Suggestions = []string{}
	}
	return validated{doc: a.Schema, raw: raw, suggestions: a.Suggestions}, nil
}
