package jsondoc_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

func TestHasType(t *testing.T) {
	tests := []struct {
		p    map[string]any
		want string
		ok   bool
	}{
		{map[string]any{"type": "object"}, "object", true},
		{map[string]any{"type": []any{"object", "null"}}, "object", true},
		{map[string]any{"type": []any{"string", "null"}}, "object", false},
		{map[string]any{"type": "string"}, "object", false},
		{map[string]any{}, "object", false},
		{nil, "object", false},
	}
	for _, tt := range tests {
		is.New(t).Equal(jsondoc.HasType(tt.p, tt.want), tt.ok)
	}
}

func TestDeref(t *testing.T) {
	is := is.New(t)
	person := map[string]any{"type": "object"}
	doc := map[string]any{
		"$defs":       map[string]any{"Person": person, "Alias": map[string]any{"$ref": "#/$defs/Person"}, "Loop": map[string]any{"$ref": "#/$defs/Loop"}},
		"definitions": map[string]any{"Old": person},
	}
	ref := func(r string) map[string]any { return map[string]any{"$ref": r} }
	is.Equal(jsondoc.Deref(doc, ref("#/$defs/Person")), person)
	is.Equal(jsondoc.Deref(doc, ref("#/$defs/Alias")), person) // two hops
	is.Equal(jsondoc.Deref(doc, ref("#/definitions/Old")), person)
	missing := ref("#/$defs/Nobody")
	is.Equal(jsondoc.Deref(doc, missing), missing) // names nothing: itself
	plain := map[string]any{"type": "string"}
	is.Equal(jsondoc.Deref(doc, plain), plain)
	is.True(jsondoc.Deref(doc, ref("#/$defs/Loop")) != nil) // a cycle ends
	is.Equal(jsondoc.Deref(doc, nil), nil)
}
