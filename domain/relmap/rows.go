package relmap

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/entityenrich/enrich/domain/schema"
)

// rowCtx is one rendered row: its source object and its primary key.
type rowCtx struct {
	obj  any
	pk   map[string]any
	path string // for error messages: "" for the entity, "tags.2" for an item
}

// entity renders the entity row, then the child tables' replacement.
func (r *renderer) entity(obj map[string]any) error {
	root := r.m.Root()
	row := map[string]any{ColRevision: r.revision}
	pk := r.primaryKey()
	for k, v := range pk {
		row[k] = v
	}
	if err := r.cells(*root, obj, row, ""); err != nil {
		return err
	}
	values, err := r.values(*root, row, "")
	if err != nil {
		return err
	}
	r.upsertRoot(*root, values)
	r.rows = append(r.rows, Rows{Table: root.Name, Rows: []map[string]any{row}})
	ctx := map[string][]rowCtx{root.Name: {{obj: obj, pk: pk}}}
	for _, t := range r.m.Tables[1:] {
		if err := r.child(t, ctx); err != nil {
			return err
		}
	}
	return nil
}

// cells fills a row's property columns from its object.
func (r *renderer) cells(t Table, obj map[string]any, row map[string]any, at string) error {
	for _, c := range t.Columns {
		if c.Role != RoleKey && c.Role != RoleValue {
			continue
		}
		v, err := cellValue(c, obj)
		if err != nil {
			return withPath(err, join(at, c.Source))
		}
		row[c.Name] = v
	}
	return nil
}

// values renders a row's literals in column order.
func (r *renderer) values(t Table, row map[string]any, at string) ([]string, error) {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		lit, err := Literal(row[c.Name], c.Type)
		if err != nil {
			return nil, withPath(err, join(at, firstNonEmpty(c.Source, c.Name)))
		}
		out[i] = lit
	}
	return out, nil
}

// upsertRoot adds the entity row's upsert, its revision cell left out.
func (r *renderer) upsertRoot(t Table, values []string) {
	for i, c := range t.Columns {
		if c.Name == ColRevision {
			values[i] = ""
		}
	}
	r.parts = append(r.parts, Part{Table: t.Name, Op: "upsert", Columns: columnNames(t), Rows: [][]string{values},
		Key: t.PrimaryKey})
}

// child renders one child table: the guarded delete of the entity's rows
// (depth 1; deeper tables go by cascade), then the guarded insert of the
// current items.
func (r *renderer) child(t Table, ctx map[string][]rowCtx) error {
	if r.match == "" {
		where, err := r.keyMatch()
		if err != nil {
			return err
		}
		r.match = where
	}
	if t.Depth == 1 {
		r.parts = append(r.parts, Part{Table: t.Name, Op: "delete", Match: r.parentMatch(t)})
	}
	var tuples [][]string
	var rows []map[string]any
	for _, parent := range ctx[t.Parent] {
		pm, _ := parent.obj.(map[string]any)
		arr, _ := schema.Lookup(pm, t.Path)
		items, _ := arr.([]any)
		for i, item := range items {
			at := join(parent.path, strings.Join(t.Path, ".")) + "." + strconv.Itoa(i)
			row, ok, err := r.itemRow(t, parent, i, item, at)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			vals, err := r.values(t, row, at)
			if err != nil {
				return err
			}
			tuples = append(tuples, vals)
			rows = append(rows, row)
			ctx[t.Name] = append(ctx[t.Name], rowCtx{obj: item, pk: pick(row, t.PrimaryKey), path: at})
		}
	}
	if len(tuples) == 0 {
		return nil
	}
	r.rows = append(r.rows, Rows{Table: t.Name, Rows: rows})
	r.parts = append(r.parts, Part{Table: t.Name, Op: "insert", Columns: columnNames(t), Rows: tuples})
	return nil
}

// itemRow is the row of one array item; false for a null item of an
// array of objects.
func (r *renderer) itemRow(t Table, parent rowCtx, i int, item any, at string) (map[string]any, bool, error) {
	row := map[string]any{}
	for _, c := range t.Columns {
		switch c.Role {
		case RoleParent:
			if r.m.PKStrategy == Surrogate {
				row[c.Name] = parent.pk[ColID]
			} else {
				row[c.Name] = parent.pk[c.Name]
			}
		case RoleOrdinal:
			row[c.Name] = i
		case RoleID:
			row[c.Name] = uuidOf(fmt.Sprint(parent.pk[ColID]) + "\x00" + t.Source + "\x00" + strconv.Itoa(i))
		case RoleItem:
			row[c.Name] = item
		}
	}
	if t.Kind == KindScalars {
		return row, true, nil
	}
	if item == nil {
		return nil, false, nil
	}
	obj, ok := item.(map[string]any)
	if !ok {
		return nil, false, &ValueError{Path: at, Detail: "expected an object, got " + kind(item)}
	}
	return row, true, r.cells(t, obj, row, at)
}

// parentMatch selects a depth-1 table's rows of this entity.
func (r *renderer) parentMatch(t Table) string {
	var conds []string
	for _, name := range t.ForeignKey {
		v := r.pk[name]
		if r.m.PKStrategy == Surrogate {
			v = r.pk[ColID]
		}
		lit, _ := Literal(v, t.Column(name).Type) // rendered before, in keyMatch
		conds = append(conds, QuoteIdent(name)+" = "+lit)
	}
	return strings.Join(conds, " AND ")
}

func columnNames(t Table) []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

func pick(row map[string]any, names []string) map[string]any {
	out := make(map[string]any, len(names))
	for _, n := range names {
		out[n] = row[n]
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "." + b
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
