package relmap

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestIdent(t *testing.T) {
	cases := []struct{ in, want string }{
		{"name", "name"},
		{"fooBar", "foo_bar"},
		{"Foo Bar", "foo_bar"},
		{"foo-bar", "foo_bar"},
		{"foo__bar_", "foo_bar"},
		{"a.b", "a_b"},
		{"2fast", "c_2fast"},
		{"order", "order"},
		{"HTTPServer", "httpserver"},
		{"year2020Total", "year2020_total"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			is := is.New(t)
			is.Equal(Ident(c.in), c.want)
		})
	}
	t.Run("lossy names keep a hash and stay apart", func(t *testing.T) {
		is := is.New(t)
		a, b := Ident("名前"), Ident("名字")
		is.True(strings.HasPrefix(a, "c_"))
		is.True(a != b)
		is.Equal(Ident("prix€"), Ident("prix€")) // deterministic
		is.True(Ident("prix€") != "prix")
		is.True(Ident(`a"b`) != "a_b") // a quote is lost, so hashed
	})
}

func TestFit(t *testing.T) {
	is := is.New(t)
	short := strings.Repeat("a", 63)
	is.Equal(Fit(short), short)
	long1 := strings.Repeat("x", 80) + "_one"
	long2 := strings.Repeat("x", 80) + "_two"
	f1, f2 := Fit(long1), Fit(long2)
	is.Equal(len(f1), 63)
	is.True(len(f2) <= 63)
	is.True(f1 != f2)        // a shared prefix does not collide
	is.Equal(Fit(long1), f1) // deterministic
	is.True(!strings.Contains(f1, "__"))
}

func TestQuoteIdent(t *testing.T) {
	is := is.New(t)
	is.Equal(QuoteIdent("order"), `"order"`)
	is.Equal(QuoteIdent(`a"b`), `"a""b"`)
}

// project is Project of a root with the given properties (JSON), failing
// the test on error.
func project(t *testing.T, props string, opts Options) Map {
	t.Helper()
	m, err := Project(json.RawMessage(`{"title":"Thing","type":"object","properties":`+props+`}`), opts)
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	return m
}

func TestNamesNeverCollide(t *testing.T) {
	is := is.New(t)
	long := strings.Repeat("veryLongPropertyName", 5)
	props := fmt.Sprintf(`{
		"key": {"type": "string", "identifying": true},
		"fooBar": {"type": "string"}, "foo_bar": {"type": "string"}, "Foo Bar": {"type": "string"}, "foo-bar": {"type": "string"},
		"a": {"type": "object", "properties": {"b": {"type": "string"}}}, "a_b": {"type": "integer"},
		"ee_id": {"type": "string"}, "ee_revision": {"type": "string"},
		"order": {"type": "string"}, "select": {"type": "boolean"},
		"%[1]sOne": {"type": "string"}, "%[1]sTwo": {"type": "string"},
		"%[1]sList": {"type": "array", "items": {"type": "string"}},
		"%[1]sListB": {"type": "array", "items": {"type": "string"}}
	}`, long)
	for _, pk := range []string{Surrogate, Natural} {
		m := project(t, props, Options{PKStrategy: pk, IndexScalars: IndexAll})
		rel := map[string]bool{}
		for _, tb := range m.Tables {
			for _, n := range append([]string{tb.Name, tb.PKName, tb.UniqueName}, indexNames(tb)...) {
				if n == "" {
					continue
				}
				is.True(len(n) <= MaxIdentLen)
				is.True(!rel[n]) // relation names are unique
				rel[n] = true
			}
			cols := map[string]bool{}
			for _, c := range tb.Columns {
				is.True(len(c.Name) <= MaxIdentLen)
				is.True(!cols[c.Name]) // column names are unique per table
				cols[c.Name] = true
			}
		}
		root := m.Root()
		is.Equal(root.Column("order").Source, "order")
		is.Equal(root.Column("foo_bar").Source, "Foo Bar") // first in sort order keeps the plain name
		is.Equal(root.Column("a_b").Source, "a.b")
		is.Equal(len(m.Tables), 3) // the two long arrays are two tables
	}
	m := project(t, props, Options{})
	is.Equal(m.Root().Column(ColID).Role, RoleID) // the property ee_id did not take the system name
}

func indexNames(t Table) []string {
	var out []string
	for _, x := range t.Indexes {
		out = append(out, x.Name)
	}
	return out
}

func TestPreviousKeepsShippedNames(t *testing.T) {
	is := is.New(t)
	old := project(t, `{"key": {"type": "string", "identifying": true}, "foo_bar": {"type": "string"}}`, Options{})
	is.Equal(old.Root().Column("foo_bar").Source, "foo_bar")
	newProps := `{"key": {"type": "string", "identifying": true}, "foo_bar": {"type": "string"}, "fooBar": {"type": "integer"}}`

	// Without the shipped map, the new property sorts first and takes the name.
	fresh := project(t, newProps, Options{})
	is.Equal(fresh.Root().Column("foo_bar").Source, "fooBar")
	changes, err := Diff(old, fresh)
	is.NoErr(err)
	is.True(NeedsConfirm(changes))

	// With it, the shipped column keeps its name and the change is additive.
	pinned := project(t, newProps, Options{Previous: &old})
	is.Equal(pinned.Root().Column("foo_bar").Source, "foo_bar")
	changes, err = Diff(old, pinned)
	is.NoErr(err)
	is.True(!NeedsConfirm(changes))
	is.Equal(len(changes), 2) // the column and its (filterable bigint) index
	is.Equal(changes[0].Kind, AddColumn)
	is.Equal(changes[1].Kind, AddIndex)
}

func TestTakenNamesAreAvoided(t *testing.T) {
	is := is.New(t)
	first := project(t, `{"k": {"type": "string", "identifying": true}, "xs": {"type": "array", "items": {"type": "string"}}}`, Options{})
	second := project(t, `{"k": {"type": "string", "identifying": true}, "xs": {"type": "array", "items": {"type": "string"}}}`,
		Options{Taken: first.Relations()})
	is.Equal(first.Root().Name, "thing")
	is.True(second.Root().Name != "thing")
	taken := map[string]bool{}
	for _, n := range first.Relations() {
		taken[n] = true
	}
	for _, n := range second.Relations() {
		is.True(!taken[n]) // two schemas of one database never share a relation name
	}
	// a map's own shipped names win over Taken
	again := project(t, `{"k": {"type": "string", "identifying": true}, "xs": {"type": "array", "items": {"type": "string"}}}`,
		Options{Taken: first.Relations(), Previous: &first})
	is.Equal(again.Relations(), first.Relations())
}

var identShape = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func FuzzIdent(f *testing.F) {
	for _, s := range []string{"", "name", "fooBar", "名前", "a\x00b", `"; DROP TABLE x; --`, strings.Repeat("Ab", 100), "__", "9", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id := Ident(s)
		if len(id) > MaxIdentLen || !identShape.MatchString(id) || strings.HasSuffix(id, "_") {
			t.Fatalf("Ident(%q) = %q", s, id)
		}
		if Ident(id) != id {
			t.Fatalf("Ident is not stable on its own output: %q -> %q", id, Ident(id))
		}
	})
}
