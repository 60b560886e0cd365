package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// Markers of the generation and edit prompts. The sandbox models read the
// JSON that follows them.
const (
	SamplesMarker     = "Sample objects (JSON array):"
	CurrentMarker     = "Current schema (JSON):"
	InstructionMarker = "Instruction:"
	// SemanticIDInstruction asks for semantic_id properties
	// (generate_semantic_ids).
	SemanticIDInstruction = `Add a string property "semantic_id" with "semantic_id": true to every object that has identifying properties.`
)

// GenerationOptions are the request's choices that shape the prompt.
type GenerationOptions struct {
	// Language is the language the schema describes itself in (ISO 639-1;
	// empty: English). Property names are never translated.
	Language            string
	GenerateSemanticIDs bool
	// Localized are the sample paths that held language maps.
	Localized []string
}

// answerRules is what every schema answer must respect: the structural
// rules of CheckStructure, told to the model up front.
const answerRules = `Answer with one JSON object {"schema": <the JSON Schema>, "suggestions": [<short advice strings>]} and nothing else. ` +
	`The schema is JSON Schema 2020-12 with "type": "object" and a non-empty "properties". ` +
	`Every property has a "type" (string, number, integer, boolean, array or object) and a "description"; ` +
	`an array has "items"; an object lists its "properties". ` +
	`Mark the properties that identify the entity (a name, an id) with "identifying": true. ` +
	`A "format" must be one of date, time, date-time, uuid, email, uri, ipv4, ipv6, on strings only; ` +
	`never combine "pattern" with "format" or "multilingual". ` +
	`Group properties into expertise domains only through "x-expertiseDomains" (key -> {name, description}) ` +
	`and a property's "expertise" naming one of its keys; never more domains than top-level properties.`

// GenerationPrompt builds the first messages of a schema generation from
// collapsed samples.
func GenerationPrompt(samples []map[string]any, o GenerationOptions) []enrichment.Message {
	var sys strings.Builder
	sys.WriteString("You are a data architect. Infer the JSON Schema of one entity type from sample objects of it. ")
	sys.WriteString(answerRules)
	var user strings.Builder
	fmt.Fprintf(&user, "Describe the schema in language %q (titles and descriptions only; keep the property names exactly as in the samples).\n", languageOr(o.Language))
	if len(samples) > 1 {
		fmt.Fprintf(&user, "The %d samples describe the same entity type: a field missing or null in some of them is optional.\n", len(samples))
	}
	if len(o.Localized) > 0 {
		fmt.Fprintf(&user, "These fields were given in several languages and are multilingual: %s.\n", strings.Join(o.Localized, ", "))
	}
	if o.GenerateSemanticIDs {
		user.WriteString(SemanticIDInstruction + "\n")
	}
	b, _ := json.Marshal(samples)
	fmt.Fprintf(&user, "%s\n%s\n", SamplesMarker, b)
	return []enrichment.Message{{Role: "system", Content: sys.String()}, {Role: "user", Content: user.String()}}
}

// EditPrompt builds the first messages of an AI edit: the current working
// copy and the instruction.
func EditPrompt(current json.RawMessage, instruction string) []enrichment.Message {
	sys := "You are a data architect. Apply the instruction to the JSON Schema given, changing nothing else. " + answerRules
	user := fmt.Sprintf("%s\n%s\n%s %s\n", CurrentMarker, current, InstructionMarker, strings.TrimSpace(instruction))
	return []enrichment.Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}
}

func languageOr(l string) string {
	if l == "" {
		return "en"
	}
	return l
}

// Answer is a model's schema answer.
type Answer struct {
	Schema      map[string]any
	Suggestions []string
}

// ErrAnswer is wrapped by every unusable schema answer.
var ErrAnswer = errors.New("unusable schema answer")

// ParseAnswer reads a model's answer: {"schema": {...}, "suggestions": [...]}
// or, leniently, the schema document itself. Text around the JSON object
// (a code fence) is ignored.
func ParseAnswer(text string) (Answer, error) {
	text = strings.TrimSpace(text)
	if i := strings.Index(text, "{"); i > 0 {
		text = text[i:]
	}
	if j := strings.LastIndex(text, "}"); j >= 0 && j < len(text)-1 {
		text = text[:j+1]
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil || m == nil {
		return Answer{}, fmt.Errorf("%w: the answer is not a JSON object", ErrAnswer)
	}
	a := Answer{Schema: m}
	if s, ok := m["schema"].(map[string]any); ok {
		a.Schema = s
		if list, ok := m["suggestions"].([]any); ok {
			for _, e := range list {
				if t, ok := e.(string); ok && strings.TrimSpace(t) != "" {
					a.Suggestions = append(a.Suggestions, t)
				}
			}
		}
	}
	return a, nil
}
