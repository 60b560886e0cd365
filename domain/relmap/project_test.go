package relmap

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestColumnTypes(t *testing.T) {
	cases := []struct{ prop, want string }{
		{`{"type": "string"}`, TypeText},
		{`{"type": ["string", "null"]}`, TypeText},
		{`{"type": "integer"}`, TypeBigint},
		{`{"type": "number"}`, TypeNumeric},
		{`{"type": "boolean"}`, TypeBoolean},
		{`{"type": "string", "format": "date"}`, TypeDate},
		{`{"type": "string", "format": "date-time"}`, TypeTimestamp},
		{`{"type": "string", "format": "uuid"}`, TypeUUID},
		{`{"type": "string", "format": "email"}`, TypeText},
		{`{"type": "string", "format": "uri"}`, TypeText},
		{`{"type": "string", "db_type": "varchar", "db_type_length": 20}`, "varchar(20)"},
		{`{"type": "string", "db_type": "char", "db_type_length": 2}`, "char(2)"},
		{`{"type": "number", "db_type": "double"}`, TypeDouble},
		{`{"type": "integer", "db_type": "smallint"}`, "smallint"},
		{`{"type": "string", "db_type": "timestamp"}`, TypeTimestamp},
		{`{"type": "string", "db_type": "bogus"}`, TypeText},
		{`{"type": "object"}`, TypeJSONB},
		{`{"type": ["string", "integer"]}`, TypeJSONB},
		{`{}`, TypeJSONB},
		{`{"type": "string", "multilingual": true}`, TypeJSONB},
		{`{"enum": ["a", "b"]}`, TypeText},
		{`{"type": "array", "items": {"type": "array", "items": {"type": "string"}}}`, TypeJSONB},
	}
	for _, c := range cases {
		t.Run(c.prop, func(t *testing.T) {
			is := is.New(t)
			m := project(t, `{"k": {"type": "string", "identifying": true}, "p": `+c.prop+`}`, Options{})
			col := m.Root().Column("p")
			is.True(col != nil)
			is.Equal(col.Type, c.want)
		})
	}
}

func TestNotNull(t *testing.T) {
	is := is.New(t)
	doc := `{"title": "T", "type": "object", "required": ["a", "n", "o"], "properties": {
		"k": {"type": "string", "identifying": true},
		"a": {"type": "string"}, "b": {"type": "string"}, "n": {"type": ["string", "null"]},
		"o": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}},
		"q": {"type": "object", "required": ["y"], "properties": {"y": {"type": "string"}}}}}`
	m, err := Project(json.RawMessage(doc), Options{PropagateNotNull: true})
	is.NoErr(err)
	r := m.Root()
	is.True(r.Column("a").NotNull)
	is.True(!r.Column("b").NotNull)
	is.True(!r.Column("n").NotNull)   // nullable
	is.True(r.Column("o_x").NotNull)  // required all the way
	is.True(!r.Column("q_y").NotNull) // its object is optional
	is.True(!r.Column("k").NotNull)   // surrogate: any one key suffices
	m, err = Project(json.RawMessage(doc), Options{})
	is.NoErr(err)
	is.True(!m.Root().Column("a").NotNull) // not propagated by default
}

func company(t *testing.T, opts Options) Map {
	t.Helper()
	raw, err := os.ReadFile("testdata/company.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Project(raw, opts)
	if err != nil {
		t.Fatalf("Project: %v", err)
	}
	return m
}

func tableNames(m Map) []string {
	var out []string
	for _, t := range m.Tables {
		out = append(out, t.Name)
	}
	return out
}

func TestKeys(t *testing.T) {
	t.Run("surrogate", func(t *testing.T) {
		is := is.New(t)
		m := company(t, Options{})
		is.Equal(m.EntityType, "Company")
		is.Equal(tableNames(m), []string{"company", "company_people", "company_people_emails", "company_tags"})
		root := m.Root()
		is.Equal(root.PrimaryKey, []string{ColID})
		is.Equal(root.Column("hq_city").Source, "hq.city") // a 1-1 object is flattened
		is.Equal(root.Column("hq_geo_lat").Type, TypeNumeric)
		is.Equal(len(m.KeyColumns()), 2)
		people := m.Table("company_people")
		is.Equal(people.Kind, KindObjects)
		is.Equal(people.PrimaryKey, []string{ColID})
		is.Equal(people.ForeignKey, []string{ColParentID})
		is.Equal(people.Unique, []string{ColParentID, ColOrdinal})
		is.Equal(people.Column("name").Role, RoleKey) // an item key
		emails := m.Table("company_people_emails")
		is.Equal(emails.Parent, "company_people")
		is.Equal(emails.Kind, KindScalars)
		is.Equal(emails.Column(ColValue).Type, TypeText)
	})
	t.Run("natural", func(t *testing.T) {
		is := is.New(t)
		m := company(t, Options{PKStrategy: Natural})
		root := m.Root()
		is.Equal(root.PrimaryKey, []string{"country", "name"})
		is.True(root.Column("name").NotNull)
		is.True(root.Column(ColID) == nil)
		emails := m.Table("company_people_emails")
		is.Equal(emails.PrimaryKey, []string{"country", "name", "ee_ordinal_1", "ee_ordinal_2"})
		is.Equal(emails.ForeignKey, []string{"country", "name", "ee_ordinal_1"})
		// the item's own "name" makes way for the inherited key column
		people := m.Table("company_people")
		is.Equal(people.Column("name").Role, RoleParent)
		is.True(slices.ContainsFunc(people.Columns, func(c Column) bool { return c.Source == "name" && c.Role == RoleKey }))
	})
	t.Run("semantic_id and database_key are keys; a multilingual key gets a key column", func(t *testing.T) {
		is := is.New(t)
		m := project(t, `{"sid": {"type": "string", "semantic_id": true}, "code": {"type": "string", "database_key": true},
			"label": {"type": "string", "identifying": true, "multilingual": true}}`, Options{KeyLanguage: "en"})
		var keys []string
		for _, c := range m.KeyColumns() {
			keys = append(keys, c.Name)
		}
		is.Equal(keys, []string{"code", "label_key", "sid"})
		is.Equal(m.Root().Column("label").Type, TypeJSONB)
		is.Equal(m.Root().Column("label_key").Language, "en")
	})
}

func TestProjectErrors(t *testing.T) {
	cases := []struct {
		name, doc string
		opts      Options
		want      error
	}{
		{"not an object", `[1]`, Options{}, ErrContract},
		{"no properties", `{"type": "object"}`, Options{}, ErrContract},
		{"no key", `{"type": "object", "properties": {"a": {"type": "string"}}}`, Options{}, ErrNoKey},
		{"bad pk_strategy", `{"type": "object", "properties": {"a": {"type": "string", "identifying": true}}}`, Options{PKStrategy: "uuid"}, ErrOptions},
		{"bad index_scalars", `{"type": "object", "properties": {"a": {"type": "string", "identifying": true}}}`, Options{IndexScalars: "some"}, ErrOptions},
		{"multilingual key without language", `{"type": "object", "properties": {"a": {"type": "string", "identifying": true, "multilingual": true}}}`, Options{}, ErrKeyLanguage},
		{"object key", `{"type": "object", "properties": {"a": {"type": "object", "identifying": true}}}`, Options{}, ErrContract},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			_, err := Project(json.RawMessage(c.doc), c.opts)
			is.True(errors.Is(err, c.want))
		})
	}
}

func TestRecursiveRefEnds(t *testing.T) {
	is := is.New(t)
	doc := `{"type": "object", "properties": {"k": {"type": "string", "identifying": true}, "parent": {"$ref": "#/$defs/Node"}},
		"$defs": {"Node": {"type": "object", "properties": {"n": {"type": "string"}, "up": {"$ref": "#/$defs/Node"},
		"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}`
	m, err := Project(json.RawMessage(doc), Options{})
	is.NoErr(err)
	is.True(len(m.Tables) <= MaxTables)
	for _, tb := range m.Tables {
		is.True(tb.Depth <= maxDepth)
	}
}

func TestIndexScalars(t *testing.T) {
	count := func(m Map) (n int, names []string) {
		for _, tb := range m.Tables {
			for _, x := range tb.Indexes {
				n++
				names = append(names, x.Name+" "+x.Method)
			}
		}
		return n, names
	}
	is := is.New(t)
	none, _ := count(company(t, Options{IndexScalars: IndexNone}))
	keys, keyNames := count(company(t, Options{IndexScalars: IndexKeys}))
	filt, filtNames := count(company(t, Options{}))
	all, _ := count(company(t, Options{IndexScalars: IndexAll}))
	is.Equal(none, 0)
	is.Equal(keyNames, []string{"company_country_idx hash", "company_name_idx hash", "company_people_name_idx hash"})
	is.True(keys < filt && filt < all)
	is.True(slices.Contains(filtNames, "company_employees_idx btree"))  // index intent
	is.True(slices.Contains(filtNames, "company_people_role_idx hash")) // an enum
	is.True(!slices.Contains(filtNames, "company_website_idx hash"))    // free text
	nat, natNames := count(company(t, Options{PKStrategy: Natural, IndexScalars: IndexKeys}))
	is.Equal(nat, 1) // the root's keys are its primary key
	is.Equal(natNames, []string{"company_people_name_866f855c_idx hash"})
}

func TestDDL(t *testing.T) {
	is := is.New(t)
	m := project(t, `{"order": {"type": "string", "identifying": true}, "user": {"type": "string"},
		"lines": {"type": "array", "items": {"type": "object", "properties": {"select": {"type": "integer"}}}}}`, Options{})
	ddl := DDL(m)
	is.Equal(len(ddl), 4) // two tables, an index on the key, one on the integer
	is.True(strings.HasPrefix(ddl[0], `CREATE TABLE IF NOT EXISTS "thing" (`))
	is.True(strings.Contains(ddl[0], `"order" text`))
	is.True(strings.Contains(ddl[0], `"user" text`))
	is.True(strings.Contains(ddl[0], `CONSTRAINT "thing_pkey" PRIMARY KEY ("ee_id")`))
	is.Equal(ddl[1], `CREATE INDEX IF NOT EXISTS "thing_order_idx" ON "thing" USING hash ("order")`)
	is.True(strings.HasPrefix(ddl[2], `CREATE TABLE IF NOT EXISTS "thing_lines" (`))
	is.True(strings.Contains(ddl[2], `"select" bigint`))
	is.True(strings.Contains(ddl[2], `FOREIGN KEY ("ee_parent_id") REFERENCES "thing" ("ee_id") ON DELETE CASCADE`))
	is.Equal(ddl[3], `CREATE INDEX IF NOT EXISTS "thing_lines_select_idx" ON "thing_lines" USING btree ("select")`)
	is.Equal(DDL(m), ddl) // deterministic
}

func TestMapJSONRoundTrip(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{PKStrategy: Natural})
	raw, err := json.Marshal(m)
	is.NoErr(err)
	var back Map
	is.NoErr(json.Unmarshal(raw, &back))
	is.Equal(DDL(back), DDL(m))
	again := company(t, Options{PKStrategy: Natural, Previous: &back})
	changes, err := Diff(back, again)
	is.NoErr(err)
	is.Equal(len(changes), 0)
}
