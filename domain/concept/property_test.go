package concept_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestProperties(t *testing.T) {
	is := is.New(t)
	props, errs := concept.Properties(doc(t, `{"type": "object", "properties": {
		"name": {"type": "string", "identifying": true},
		"id": {"type": ["string", "null"], "semantic_id": true, "semantic_concept_type": "company",
			"semantic_source_keys": ["name", "hq.city"], "semantic_embedding_model": "builtin::ngram-384", "semantic_threshold": 0.95},
		"hq": {"type": "object", "properties": {"city": {"type": "string", "identifying": true}, "sid": {"type": "string", "semantic_id": true}}},
		"offices": {"type": "array", "items": {"type": "object", "properties": {"sid": {"type": "string", "semantic_id": true}}}}
	}, "$defs": {"Person": {"type": "object", "properties": {"id": {"type": "string", "semantic_id": true}}}}}`))
	is.Equal(len(errs), 0)
	is.Equal(len(props), 4)
	is.Equal(props[0], concept.Property{Path: "$defs.Person.id", Object: []string{"$defs", "Person"}, Name: "id"})
	is.Equal(props[1], concept.Property{Path: "hq.sid", Object: []string{"hq"}, Name: "sid"})
	is.Equal(*props[2].Threshold, 0.95)
	props[2].Threshold = nil
	is.Equal(props[2], concept.Property{Path: "id", Name: "id", ConceptType: "company",
		SourceKeys: []string{"name", "hq.city"}, EmbeddingModel: "builtin::ngram-384"})
	is.Equal(props[3], concept.Property{Path: "offices[].sid", Object: []string{"offices", "[]"}, Name: "sid"})

	props, errs = concept.Properties(doc(t, `{"root": {"properties": {"id": {"type": "string", "semantic_id": true}}}}`))
	is.Equal(len(errs), 0) // the reference's internal form
	is.Equal(props[0].Path, "id")

	props, errs = concept.Properties(doc(t, `{"type": "object", "properties": {"name": {"type": "string"}}}`))
	is.Equal(len(props)+len(errs), 0) // no semantic_id: nothing to say
}

func TestPropertyErrors(t *testing.T) {
	tests := []struct {
		name, props string
		want        []concept.PropertyError
	}{
		{"not a string", `"id": {"type": "integer", "semantic_id": true}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_id", Reason: `a semantic_id property has type "string"`}}},
		{"a string or a number", `"id": {"type": ["string", "number"], "semantic_id": true}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_id", Reason: `a semantic_id property has type "string"`}}},
		{"identifying", `"id": {"type": "string", "semantic_id": true, "identifying": true}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_id", Reason: "a semantic_id property is never identifying"}}},
		{"multilingual", `"id": {"type": "string", "semantic_id": true, "multilingual": true}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_id", Reason: "a semantic_id property is never multilingual"}}},
		{"two in one object", `"a": {"type": "string", "semantic_id": true}, "b": {"type": "string", "semantic_id": true}, "c": {"type": "integer", "semantic_id": true}`,
			[]concept.PropertyError{
				{Path: "b", Keyword: "semantic_id", Reason: "an object has at most one semantic_id property; a already is"},
				{Path: "c", Keyword: "semantic_id", Reason: `a semantic_id property has type "string"`},
				{Path: "c", Keyword: "semantic_id", Reason: "an object has at most one semantic_id property; a already is"}}},
		{"not a boolean", `"id": {"type": "string", "semantic_id": "yes"}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_id", Reason: "must be true or false"}}},
		{"companions without semantic_id", `"n": {"type": "string", "semantic_id": false, "semantic_threshold": 0.9, "semantic_concept_type": "x"}`,
			[]concept.PropertyError{
				{Path: "n", Keyword: "semantic_concept_type", Reason: "only a semantic_id property takes it"},
				{Path: "n", Keyword: "semantic_threshold", Reason: "only a semantic_id property takes it"}}},
		{"threshold out of range", `"id": {"type": "string", "semantic_id": true, "semantic_threshold": 1.5}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_threshold", Reason: "must be a number greater than 0 and at most 1"}}},
		{"threshold zero", `"id": {"type": "string", "semantic_id": true, "semantic_threshold": 0}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_threshold", Reason: "must be a number greater than 0 and at most 1"}}},
		{"threshold a string", `"id": {"type": "string", "semantic_id": true, "semantic_threshold": "0.9"}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_threshold", Reason: "must be a number greater than 0 and at most 1"}}},
		{"blank concept type", `"id": {"type": "string", "semantic_id": true, "semantic_concept_type": " "}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_concept_type", Reason: "must not be blank"}}},
		{"concept type not a string", `"id": {"type": "string", "semantic_id": true, "semantic_concept_type": 3}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_concept_type", Reason: "must be a string"}}},
		{"concept type with a control character", `"id": {"type": "string", "semantic_id": true, "semantic_concept_type": "a\u0000b"}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_concept_type", Reason: "must not hold control characters or invalid UTF-8"}}},
		{"embedding model not a key", `"id": {"type": "string", "semantic_id": true, "semantic_embedding_model": "ngram"}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_embedding_model", Reason: "must be a model key <provider>::<model>"}}},
		{"source keys empty", `"id": {"type": "string", "semantic_id": true, "semantic_source_keys": []}`,
			[]concept.PropertyError{{Path: "id", Keyword: "semantic_source_keys", Reason: "must be a non-empty list of property names"}}},
		{"source keys name unknowns, itself, twice", `"n": {"type": "string"}, "arr": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
			"id": {"type": "string", "semantic_id": true, "semantic_source_keys": ["n", "n", "id", "zz", "arr.x", 4]}`,
			[]concept.PropertyError{
				{Path: "id", Keyword: "semantic_source_keys", Reason: "names n twice"},
				{Path: "id", Keyword: "semantic_source_keys", Reason: "must not name the semantic_id property itself"},
				{Path: "id", Keyword: "semantic_source_keys", Reason: "names zz, which is not a property of the object or of its nested objects"},
				{Path: "id", Keyword: "semantic_source_keys", Reason: "names arr.x, which is not a property of the object or of its nested objects"},
				{Path: "id", Keyword: "semantic_source_keys", Reason: "must list property names (non-empty strings)"}}},
		{"nested path named in the error", `"hq": {"type": "object", "properties": {"sid": {"type": "number", "semantic_id": true}}}`,
			[]concept.PropertyError{{Path: "hq.sid", Keyword: "semantic_id", Reason: `a semantic_id property has type "string"`}}},
		{"array item path named in the error", `"o": {"type": "array", "items": {"properties": {"sid": {"type": "string", "semantic_id": true, "identifying": true}}}}`,
			[]concept.PropertyError{{Path: "o[].sid", Keyword: "semantic_id", Reason: "a semantic_id property is never identifying"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			props, errs := concept.Properties(doc(t, `{"type": "object", "properties": {`+tt.props+`}}`))
			is.Equal(errs, tt.want)
			for _, p := range props {
				for _, e := range errs {
					is.True(p.Path != e.Path) // a property with errors is not listed
				}
			}
		})
	}
	t.Run("error text names the path", func(t *testing.T) {
		is := is.New(t)
		e := concept.PropertyError{Path: "hq.sid", Keyword: "semantic_id", Reason: "r"}
		is.Equal(e.Error(), "hq.sid: semantic_id: r")
	})
}

func TestCheckConceptType(t *testing.T) {
	is := is.New(t)
	is.NoErr(concept.CheckConceptType("company"))
	is.True(concept.CheckConceptType("") != nil)
	is.True(concept.CheckConceptType(string(make([]byte, 101))) != nil)
	long := make([]rune, concept.MaxConceptTypeLen)
	for i := range long {
		long[i] = 'é'
	}
	is.NoErr(concept.CheckConceptType(string(long))) // characters, not bytes
	is.True(concept.CheckConceptType("bad\xff") != nil)
}

func TestReachable(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string // paths
		objects   [][]string
	}{
		{"a $defs reference", `{"type": "object", "properties": {"publisher": {"$ref": "#/$defs/Company"}},
			"$defs": {"Company": {"type": "object", "properties": {"name": {"type": "string", "identifying": true},
				"sid": {"type": "string", "semantic_id": true, "semantic_concept_type": "company"}}}}}`,
			[]string{"publisher.sid"}, [][]string{{"publisher"}}},
		{"definitions, array items and two uses", `{"type": "object", "properties": {
				"owner": {"$ref": "#/definitions/Company"},
				"offices": {"type": "array", "items": {"$ref": "#/definitions/Company"}}},
			"definitions": {"Company": {"type": "object", "properties": {"sid": {"type": "string", "semantic_id": true}}}}}`,
			[]string{"offices[].sid", "owner.sid"}, [][]string{{"offices", "[]"}, {"owner"}}},
		{"a cycle ends", `{"type": "object", "properties": {"org": {"$ref": "#/$defs/Org"}},
			"$defs": {"Org": {"type": "object", "properties": {"sid": {"type": "string", "semantic_id": true},
				"parent": {"$ref": "#/$defs/Org"}, "subs": {"type": "array", "items": {"$ref": "#/$defs/Org"}}}}}}`,
			[]string{"org.sid"}, [][]string{{"org"}}},
		{"a definition nobody uses", `{"type": "object", "properties": {"id": {"type": "string", "semantic_id": true}},
			"$defs": {"Person": {"type": "object", "properties": {"id": {"type": "string", "semantic_id": true}}}}}`,
			[]string{"id"}, [][]string{nil}},
		{"a reference to nothing, and the internal form", `{"root": {"properties": {"x": {"$ref": "#/$defs/Nope"},
			"hq": {"$ref": "#/$defs/Site"}}}, "$defs": {"Site": {"type": "object", "properties": {"sid": {"type": "string", "semantic_id": true}}}}}`,
			[]string{"hq.sid"}, [][]string{{"hq"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			props := concept.Reachable(doc(t, tt.doc))
			var paths []string
			var objects [][]string
			for _, p := range props {
				paths, objects = append(paths, p.Path), append(objects, p.Object)
			}
			is.Equal(paths, tt.want)
			is.Equal(objects, tt.objects)
		})
	}
	is := is.New(t)
	props := concept.Reachable(doc(t, `{"type": "object", "properties": {"publisher": {"$ref": "#/$defs/Company"}},
		"$defs": {"Company": {"type": "object", "properties": {"sid": {"type": "string", "semantic_id": true, "semantic_concept_type": "company"}}}}}`))
	is.Equal(props[0].ConceptType, "company") // the keywords of the definition's property
}
