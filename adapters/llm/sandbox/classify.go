package sandbox

import (
	"encoding/json"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// kindKeys are the entity attributes the sandbox reads an entity's kind
// from, in this order.
var kindKeys = []string{"kind", "type", "entity_type"}

// classify answers a pre-flight classification deterministically. The rule:
//   - sandbox::broken answers an object that is no classification (the call
//     fails after its retries); sandbox::flaky does so on its first answer.
//   - an entity without a string kind, type or entity_type attribute is a
//     match (confidence 0.9);
//   - the kind "unknown" is unknown (0.3), "ambiguous" ambiguous (0.5);
//   - a kind that appears (case-insensitively) in the schema's name, title or
//     description is a match (0.95);
//   - any other kind is a mismatch: confident (0.9), or soft (0.4) when the
//     kind ends with "?".
func classify(in TaskInput) any {
	if in.Seed == "broken" || (in.Seed == "flaky" && !in.Retry) {
		return map[string]any{"verdict": "?"}
	}
	var ci enrichment.ClassificationInput
	if i := strings.Index(in.Prompt, enrichment.ClassificationMarker); i >= 0 {
		line := in.Prompt[i+len(enrichment.ClassificationMarker):]
		if j := strings.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		_ = json.Unmarshal([]byte(strings.TrimSpace(line)), &ci)
	}
	expected := ci.SchemaTitle
	if expected == "" {
		expected = ci.SchemaName
	}
	var entity map[string]any
	_ = json.Unmarshal([]byte(ci.Entity), &entity)
	kind := ""
	for _, k := range kindKeys {
		if s, ok := entity[k].(string); ok && strings.TrimSpace(s) != "" {
			kind = strings.TrimSpace(s)
			break
		}
	}
	c := enrichment.Classification{ExpectedType: expected, AlternativeInterpretations: []string{}}
	haystack := strings.ToLower(ci.SchemaName + " " + ci.SchemaTitle + " " + ci.Description)
	soft := strings.HasSuffix(kind, "?")
	bare := strings.ToLower(strings.TrimSuffix(kind, "?"))
	switch {
	case kind == "":
		c.Status, c.Confidence = enrichment.ClassMatch, 0.9
		c.EntityDescription = "an entity with no stated kind"
		c.Reasoning = "nothing in the entity contradicts the schema"
	case bare == "unknown":
		c.Status, c.Confidence = enrichment.ClassUnknown, 0.3
		c.EntityDescription = "an entity of unknown kind"
		c.Reasoning = "the entity says too little to tell what it is"
	case bare == "ambiguous":
		c.Status, c.Confidence = enrichment.ClassAmbiguous, 0.5
		c.EntityDescription = "an entity that could be several things"
		c.Reasoning = "the entity's attributes fit more than one kind of thing"
		c.AlternativeInterpretations = []string{"a " + expected, "something else with the same name"}
	case strings.Contains(haystack, bare):
		c.Status, c.Confidence = enrichment.ClassMatch, 0.95
		c.EntityDescription = "a " + bare
		c.Reasoning = "the entity's stated kind matches the schema"
	default:
		c.Status, c.Confidence = enrichment.ClassMismatch, 0.9
		if soft {
			c.Confidence = 0.4
		}
		c.EntityDescription = "a " + bare
		c.Reasoning = "the entity says it is a " + bare + ", which the schema does not describe"
		c.AlternativeInterpretations = []string{"a " + expected + " named like a " + bare}
	}
	return c
}
