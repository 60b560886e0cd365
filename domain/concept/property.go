package concept

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/entityenrich/enrich/domain/model"
)

// The schema keywords of semantic concepts (REFERENCE.md §7). They sit on
// a property of an object schema.
const (
	// KeywordID marks the property that carries the object's concept id.
	KeywordID = "semantic_id"
	// KeywordSourceKeys names the sibling properties (dotted paths into
	// 1-1 nested objects allowed) the identity text is composed from,
	// instead of the object's identifying properties.
	KeywordSourceKeys = "semantic_source_keys"
	// KeywordConceptType names the concept type the ids are minted in.
	KeywordConceptType = "semantic_concept_type"
	// KeywordEmbeddingModel names the embedding model of the slice
	// (provider::model) instead of the organization's.
	KeywordEmbeddingModel = "semantic_embedding_model"
	// KeywordThreshold is the property's accept threshold, in (0, 1].
	KeywordThreshold = "semantic_threshold"
)

// MaxConceptTypeLen bounds a concept type's length, in characters.
const MaxConceptTypeLen = 100

// maxPropertyDepth bounds the walk of nested schemas.
const maxPropertyDepth = 32

// Property is a semantic_id property of a schema and its settings.
type Property struct {
	// Path names the property: dotted property names from the root,
	// "[]" after an array, "$defs.<Type>." before a definition's
	// properties ("publisher.sid", "offices[].sid").
	Path string
	// Object is the path of the object holding the property, step by
	// step (nil for the root, ["offices", "[]"] for an array's items,
	// ["$defs", "Company"] for a definition); Name is the property's.
	Object []string
	Name   string
	// ConceptType is semantic_concept_type; "" leaves the default to the
	// caller.
	ConceptType string
	// SourceKeys is semantic_source_keys; nil means the object's
	// identifying properties and its 1-1 nested objects' keys.
	SourceKeys []string
	// EmbeddingModel is semantic_embedding_model; "" means the
	// organization's.
	EmbeddingModel string
	// Threshold is semantic_threshold; nil means the default.
	Threshold *float64
}

// PropertyError is a semantic keyword a schema uses wrongly.
type PropertyError struct {
	// Path names the property as Property.Path does.
	Path    string
	Keyword string
	Reason  string
}

func (e PropertyError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Path, e.Keyword, e.Reason)
}

// Properties lists the semantic_id properties of a JSON Schema document
// (top-level properties, or the reference's internal form with a root
// entity, plus $defs and definitions) and checks the semantic keywords:
//
//   - semantic_id is a boolean, on a string property (nullable allowed),
//     never identifying or multilingual, at most one per object;
//   - semantic_source_keys, semantic_concept_type,
//     semantic_embedding_model and semantic_threshold sit only on a
//     semantic_id property;
//   - semantic_source_keys is a non-empty list of distinct property names
//     of the same object (or dotted paths into its nested objects), not the
//     semantic_id property itself;
//   - semantic_concept_type is a non-blank name of at most
//     MaxConceptTypeLen characters, without control characters;
//   - semantic_embedding_model is a provider::model key;
//   - semantic_threshold is a number in (0, 1].
//
// Both lists are in a stable order (by path, then keyword). A property
// with errors is not listed.
func Properties(doc map[string]any) ([]Property, []PropertyError) {
	w := &propWalk{}
	if _, has := doc["properties"]; has {
		w.object(doc, nil, 0)
	} else if root, ok := doc["root"].(map[string]any); ok {
		w.object(root, nil, 0)
	}
	for _, defs := range []string{"$defs", "definitions"} {
		m, _ := doc[defs].(map[string]any)
		for _, name := range sortedKeys(m) {
			if d, ok := m[name].(map[string]any); ok {
				w.object(d, []string{defs, name}, 0)
			}
		}
	}
	sort.SliceStable(w.props, func(i, j int) bool { return w.props[i].Path < w.props[j].Path })
	sort.SliceStable(w.errs, func(i, j int) bool {
		a, b := w.errs[i], w.errs[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Keyword < b.Keyword
	})
	return w.props, w.errs
}

// Reachable lists the semantic_id properties where a record's output
// carries them: on the root, its nested objects and array items, and in
// the definitions that local $refs (#/$defs/<name>, #/definitions/<name>)
// reach, each at the path of the referring property ("publisher.sid" for
// "publisher": {"$ref": "#/$defs/Company"}); a definition referred to
// twice is listed twice, one that nothing refers to is not listed. A
// definition already entered on the way down is not entered again, so a
// recursive schema ends. Properties with errors are not listed
// (Properties reports them).
func Reachable(doc map[string]any) []Property {
	w := &propWalk{doc: doc, follow: true}
	if _, has := doc["properties"]; has {
		w.object(doc, nil, 0)
	} else if root, ok := doc["root"].(map[string]any); ok {
		w.object(root, nil, 0)
	}
	sort.SliceStable(w.props, func(i, j int) bool { return w.props[i].Path < w.props[j].Path })
	return w.props
}

type propWalk struct {
	props []Property
	errs  []PropertyError
	// doc and follow: Reachable's walk follows doc's local $refs; stack
	// holds the references entered on the way down.
	doc    map[string]any
	follow bool
	stack  []string
}

// enter follows s's local $refs when the walk does, one hop at a time,
// and returns the schema they name (s itself without a $ref, or when the
// reference names nothing here); nil for a reference already entered on
// the way down (a cycle). leave forgets the references it entered.
func (w *propWalk) enter(s map[string]any) (_ map[string]any, leave func()) {
	n := len(w.stack)
	leave = func() { w.stack = w.stack[:n] }
	for w.follow && s != nil {
		ref, _ := s["$ref"].(string)
		target := localDef(w.doc, ref)
		if target == nil {
			break
		}
		if slices.Contains(w.stack, ref) {
			return nil, leave
		}
		w.stack = append(w.stack, ref)
		s = target
	}
	return s, leave
}

// localDef is the definition a local $ref names in doc; nil when it names
// none.
func localDef(doc map[string]any, ref string) map[string]any {
	for _, defs := range []string{"$defs", "definitions"} {
		if name, ok := strings.CutPrefix(ref, "#/"+defs+"/"); ok {
			m, _ := doc[defs].(map[string]any)
			d, _ := m[name].(map[string]any)
			return d
		}
	}
	return nil
}

// object checks the properties of the object schema s at path obj and
// descends into nested objects and array items.
func (w *propWalk) object(s map[string]any, obj []string, depth int) {
	if depth > maxPropertyDepth {
		return
	}
	s, leave := w.enter(s)
	defer leave()
	props, _ := s["properties"].(map[string]any)
	var ids []string
	for _, name := range sortedKeys(props) {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		path := append(slices.Clone(obj), name)
		prop, isID, valid := w.property(props, obj, name, p)
		if isID {
			ids = append(ids, name)
		}
		if valid && len(ids) == 1 {
			w.props = append(w.props, prop)
		}
		q, leaveProp := w.enter(p)
		if _, nested := q["properties"]; nested {
			w.object(q, path, depth+1)
		}
		if items, ok := q["items"].(map[string]any); ok {
			w.object(items, append(path, "[]"), depth+1)
		}
		leaveProp()
	}
	if len(ids) > 1 {
		for _, name := range ids[1:] {
			w.errs = append(w.errs, PropertyError{Path: showPath(append(slices.Clone(obj), name)), Keyword: KeywordID,
				Reason: fmt.Sprintf("an object has at most one semantic_id property; %s already is", ids[0])})
		}
	}
}

// property checks the semantic keywords of property name (schema p) of
// the object whose properties are siblings. isID says p is marked
// semantic_id; valid that it is marked and uses the keywords rightly.
func (w *propWalk) property(siblings map[string]any, obj []string, name string, p map[string]any) (prop Property, isID, valid bool) {
	path := showPath(append(slices.Clone(obj), name))
	before := len(w.errs)
	fail := func(kw, reason string) {
		w.errs = append(w.errs, PropertyError{Path: path, Keyword: kw, Reason: reason})
	}
	raw, has := p[KeywordID]
	isID, isBool := raw.(bool)
	if has && !isBool {
		fail(KeywordID, "must be true or false")
	}
	if !isID {
		for _, kw := range []string{KeywordConceptType, KeywordEmbeddingModel, KeywordSourceKeys, KeywordThreshold} {
			if _, ok := p[kw]; ok {
				fail(kw, "only a semantic_id property takes it")
			}
		}
		return Property{}, false, false
	}
	if !stringType(p) {
		fail(KeywordID, `a semantic_id property has type "string"`)
	}
	for _, kw := range []string{"identifying", "multilingual"} {
		if p[kw] == true {
			fail(KeywordID, "a semantic_id property is never "+kw)
		}
	}
	prop = Property{Path: path, Object: slices.Clone(obj), Name: name}
	prop.ConceptType = w.conceptType(p, fail)
	prop.EmbeddingModel = w.embeddingModel(p, fail)
	prop.Threshold = w.threshold(p, fail)
	prop.SourceKeys = w.sourceKeys(p, siblings, name, fail)
	return prop, true, len(w.errs) == before
}

func (w *propWalk) conceptType(p map[string]any, fail func(string, string)) string {
	raw, ok := p[KeywordConceptType]
	if !ok {
		return ""
	}
	s, isStr := raw.(string)
	if !isStr {
		fail(KeywordConceptType, "must be a string")
		return ""
	}
	if reason := checkConceptType(s); reason != "" {
		fail(KeywordConceptType, reason)
		return ""
	}
	return s
}

// CheckConceptType reports why t cannot name a concept type (nil when it
// can): a non-blank name of at most MaxConceptTypeLen characters without
// control characters or bytes that are not UTF-8.
func CheckConceptType(t string) error {
	if reason := checkConceptType(t); reason != "" {
		return fmt.Errorf("concept type %q %s", t, reason)
	}
	return nil
}

func checkConceptType(t string) string {
	switch {
	case strings.TrimSpace(t) == "":
		return "must not be blank"
	case len([]rune(t)) > MaxConceptTypeLen:
		return fmt.Sprintf("must be at most %d characters", MaxConceptTypeLen)
	case strings.ContainsFunc(t, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }):
		return "must not hold control characters or invalid UTF-8"
	}
	return ""
}

func (w *propWalk) embeddingModel(p map[string]any, fail func(string, string)) string {
	raw, ok := p[KeywordEmbeddingModel]
	if !ok {
		return ""
	}
	s, _ := raw.(string)
	if _, err := model.ParseKey(s); err != nil {
		fail(KeywordEmbeddingModel, "must be a model key <provider>::<model>")
		return ""
	}
	return s
}

func (w *propWalk) threshold(p map[string]any, fail func(string, string)) *float64 {
	raw, ok := p[KeywordThreshold]
	if !ok {
		return nil
	}
	f, isNum := raw.(float64)
	if !isNum || CheckThreshold(f) != nil {
		fail(KeywordThreshold, "must be a number greater than 0 and at most 1")
		return nil
	}
	return &f
}

func (w *propWalk) sourceKeys(p, siblings map[string]any, self string, fail func(string, string)) []string {
	raw, ok := p[KeywordSourceKeys]
	if !ok {
		return nil
	}
	list, isList := raw.([]any)
	if !isList || len(list) == 0 {
		fail(KeywordSourceKeys, "must be a non-empty list of property names")
		return nil
	}
	keys := make([]string, 0, len(list))
	for _, v := range list {
		k, _ := v.(string)
		switch {
		case k == "":
			fail(KeywordSourceKeys, "must list property names (non-empty strings)")
		case k == self:
			fail(KeywordSourceKeys, "must not name the semantic_id property itself")
		case slices.Contains(keys, k):
			fail(KeywordSourceKeys, fmt.Sprintf("names %s twice", k))
		case !resolves(siblings, k):
			fail(KeywordSourceKeys, fmt.Sprintf("names %s, which is not a property of the object or of its nested objects", k))
		default:
			keys = append(keys, k)
		}
	}
	return keys
}

// resolves reports whether key names a property among siblings: a name,
// or a dotted path through nested objects (never through an array).
func resolves(siblings map[string]any, key string) bool {
	if _, ok := siblings[key]; ok {
		return true
	}
	head, rest, dotted := strings.Cut(key, ".")
	if !dotted {
		return false
	}
	p, _ := siblings[head].(map[string]any)
	nested, _ := p["properties"].(map[string]any)
	return nested != nil && resolves(nested, rest)
}

// stringType reports whether p is a string schema: "string", or a list of
// "string" and "null".
func stringType(p map[string]any) bool {
	switch t := p["type"].(type) {
	case string:
		return t == "string"
	case []any:
		str := false
		for _, v := range t {
			switch v {
			case "string":
				str = true
			case "null":
			default:
				return false
			}
		}
		return str
	}
	return false
}

func showPath(steps []string) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 && s != "[]" {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
