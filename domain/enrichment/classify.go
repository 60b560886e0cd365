package enrichment

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ClassificationStatus is a pre-flight classification's verdict on whether
// an entity is the kind of thing its schema describes.
type ClassificationStatus string

// The verdicts (the reference's ClassificationContext.status).
const (
	ClassMatch     ClassificationStatus = "match"
	ClassMismatch  ClassificationStatus = "mismatch"
	ClassUnknown   ClassificationStatus = "unknown"
	ClassAmbiguous ClassificationStatus = "ambiguous"
)

// MaxClassifiedEntity bounds the entity data a classification call sees
// (the reference's 3,000 characters).
const MaxClassifiedEntity = 3000

// ConfidentMismatch is the confidence from which a mismatch is confident: a
// batch skips such an entity; a softer mismatch only informs the prompts.
const ConfidentMismatch = 0.8

// Classification is a classification call's answer.
type Classification struct {
	Status                     ClassificationStatus `json:"status"`
	EntityDescription          string               `json:"entity_description"`
	ExpectedType               string               `json:"expected_type"`
	Confidence                 float64              `json:"confidence"`
	Reasoning                  string               `json:"reasoning"`
	AlternativeInterpretations []string             `json:"alternative_interpretations"`
}

// Warns reports whether the verdict is a warning (anything but match): a
// stream pauses on it, a blocking run refuses it.
func (c Classification) Warns() bool { return c.Status != ClassMatch }

// ConfidentMismatch reports whether the verdict is a mismatch at or above
// ConfidentMismatch: a batch skips the entity.
func (c Classification) ConfidentMismatch() bool {
	return c.Status == ClassMismatch && c.Confidence >= ConfidentMismatch
}

// ClassificationInput is what a classification call is told, sent as one
// JSON line so that any model (the sandbox included) reads the same request.
type ClassificationInput struct {
	SchemaName  string `json:"schema_name"`
	SchemaTitle string `json:"schema_title,omitempty"`
	Description string `json:"schema_description,omitempty"`
	// Entity is the entity's JSON, cut to MaxClassifiedEntity characters.
	Entity string `json:"entity"`
}

// ClassificationMarker precedes the input's JSON line in the prompt.
const ClassificationMarker = "Classification input (JSON):"

// CutEntity cuts an entity's JSON to MaxClassifiedEntity characters (runes,
// never inside one).
func CutEntity(entity []byte) string {
	if utf8.RuneCount(entity) <= MaxClassifiedEntity {
		return string(entity)
	}
	n := 0
	for i := range string(entity) {
		if n == MaxClassifiedEntity {
			return string(entity[:i])
		}
		n++
	}
	return string(entity)
}

// ClassificationPrompt builds the messages of a classification call.
func ClassificationPrompt(in ClassificationInput) []Message {
	line, _ := json.Marshal(in)
	sys := "You check, before any research, whether an entity is the kind of thing a schema describes. " +
		"Answer with one JSON object: status (match, mismatch, unknown or ambiguous), entity_description (what the entity " +
		"is), expected_type (what the schema describes), confidence (0 to 1), reasoning, and alternative_interpretations " +
		"(other readings of the entity, possibly none)."
	user := fmt.Sprintf("%s %s\n", ClassificationMarker, line)
	return []Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}
}

// ClassificationSchema is the JSON Schema of a classification answer.
func ClassificationSchema() map[string]any {
	str := map[string]any{"type": "string"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"status":                      map[string]any{"type": "string", "enum": []any{"match", "mismatch", "unknown", "ambiguous"}},
			"entity_description":          str,
			"expected_type":               str,
			"confidence":                  map[string]any{"type": "number", "minimum": 0, "maximum": 1},
			"reasoning":                   str,
			"alternative_interpretations": map[string]any{"type": "array", "items": str},
		},
		"required":             []any{"status", "entity_description", "expected_type", "confidence", "reasoning"},
		"additionalProperties": false,
	}
}

// ParseClassification reads and checks a classification answer.
func ParseClassification(text string) (Classification, error) {
	var c Classification
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, errors.New("the answer is not a classification object")
	}
	switch c.Status {
	case ClassMatch, ClassMismatch, ClassUnknown, ClassAmbiguous:
	default:
		return c, fmt.Errorf("status: must be match, mismatch, unknown or ambiguous, not %q", c.Status)
	}
	if c.Confidence < 0 || c.Confidence > 1 {
		return c, fmt.Errorf("confidence: must be 0 to 1, not %v", c.Confidence)
	}
	if strings.TrimSpace(c.EntityDescription) == "" {
		return c, errors.New("entity_description: required")
	}
	if c.AlternativeInterpretations == nil {
		c.AlternativeInterpretations = []string{}
	}
	return c, nil
}

// WithClassification prepends a classification's verdict to an enrichment
// prompt (its system message), so that the models know what the entity was
// taken for; on a mismatch they are told to leave irrelevant fields null.
func WithClassification(msgs []Message, c *Classification) []Message {
	if c == nil || len(msgs) == 0 {
		return msgs
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Pre-flight classification: the entity is %s (status %s, confidence %.2f; the schema describes %s). %s\n",
		c.EntityDescription, c.Status, c.Confidence, c.ExpectedType, c.Reasoning)
	if c.Status != ClassMatch {
		b.WriteString("The entity may not be the kind of thing the schema describes: set properties that do not apply to it to null.\n")
	}
	out := append([]Message(nil), msgs...)
	out[0].Content = b.String() + out[0].Content
	return out
}
