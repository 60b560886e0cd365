package ambiguity

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// Markers of the prompt that precede its JSON parts; the sandbox models
// read the subject after SubjectMarker.
const (
	SubjectMarker   = "Subject of the analysis (JSON):"
	ProtectedMarker = "Protected fields (JSON):"
)

// AnswerSchema is the JSON Schema the model's answer must satisfy. With
// describe (the saved-schema check) every finding also carries a
// suggested_description.
func AnswerSchema(describe bool) map[string]any {
	str := map[string]any{"type": "string"}
	strs := func(min, max int) map[string]any {
		return map[string]any{"type": "array", "items": map[string]any{"type": "string", "minLength": 1}, "minItems": min, "maxItems": max}
	}
	findingProps := map[string]any{
		"path":            map[string]any{"type": "string", "minLength": 1},
		"kind":            map[string]any{"type": "string", "enum": []any{string(Ambiguous), string(Unmappable)}},
		"level":           map[string]any{"type": "string", "enum": []any{string(Low), string(Medium), string(High)}},
		"interpretations": strs(2, 4),
		"note":            str,
		"suggested_names": strs(1, 3),
	}
	required := []any{"path", "kind", "level", "interpretations", "note", "suggested_names"}
	if describe {
		findingProps["suggested_description"] = map[string]any{"type": "string", "minLength": 1}
		required = append(required, "suggested_description")
	}
	fields := map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1}
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"findings", "identity_scoping"},
		"properties": map[string]any{
			"findings": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "additionalProperties": false, "required": required, "properties": findingProps}},
			"identity_scoping": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "additionalProperties": false,
				"required": []any{"path", "entity_fields", "pair_fields", "suggested_entity_name", "note"},
				"properties": map[string]any{
					"path": map[string]any{"type": "string", "minLength": 1}, "entity_fields": fields, "pair_fields": fields,
					"suggested_entity_name": str, "note": str,
				}}},
		},
	}
}

// Prompt builds the messages of an analysis of subject. describe asks for
// a rewritten description per finding (the saved-schema check).
func Prompt(subject Subject, protected []string, describe bool) []enrichment.Message {
	var sys strings.Builder
	sys.WriteString("You review the property names of a data model for ambiguity. Judge every property in the context of its parent: " +
		"'ambiguous' when several readings compete (including a value with no unit, period, range or polarity), " +
		"'unmappable' when the parent has no such fact at all, so that a model filling it would invent one. " +
		"Level: high when the readings yield materially different data, medium when they overlap but the edge cases differ, " +
		"low when the difference hardly matters. Report only properties that admit more than one reading or none; " +
		"give 2 to 4 short, distinct interpretations, most likely first, a note with the reason and the remedy, " +
		"and 1 to 3 names that admit only the first interpretation, never repeating the parent's name. ")
	if describe {
		sys.WriteString("Also give suggested_description: a description that pins the first interpretation. ")
	}
	sys.WriteString("Also report relationship sites whose items mix the related entity's own facts (entity_fields, true of the " +
		"entity whatever its parent) with facts about the pairing (pair_fields, such as a role, a share or a start date), " +
		"with a name for the related entity. Answer with one JSON object that validates against the JSON Schema given, and nothing else.")
	subj, _ := json.Marshal(subject)
	prot, _ := json.Marshal(protected)
	if protected == nil {
		prot = []byte("[]")
	}
	schema, _ := json.Marshal(AnswerSchema(describe))
	var user strings.Builder
	fmt.Fprintf(&user, "%s\n%s\n", SubjectMarker, subj)
	fmt.Fprintf(&user, "%s\n%s\n(The caller owns these names: judge them, but propose no rename.)\n", ProtectedMarker, prot)
	fmt.Fprintf(&user, "JSON Schema of the answer:\n%s\n", schema)
	return []enrichment.Message{{Role: "system", Content: sys.String()}, {Role: "user", Content: user.String()}}
}

// ParseSubject recovers the subject from a prompt's text (for the sandbox
// models); ok is false when the text has none.
func ParseSubject(text string) (Subject, bool) {
	i := strings.Index(text, SubjectMarker)
	if i < 0 {
		return Subject{}, false
	}
	var s Subject
	dec := json.NewDecoder(strings.NewReader(text[i+len(SubjectMarker):]))
	if dec.Decode(&s) != nil {
		return Subject{}, false
	}
	return s, true
}
