package attachment

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// Verdict is how two or more attachments relate, as the coherence call
// judged them. Reference and Excluded are 0-based indices into the job's
// attachments.
type Verdict struct {
	Mode       Coherence `json:"mode"`
	ObjectType string    `json:"object_type,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Reference  *int      `json:"reference_attachment,omitempty"`
	Excluded   []int     `json:"excluded_attachments,omitempty"`
}

// CoherenceSchema is the JSON Schema of the coherence call's answer.
func CoherenceSchema() map[string]any {
	idx := map[string]any{"type": "integer", "minimum": 0}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"mode":                 map[string]any{"type": "string", "enum": []any{string(SingleEntity), string(InstancesOfType), string(Incoherent)}},
			"object_type":          map[string]any{"type": "string"},
			"reason":               map[string]any{"type": "string"},
			"reference_attachment": idx,
			"excluded_attachments": map[string]any{"type": "array", "items": idx},
		},
		"required":             []any{"mode"},
		"additionalProperties": false,
	}
}

// CoherencePrompt asks whether atts describe one entity, several
// instances of one type, or unrelated things; the attachments themselves
// follow with ForModel.
func CoherencePrompt(atts []Attachment, subject string) []enrichment.Message {
	var names []string
	for i, a := range atts {
		names = append(names, fmt.Sprintf("%d: %q (%s)", i, a.Filename, a.MediaType))
	}
	sys := "You check whether documents belong together before they are used to describe an entity type. " +
		"Answer with one JSON object: mode is single_entity when every document describes the same one object, " +
		"instances_of_type when they describe several objects of one type (object_type names it), " +
		"incoherent when they describe unrelated kinds of things. reference_attachment is the index of the " +
		"document that best represents the set; excluded_attachments lists the indices of documents that do not fit. " +
		"reason says why in one sentence."
	user := "Subject: " + subject + "\nDocuments (index: filename):\n" + strings.Join(names, "\n")
	return []enrichment.Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}
}

// ParseVerdict reads the coherence call's answer for n attachments.
func ParseVerdict(text string, n int) (Verdict, error) {
	var v Verdict
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &v); err != nil {
		return Verdict{}, fmt.Errorf("the coherence answer is not a JSON object: %w", err)
	}
	switch v.Mode {
	case SingleEntity, InstancesOfType, Incoherent:
	default:
		return Verdict{}, fmt.Errorf("the coherence answer has mode %q", v.Mode)
	}
	if v.Reference != nil && (*v.Reference < 0 || *v.Reference >= n) {
		v.Reference = nil
	}
	kept := v.Excluded[:0]
	for _, i := range v.Excluded {
		if i >= 0 && i < n {
			kept = append(kept, i)
		}
	}
	v.Excluded = kept
	return v, nil
}
