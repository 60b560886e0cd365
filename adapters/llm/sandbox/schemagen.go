package sandbox

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/schema"
)

// The sandbox's schema tasks. Both answer {"schema": ..., "suggestions":
// [...]}. sandbox::flaky's first answer of a conversation has no
// properties (the generation loop's validator refuses it and the retry
// repairs it); sandbox::broken never answers a valid schema.

// badSchema breaks the structural rules: no properties.
func badSchema() any {
	return map[string]any{"schema": map[string]any{"type": "object", "properties": map[string]any{}}, "suggestions": []any{}}
}

func misbehaves(in TaskInput) bool {
	return in.Seed == "broken" || (in.Seed == "flaky" && !in.Retry)
}

// generateSchema infers a plausible schema from the samples in the prompt:
// types from the values (integers, numbers, booleans, dates, emails and
// URLs among strings), nested objects and arrays, a name- or id-like field
// as identifying, and a description per property.
func generateSchema(in TaskInput) any {
	if misbehaves(in) {
		return badSchema()
	}
	var samples []map[string]any
	if i := strings.Index(in.Prompt, schema.SamplesMarker); i >= 0 {
		dec := json.NewDecoder(strings.NewReader(in.Prompt[i+len(schema.SamplesMarker):]))
		_ = dec.Decode(&samples)
	}
	values := make([]any, 0, len(samples))
	for _, s := range samples {
		values = append(values, s)
	}
	entity := sampleEntityName(samples)
	root := infer(values, strings.ToLower(entity))
	if root["properties"] == nil || len(root["properties"].(map[string]any)) == 0 {
		root = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "description": "The entity's name."}}}
	}
	addDocumentProperties(root, in.Docs)
	markIdentifying(root)
	if strings.Contains(in.Prompt, schema.SemanticIDInstruction) {
		addSemanticIDs(root)
	}
	root["title"] = entity
	root["description"] = fmt.Sprintf("A %s, as described by %d sample(s).", strings.ToLower(entity), len(samples))
	var sugg []any
	for _, k := range sortedKeys(root["properties"].(map[string]any)) {
		n := 0
		for _, s := range samples {
			if v, ok := s[k]; ok && v != nil {
				n++
			}
		}
		if n < len(samples) {
			sugg = append(sugg, fmt.Sprintf("%s appears in %d of %d samples; it is optional.", k, n, len(samples)))
		}
	}
	if sugg == nil {
		sugg = []any{}
	}
	return map[string]any{"schema": root, "suggestions": sugg}
}

// sampleEntityName guesses the entity type from the fields the samples use.
func sampleEntityName(samples []map[string]any) string {
	has := func(keys ...string) bool {
		for _, s := range samples {
			for _, k := range keys {
				if _, ok := s[k]; ok {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("industry", "ticker", "employees", "headquarters", "founded", "founded_year"):
		return "Company"
	case has("isbn", "author", "pages"):
		return "Book"
	case has("sku", "price", "brand"):
		return "Product"
	case has("first_name", "last_name", "job_title", "email"):
		return "Person"
	}
	return "Entity"
}

var (
	dateRe  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	emailRe = regexp.MustCompile(`^[^@\s]+@[^@\s]+\.[^@\s]+$`)
	uriRe   = regexp.MustCompile(`^https?://\S+$`)
)

// infer returns the schema of a set of observed values (one per sample or
// array item); owner names what the values belong to, for descriptions.
func infer(values []any, owner string) map[string]any {
	kinds := map[string]bool{}
	var objects []map[string]any
	var items []any
	var strs []string
	for _, v := range values {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			kinds["object"] = true
			objects = append(objects, x)
		case []any:
			kinds["array"] = true
			items = append(items, x...)
		case string:
			kinds["string"] = true
			strs = append(strs, x)
		case bool:
			kinds["boolean"] = true
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1e15 {
				kinds["integer"] = true
			} else {
				kinds["number"] = true
			}
		}
	}
	if kinds["number"] {
		delete(kinds, "integer")
	}
	switch {
	case len(kinds) != 1:
		// Nothing seen, or values of several kinds: free text.
		return map[string]any{"type": "string"}
	case kinds["object"]:
		fields := map[string][]any{}
		for _, o := range objects {
			for k, v := range o {
				fields[k] = append(fields[k], v)
			}
		}
		if len(fields) == 0 {
			// Only empty objects seen: an open object.
			return map[string]any{"type": "object", "additionalProperties": true}
		}
		props := map[string]any{}
		for _, k := range sortedKeys(fields) {
			p := infer(fields[k], k)
			p["description"] = fmt.Sprintf("The %s's %s.", humanWords(owner), humanWords(k))
			props[k] = p
		}
		return map[string]any{"type": "object", "properties": props}
	case kinds["array"]:
		return map[string]any{"type": "array", "items": infer(items, singular(owner))}
	case kinds["string"]:
		out := map[string]any{"type": "string"}
		for _, f := range []struct {
			re     *regexp.Regexp
			format string
		}{{dateRe, "date"}, {emailRe, "email"}, {uriRe, "uri"}} {
			if len(strs) > 0 && !slices.ContainsFunc(strs, func(s string) bool { return !f.re.MatchString(s) }) {
				out["format"] = f.format
				break
			}
		}
		return out
	}
	for k := range kinds {
		return map[string]any{"type": k}
	}
	return map[string]any{"type": "string"}
}

// markIdentifying flags the name- or id-like property of every object
// (the root, nested objects, array items).
func markIdentifying(node map[string]any) {
	props, _ := node["properties"].(map[string]any)
	if len(props) > 0 {
		if k := identifyingKey(props); k != "" {
			props[k].(map[string]any)["identifying"] = true
		}
	}
	for _, v := range props {
		p, _ := v.(map[string]any)
		if p == nil {
			continue
		}
		if p["type"] == "object" {
			markIdentifying(p)
		}
		if it, ok := p["items"].(map[string]any); ok && it["type"] == "object" {
			markIdentifying(it)
		}
	}
}

// addSemanticIDs adds a semantic_id property to every object with an
// identifying property (generate_semantic_ids).
func addSemanticIDs(node map[string]any) {
	props, _ := node["properties"].(map[string]any)
	if props == nil {
		return
	}
	for _, k := range sortedKeys(props) {
		p, _ := props[k].(map[string]any)
		if p == nil {
			continue
		}
		if p["type"] == "object" {
			addSemanticIDs(p)
		}
		if it, ok := p["items"].(map[string]any); ok && it["type"] == "object" {
			addSemanticIDs(it)
		}
	}
	identified := false
	for _, v := range props {
		p, _ := v.(map[string]any)
		identified = identified || (p != nil && p["identifying"] == true)
	}
	if identified {
		props["semantic_id"] = map[string]any{"type": "string", "semantic_id": true,
			"description": "The embedding-based semantic id of this object, resolved from its identifying properties."}
	}
}

func identifyingKey(props map[string]any) string {
	scalar := func(k string) bool {
		p, _ := props[k].(map[string]any)
		return p != nil && (p["type"] == "string" || p["type"] == "integer")
	}
	for _, k := range []string{"name", "title", "full_name", "id", "code", "slug"} {
		if scalar(k) {
			return k
		}
	}
	for _, k := range sortedKeys(props) {
		if (strings.HasSuffix(k, "_name") || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "Name")) && scalar(k) {
			return k
		}
	}
	// Else the first text field: the most likely label of an item.
	for _, k := range sortedKeys(props) {
		if p, _ := props[k].(map[string]any); p != nil && p["type"] == "string" && p["format"] == nil {
			return k
		}
	}
	return ""
}

func humanWords(k string) string {
	return strings.ToLower(strings.ReplaceAll(k, "_", " "))
}

func singular(k string) string {
	if strings.HasSuffix(k, "ies") {
		return strings.TrimSuffix(k, "ies") + "y"
	}
	return strings.TrimSuffix(k, "s")
}

var (
	addRe    = regexp.MustCompile(`(?i)^(?:please\s+)?add\s+(?:a\s+|an\s+|the\s+)?(?:new\s+)?(?:field|property|column)?\s*["'` + "`" + `]?([A-Za-z_][A-Za-z0-9_]*)["'` + "`" + `]?(?:\s+(?:of\s+type|as\s+an?|as|typed)\s+(string|text|number|integer|int|boolean|bool|date))?\s*\.?$`)
	removeRe = regexp.MustCompile(`(?i)^(?:please\s+)?(?:remove|delete|drop)\s+(?:the\s+)?(?:field|property|column)?\s*["'` + "`" + `]?([A-Za-z_][A-Za-z0-9_]*)["'` + "`" + `]?\s*\.?$`)
	renameRe = regexp.MustCompile(`(?i)^(?:please\s+)?rename\s+(?:the\s+)?(?:field|property|column)?\s*["'` + "`" + `]?([A-Za-z_][A-Za-z0-9_]*)["'` + "`" + `]?\s+to\s+["'` + "`" + `]?([A-Za-z_][A-Za-z0-9_]*)["'` + "`" + `]?\s*\.?$`)
)

// editSchema follows simple instructions on the schema in the prompt,
// deterministically: "add a field X" (optionally "of type number",
// integer, boolean, date, string), "remove Y", "rename A to B", several
// joined by ";" or " and then ". Anything else leaves the schema unchanged
// (and says so in a suggestion).
func editSchema(in TaskInput) any {
	if misbehaves(in) {
		return badSchema()
	}
	var doc map[string]any
	if i := strings.Index(in.Prompt, schema.CurrentMarker); i >= 0 {
		_ = json.NewDecoder(strings.NewReader(in.Prompt[i+len(schema.CurrentMarker):])).Decode(&doc)
	}
	if doc == nil {
		return badSchema()
	}
	instruction := ""
	if i := strings.Index(in.Prompt, schema.InstructionMarker); i >= 0 {
		instruction = in.Prompt[i+len(schema.InstructionMarker):]
		if j := strings.IndexByte(instruction, '\n'); j >= 0 {
			instruction = instruction[:j]
		}
	}
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	sugg := []any{}
	for _, step := range regexp.MustCompile(`(?i)\s*(?:;|\band then\b)\s*`).Split(strings.TrimSpace(instruction), -1) {
		step = strings.TrimSpace(step)
		if step == "" {
			continue
		}
		switch {
		case addRe.MatchString(step):
			m := addRe.FindStringSubmatch(step)
			if _, exists := props[m[1]]; exists {
				sugg = append(sugg, fmt.Sprintf("%s already exists; nothing added.", m[1]))
				continue
			}
			p := map[string]any{"type": "string", "description": fmt.Sprintf("The %s.", humanWords(m[1]))}
			switch strings.ToLower(m[2]) {
			case "number":
				p["type"] = "number"
			case "integer", "int":
				p["type"] = "integer"
			case "boolean", "bool":
				p["type"] = "boolean"
			case "date":
				p["format"] = "date"
			}
			props[m[1]] = p
			appendOrder(doc, m[1])
		case removeRe.MatchString(step):
			m := removeRe.FindStringSubmatch(step)
			if _, ok := props[m[1]]; !ok {
				sugg = append(sugg, fmt.Sprintf("%s does not exist; nothing removed.", m[1]))
				continue
			}
			delete(props, m[1])
			dropRequired(doc, m[1], "")
		case renameRe.MatchString(step):
			m := renameRe.FindStringSubmatch(step)
			p, ok := props[m[1]]
			if !ok {
				sugg = append(sugg, fmt.Sprintf("%s does not exist; nothing renamed.", m[1]))
				continue
			}
			delete(props, m[1])
			props[m[2]] = p
			dropRequired(doc, m[1], m[2])
		case len(in.Docs) > 0 && docsRe.MatchString(step):
			for _, k := range addDocumentProperties(doc, in.Docs) {
				appendOrder(doc, k)
			}
		default:
			sugg = append(sugg, fmt.Sprintf("The sandbox model did not understand %q; it follows \"add a field X [of type number]\", \"remove Y\" and \"rename A to B\".", step))
		}
	}
	return map[string]any{"schema": doc, "suggestions": sugg}
}

// docsRe is an edit step that asks for what the attached documents hold.
var docsRe = regexp.MustCompile(`(?i)\b(documents?|attachments?|files?|pdfs?|images?)\b`)

// dropRequired renames (or, with to empty, removes) a name in the
// document's required list and property_order.
func dropRequired(doc map[string]any, from, to string) {
	for _, key := range []string{"required", "property_order"} {
		list, ok := doc[key].([]any)
		if !ok {
			continue
		}
		out := make([]any, 0, len(list))
		for _, e := range list {
			switch {
			case e != from:
				out = append(out, e)
			case to != "":
				out = append(out, to)
			}
		}
		doc[key] = out
	}
}

func appendOrder(doc map[string]any, name string) {
	if list, ok := doc["property_order"].([]any); ok {
		doc["property_order"] = append(list, name)
	}
}
