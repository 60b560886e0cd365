package concept_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func TestIdentityText(t *testing.T) {
	book := map[string]any{
		"title": "Dune", "isbn": "978-0441013593", "year": float64(1965), "pages": json.Number("412"), "ebook": true,
		"publisher": map[string]any{"name": "Chilton Books", "city": "Philadelphia", "owner": map[string]any{"name": "Chilton Co"}},
		"authors":   []any{map[string]any{"name": "Frank Herbert"}},
		"blank":     "  ", "none": nil, "tags": []any{"sf"}, "meta": map[string]any{"k": "v"},
	}
	tests := []struct {
		name        string
		identifying []string
		nested      [][]string
		want        string
	}{
		{"own keys by name", []string{"title", "isbn"}, nil, "978-0441013593 Dune"},
		{"order of the arguments does not matter", []string{"isbn", "title"}, nil, "978-0441013593 Dune"},
		{"a key named twice is read once", []string{"title", "title"}, nil, "Dune"},
		{"numbers and booleans", []string{"year", "pages", "ebook"}, nil, "true 412 1965"},
		{"nested 1-1 keys after own keys", []string{"title"}, [][]string{{"publisher", "name"}}, "Dune Chilton Books"},
		{"nested paths sorted", []string{"title"}, [][]string{{"publisher", "owner", "name"}, {"publisher", "name"}},
			"Dune Chilton Books Chilton Co"},
		{"array items are excluded", []string{"title"}, [][]string{{"authors", "name"}, {"authors", "0", "name"}}, "Dune"},
		{"absent, null, blank, object and array values add nothing", []string{"missing", "none", "blank", "tags", "meta", "title"}, nil, "Dune"},
		{"a path through a scalar reads nothing", nil, [][]string{{"title", "x"}, {}}, ""},
		{"no keys", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(concept.IdentityText(book, tt.identifying, tt.nested), tt.want)
		})
	}
	t.Run("nil object", func(t *testing.T) {
		is.New(t).Equal(concept.IdentityText(nil, []string{"a"}, [][]string{{"b", "c"}}), "")
	})
	t.Run("numbers in shortest form", func(t *testing.T) {
		is := is.New(t)
		obj := map[string]any{"a": 1e21, "b": float32(0.1), "c": 12, "d": int64(-3), "e": 2.5}
		is.Equal(concept.IdentityText(obj, []string{"a", "b", "c", "d", "e"}, nil), "1000000000000000000000 0.1 12 -3 2.5")
	})
}

func FuzzIdentityText(f *testing.F) {
	f.Add(`{"name": "IBM", "hq": {"city": "Armonk"}}`, "name", "hq", "city")
	f.Add(`{"a": [{"b": 1}], "c": null}`, "c", "a", "b")
	f.Add(`{"x": 1.5e300, "y": {"z": true}}`, "x", "y", "z")
	f.Add(`{"": "", "k": "\u0000"}`, "", "k", "")
	f.Fuzz(func(t *testing.T, doc, own, head, tail string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		ids := []string{own, head}
		nested := [][]string{{head, tail}, {own, tail}}
		got := concept.IdentityText(obj, ids, nested)
		// Stable whatever the order of the arguments.
		if again := concept.IdentityText(obj, []string{head, own}, [][]string{{own, tail}, {head, tail}}); again != got {
			t.Fatalf("order changes the text: %q vs %q", got, again)
		}
		// The normalized text normalizes to itself.
		if n := concept.Normalize(got); concept.Normalize(n) != n {
			t.Fatalf("normalizing %q is not stable", got)
		}
	})
}
