package relmap

import (
	"fmt"
	"strings"
)

// DDL is the statements that create the map's tables and indexes, parents
// before children. Every statement is idempotent (IF NOT EXISTS), so a
// consumer may apply it again, and a snapshot may start with it.
func DDL(m Map) []string {
	var out []string
	for _, t := range m.Tables {
		out = append(out, CreateTable(m, t))
		for _, x := range t.Indexes {
			out = append(out, CreateIndex(t, x))
		}
	}
	return out
}

// CreateTable is one table's CREATE TABLE IF NOT EXISTS.
func CreateTable(m Map, t Table) string {
	var parts []string
	for _, c := range t.Columns {
		parts = append(parts, columnDef(c))
	}
	parts = append(parts, fmt.Sprintf("CONSTRAINT %s PRIMARY KEY (%s)", QuoteIdent(t.PKName), idents(t.PrimaryKey)))
	if len(t.Unique) > 0 {
		parts = append(parts, fmt.Sprintf("CONSTRAINT %s UNIQUE (%s)", QuoteIdent(t.UniqueName), idents(t.Unique)))
	}
	if len(t.ForeignKey) > 0 {
		parent := m.Table(t.Parent)
		parts = append(parts, fmt.Sprintf("CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s) ON DELETE CASCADE",
			QuoteIdent(t.FKName), idents(t.ForeignKey), QuoteIdent(t.Parent), idents(parent.PrimaryKey)))
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n  %s\n)", QuoteIdent(t.Name), strings.Join(parts, ",\n  "))
}

func columnDef(c Column) string {
	s := QuoteIdent(c.Name) + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	return s
}

// CreateIndex is one index's CREATE INDEX IF NOT EXISTS.
func CreateIndex(t Table, x Index) string {
	return fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING %s (%s)",
		QuoteIdent(x.Name), QuoteIdent(t.Name), x.Method, idents(x.Columns))
}

func idents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}
