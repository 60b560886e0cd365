package relmap

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/schema"
)

// ChangeKind names one structural change between two maps.
type ChangeKind string

// Additive changes apply as DDL without touching data; the others are
// transforms, which need confirm_transforms.
const (
	AddTable      ChangeKind = "add_table"
	AddColumn     ChangeKind = "add_column"
	AddIndex      ChangeKind = "add_index"
	DropIndex     ChangeKind = "drop_index"
	DropNotNull   ChangeKind = "drop_not_null"
	SetNotNull    ChangeKind = "set_not_null"
	TypeChange    ChangeKind = "column_type"
	DropColumn    ChangeKind = "drop_column"
	DropTable     ChangeKind = "drop_table"
	KeyChange     ChangeKind = "key_change"
	StrategyShift ChangeKind = "pk_strategy"
)

// Change is one structural change. SQL is the DDL that applies it: for an
// additive change, what a schema delta ships; for a transform, the
// statement a confirmed migration would run (empty for a key change,
// which needs the consumer to reload from a snapshot).
type Change struct {
	Kind      ChangeKind `json:"kind"`
	Table     string     `json:"table"`
	Column    string     `json:"column,omitempty"`
	Transform bool       `json:"transform"`
	Detail    string     `json:"detail"`
	SQL       []string   `json:"sql,omitempty"`
}

// ErrDiff is a map that cannot be compared (two tables of one name).
var ErrDiff = errors.New("maps cannot be compared")

// Diff lists the changes from the shipped map old to new, tables in new's
// order then removals, and within a table columns, then indexes. Project
// new with Options.Previous = &old so that names stay put.
func Diff(old, new Map) ([]Change, error) {
	if err := distinct(old); err != nil {
		return nil, err
	}
	if err := distinct(new); err != nil {
		return nil, err
	}
	var out []Change
	if old.PKStrategy != new.PKStrategy && len(old.Tables) > 0 {
		out = append(out, Change{Kind: StrategyShift, Table: new.Root().Name, Transform: true,
			Detail: fmt.Sprintf("pk_strategy changes from %s to %s: every table is re-keyed; reload from a snapshot", old.PKStrategy, new.PKStrategy)})
	}
	if ok, nk := keyNames(old), keyNames(new); len(old.Tables) > 0 && !slices.Equal(ok, nk) {
		out = append(out, Change{Kind: KeyChange, Table: new.Root().Name, Transform: true,
			Detail: fmt.Sprintf("the entity key (%s) becomes (%s): every entity's identity changes; reload from a snapshot",
				strings.Join(ok, ", "), strings.Join(nk, ", "))})
	}
	for _, t := range new.Tables {
		o := old.Table(t.Name)
		if o == nil {
			sql := []string{CreateTable(new, t)}
			for _, x := range t.Indexes {
				sql = append(sql, CreateIndex(t, x))
			}
			out = append(out, Change{Kind: AddTable, Table: t.Name, Detail: "new table for " + describe(t), SQL: sql})
			continue
		}
		out = append(out, tableChanges(*o, t)...)
	}
	for _, t := range slices.Backward(old.Tables) {
		if new.Table(t.Name) == nil {
			out = append(out, Change{Kind: DropTable, Table: t.Name, Transform: true, Detail: describe(t) + " is no longer projected; its rows are dropped",
				SQL: []string{"DROP TABLE IF EXISTS " + QuoteIdent(t.Name) + " CASCADE"}})
		}
	}
	return out, nil
}

func keyNames(m Map) []string {
	var out []string
	for _, c := range m.KeyColumns() {
		out = append(out, c.Name+" "+c.Type+" "+c.Language)
	}
	return out
}

func distinct(m Map) error {
	seen := map[string]bool{}
	for _, t := range m.Tables {
		if seen[t.Name] {
			return fmt.Errorf("%w: two tables named %s", ErrDiff, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

func describe(t Table) string {
	if t.Source == "" {
		return "the entity"
	}
	return "array " + t.Source
}

// tableChanges compares one table on both sides.
func tableChanges(o, n Table) []Change {
	var out []Change
	tn := QuoteIdent(n.Name)
	if !slices.Equal(o.PrimaryKey, n.PrimaryKey) || !slices.Equal(o.ForeignKey, n.ForeignKey) {
		out = append(out, Change{Kind: KeyChange, Table: n.Name, Transform: true,
			Detail: fmt.Sprintf("primary key (%s) becomes (%s): rows are re-keyed; reload from a snapshot", strings.Join(o.PrimaryKey, ", "), strings.Join(n.PrimaryKey, ", "))})
	}
	for _, c := range n.Columns {
		oc := o.Column(c.Name)
		switch {
		case oc == nil:
			out = append(out, Change{Kind: AddColumn, Table: n.Name, Column: c.Name, Detail: "new nullable column " + c.Type,
				SQL: []string{fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", tn, QuoteIdent(c.Name), c.Type)}})
		case oc.Type != c.Type:
			out = append(out, Change{Kind: TypeChange, Table: n.Name, Column: c.Name, Transform: true,
				Detail: fmt.Sprintf("type %s becomes %s", oc.Type, c.Type),
				SQL:    []string{fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s USING %s::%s", tn, QuoteIdent(c.Name), c.Type, QuoteIdent(c.Name), c.Type)}})
		case oc.NotNull && !c.NotNull:
			out = append(out, Change{Kind: DropNotNull, Table: n.Name, Column: c.Name, Detail: "becomes nullable",
				SQL: []string{fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", tn, QuoteIdent(c.Name))}})
		case !oc.NotNull && c.NotNull:
			out = append(out, Change{Kind: SetNotNull, Table: n.Name, Column: c.Name, Transform: true,
				Detail: "becomes NOT NULL: existing rows may hold nulls",
				SQL:    []string{fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", tn, QuoteIdent(c.Name))}})
		}
	}
	for _, c := range o.Columns {
		if n.Column(c.Name) == nil {
			out = append(out, Change{Kind: DropColumn, Table: n.Name, Column: c.Name, Transform: true, Detail: "column removed; its values are dropped",
				SQL: []string{fmt.Sprintf("ALTER TABLE %s DROP COLUMN IF EXISTS %s", tn, QuoteIdent(c.Name))}})
		}
	}
	return append(out, indexChanges(o, n)...)
}

func indexChanges(o, n Table) []Change {
	var out []Change
	has := func(t Table, x Index) bool {
		return slices.ContainsFunc(t.Indexes, func(y Index) bool {
			return y.Name == x.Name && y.Method == x.Method && slices.Equal(y.Columns, x.Columns)
		})
	}
	for _, x := range o.Indexes {
		if !has(n, x) {
			out = append(out, Change{Kind: DropIndex, Table: n.Name, Detail: "index " + x.Name + " is no longer wanted",
				SQL: []string{"DROP INDEX IF EXISTS " + QuoteIdent(x.Name)}})
		}
	}
	for _, x := range n.Indexes {
		if !has(o, x) {
			out = append(out, Change{Kind: AddIndex, Table: n.Name, Detail: "new index " + x.Name, SQL: []string{CreateIndex(n, x)}})
		}
	}
	return out
}

// NeedsConfirm reports whether any change is a transform.
func NeedsConfirm(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Transform })
}

// Check refuses changes that carry a transform unless confirmed, with
// schema.ErrConfirmTransforms (the publish flow's 409), naming them.
func Check(changes []Change, confirmTransforms bool) error {
	if confirmTransforms || !NeedsConfirm(changes) {
		return nil
	}
	var kinds []string
	for _, c := range changes {
		if c.Transform {
			kinds = append(kinds, fmt.Sprintf("%s %s", c.Kind, strings.TrimSuffix(c.Table+"."+c.Column, ".")))
		}
	}
	return fmt.Errorf("the projection change migrates data (%s); confirm_transforms=true applies it: %w", strings.Join(kinds, ", "), schema.ErrConfirmTransforms)
}

// Additive is the DDL of the changes that are not transforms, in order:
// what a publish ships as schema deltas without confirmation.
func Additive(changes []Change) []string {
	var out []string
	for _, c := range changes {
		if !c.Transform {
			out = append(out, c.SQL...)
		}
	}
	return out
}
