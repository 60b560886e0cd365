package sample

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
)

// Params are what one sample call asks, sent to the model as a JSON block
// of the prompt (ParamsMarker), so that any model, the sandbox included,
// reads the same request.
type Params struct {
	EntityType        string     `json:"entity_type"`
	Fields            []string   `json:"fields,omitempty"`
	FieldSet          []string   `json:"field_set,omitempty"`
	Convention        Convention `json:"naming_convention"`
	Language          string     `json:"language"`
	Instance          string     `json:"instance"`
	Index             int        `json:"index"`
	Total             int        `json:"total"`
	ExtraInstructions string     `json:"extra_instructions,omitempty"`
	// AskQuestions lets the model ask clarification questions (sample 1,
	// before any was answered).
	AskQuestions bool `json:"ask_questions"`
	// Questions and Answers are the clarifications settled so far.
	Questions []job.SampleQuestion `json:"questions,omitempty"`
	Answers   job.Answers          `json:"answers,omitempty"`
}

// ParamsMarker opens the prompt line that holds the Params as JSON.
const ParamsMarker = "Generation parameters (JSON): "

// Prompt builds the messages of one sample call.
func Prompt(p Params) []enrichment.Message {
	b, _ := json.Marshal(p)
	var sys strings.Builder
	sys.WriteString("You generate realistic sample JSON objects of one entity type, for designing a data schema. " +
		"Answer with one JSON object that validates against the JSON Schema given, and nothing else. " +
		"Values must be plausible for the instance named, and written in the language given.")
	var user strings.Builder
	fmt.Fprintf(&user, "Generate sample %d of %d: one %s", p.Index+1, p.Total, p.EntityType)
	if p.Instance != "" {
		fmt.Fprintf(&user, " (%s)", p.Instance)
	}
	user.WriteString(".\n")
	switch {
	case len(p.FieldSet) > 0:
		fmt.Fprintf(&user, "Use exactly these fields, no others: %s.\n", strings.Join(p.FieldSet, ", "))
	case len(p.Fields) > 0:
		fmt.Fprintf(&user, "Include these fields: %s.\n", strings.Join(p.Fields, ", "))
	default:
		user.WriteString("Choose the fields a schema of this entity type needs.\n")
	}
	if p.Convention != ConventionAuto {
		fmt.Fprintf(&user, "Name the fields in %s.\n", p.Convention)
	}
	if p.AskQuestions {
		user.WriteString("If the entity type or a field is ambiguous, also list clarification questions, each with options " +
			"and the option you assumed as default_option_id; otherwise answer an empty questions list.\n")
	}
	for _, q := range p.Questions {
		a := p.Answers[q.ID]
		fmt.Fprintf(&user, "Clarified: %s -> %s", q.Text, strings.Join(a.OptionIDs, ", "))
		if a.Text != "" {
			fmt.Fprintf(&user, " (%s)", a.Text)
		}
		user.WriteString("\n")
	}
	if p.ExtraInstructions != "" {
		fmt.Fprintf(&user, "Extra instructions: %s\n", p.ExtraInstructions)
	}
	fmt.Fprintf(&user, "%s%s\n", ParamsMarker, b)
	return []enrichment.Message{{Role: "system", Content: sys.String()}, {Role: "user", Content: user.String()}}
}

// ParseParams finds the Params in a prompt's text.
func ParseParams(prompt string) (Params, bool) {
	for _, line := range strings.Split(prompt, "\n") {
		if rest, ok := strings.CutPrefix(line, ParamsMarker); ok {
			var p Params
			if json.Unmarshal([]byte(rest), &p) == nil {
				return p, true
			}
		}
	}
	return Params{}, false
}

// AnswerSchema is the JSON Schema of a sample call's answer: the sample
// (with exactly the field set, when one is fixed) and, when questions may be
// asked, the questions.
func AnswerSchema(p Params) map[string]any {
	smp := map[string]any{"type": "object", "minProperties": 1}
	if len(p.FieldSet) > 0 {
		props := map[string]any{}
		for _, f := range p.FieldSet {
			props[f] = map[string]any{}
		}
		smp["properties"], smp["required"] = props, p.FieldSet
	}
	props := map[string]any{"sample": smp}
	req := []any{"sample"}
	if p.AskQuestions {
		opt := map[string]any{"type": "object", "required": []any{"id", "label"},
			"properties": map[string]any{"id": map[string]any{"type": "string"}, "label": map[string]any{"type": "string"}}}
		q := map[string]any{"type": "object", "required": []any{"id", "text", "options"}, "properties": map[string]any{
			"id": map[string]any{"type": "string"}, "label": map[string]any{"type": "string"},
			"text": map[string]any{"type": "string"}, "options": map[string]any{"type": "array", "items": opt},
			"allow_multiple": map[string]any{"type": "boolean"}, "default_option_id": map[string]any{"type": "string"}}}
		props["questions"] = map[string]any{"type": "array", "maxItems": MaxQuestions, "items": q}
		req = append(req, "questions")
	}
	return map[string]any{"type": "object", "required": req, "properties": props}
}

// Answer is a sample call's answer.
type Answer struct {
	Sample    map[string]any       `json:"sample"`
	Questions []job.SampleQuestion `json:"questions"`
}
