package relmap

import (
	"errors"
	"strings"
	"testing"

	"github.com/entityenrich/enrich/domain/schema"
	"github.com/matryer/is"
)

func kinds(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Kind)+" "+strings.TrimSuffix(c.Table+"."+c.Column, "."))
	}
	return out
}

func TestDiff(t *testing.T) {
	base := `"k": {"type": "string", "identifying": true}, "note": {"type": "string"}, "n": {"type": "integer"}`
	cases := []struct {
		name      string
		props     string
		opts      Options
		want      []string
		transform bool
	}{
		{"same", `{` + base + `}`, Options{}, nil, false},
		{"new nullable column", `{` + base + `, "extra": {"type": "string"}}`, Options{}, []string{"add_column thing.extra"}, false},
		{"new required column is added nullable", `{` + base + `, "extra": {"type": "string"}}`, Options{PropagateNotNull: true}, []string{"add_column thing.extra"}, false},
		{"new array", `{` + base + `, "tags": {"type": "array", "items": {"type": "string"}}}`, Options{}, []string{"add_table thing_tags"}, false},
		{"new index", `{` + base + `}`, Options{IndexScalars: IndexAll}, []string{"add_index thing"}, false},
		{"fewer indexes", `{` + base + `}`, Options{IndexScalars: IndexNone}, []string{"drop_index thing", "drop_index thing"}, false},
		{"type change", `{"k": {"type": "string", "identifying": true}, "note": {"type": "string"}, "n": {"type": "number"}}`, Options{},
			[]string{"column_type thing.n"}, true},
		{"column removed", `{"k": {"type": "string", "identifying": true}, "n": {"type": "integer"}}`, Options{}, []string{"drop_column thing.note"}, true},
		{"key change", `{` + base + `, "k2": {"type": "string", "identifying": true}}`, Options{PKStrategy: Natural},
			[]string{"pk_strategy thing", "key_change thing", "key_change thing", "set_not_null thing.k", "add_column thing.k2", "drop_column thing.ee_id", "drop_index thing"}, true},
		{"surrogate key set change", `{` + base + `, "k2": {"type": "string", "identifying": true}}`, Options{},
			[]string{"key_change thing", "add_column thing.k2", "add_index thing"}, true},
		{"key type change", `{"k": {"type": "integer", "identifying": true}, "note": {"type": "string"}, "n": {"type": "integer"}}`, Options{},
			[]string{"key_change thing", "column_type thing.k", "drop_index thing", "add_index thing"}, true},
	}
	old := project(t, `{`+base+`}`, Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			opts := c.opts
			opts.Previous = &old
			changes, err := Diff(old, project(t, c.props, opts))
			is.NoErr(err)
			is.Equal(kinds(changes), c.want)
			is.Equal(NeedsConfirm(changes), c.transform)
			err = Check(changes, false)
			is.Equal(errors.Is(err, schema.ErrConfirmTransforms), c.transform)
			is.NoErr(Check(changes, true))
		})
	}
}

func TestDiffSQL(t *testing.T) {
	is := is.New(t)
	old := project(t, `{"k": {"type": "string", "identifying": true}, "n": {"type": "integer"}, "gone": {"type": "string"}}`, Options{IndexScalars: IndexNone})
	next := project(t, `{"k": {"type": "string", "identifying": true}, "n": {"type": "number"}, "order": {"type": "string"},
		"tags": {"type": "array", "items": {"type": "string"}}}`, Options{IndexScalars: IndexNone, Previous: &old})
	changes, err := Diff(old, next)
	is.NoErr(err)
	is.Equal(Additive(changes), []string{
		`ALTER TABLE "thing" ADD COLUMN IF NOT EXISTS "order" text`,
		CreateTable(next, *next.Table("thing_tags")),
	})
	var transforms []string
	for _, c := range changes {
		if c.Transform {
			transforms = append(transforms, c.SQL...)
		}
	}
	is.Equal(transforms, []string{
		`ALTER TABLE "thing" ALTER COLUMN "n" TYPE numeric USING "n"::numeric`,
		`ALTER TABLE "thing" DROP COLUMN IF EXISTS "gone"`,
	})
	back, err := Diff(next, old)
	is.NoErr(err)
	is.True(strings.Contains(strings.Join(kinds(back), ","), "drop_table thing_tags"))
}

func TestDiffRefusesDuplicateTables(t *testing.T) {
	is := is.New(t)
	m := project(t, `{"k": {"type": "string", "identifying": true}}`, Options{})
	m.Tables = append(m.Tables, m.Tables[0])
	_, err := Diff(m, m)
	is.True(errors.Is(err, ErrDiff))
}
