package relmap

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A Draft is an entity's upsert rendered before its revision is known:
// the store that writes it computes the revision in the statement that
// writes it (one round trip instead of a locked read first), keeps the
// draft with the revision, and renders the consumer's SQL from both when
// it serves the delta. Every value is checked and rendered into the
// parts; the revision is the one thing Render adds.
type Draft struct {
	Root string `json:"root"` // the entity table
	// KeyMatch selects the entity row (the guard of the child tables'
	// statements); "" when the map has no child table.
	KeyMatch     string `json:"key_match,omitempty"`
	RevisionType string `json:"revision_type"` // the revision column's type
	Parts        []Part `json:"parts"`
	// Payload is the write's payload at revision 0 (PayloadRevisionPaths
	// are where the revision goes); not part of the stored draft.
	Payload Payload `json:"-"`
}

// Part is one statement of a draft, as its structure: an upsert of the
// entity row (Columns, one row of literals whose revision cell is empty,
// Key the conflict columns), a delete of a child table's rows of the
// entity (Match), or an insert of its current rows (Columns, Rows). The
// child tables' statements are guarded by the entity row holding the
// write's revision.
type Part struct {
	Table   string     `json:"table"`
	Op      string     `json:"op"` // upsert | delete | insert
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
	Key     []string   `json:"key,omitempty"`
	Match   string     `json:"match,omitempty"`
}

// PayloadRevisionPaths are where a write's payload holds its revision:
// the payload's revision and the entity row's revision column (the first
// row of the first table). A store that learns the revision in SQL sets
// them there (jsonb_set), so the payload it serves is the one Render
// gives.
var PayloadRevisionPaths = [][]string{{"revision"}, {"tables", "0", "rows", "0", ColRevision}}

// ParseDraft reads a stored draft.
func ParseDraft(b []byte) (Draft, error) {
	var d Draft
	if err := json.Unmarshal(b, &d); err != nil || d.Root == "" || len(d.Parts) == 0 {
		return Draft{}, fmt.Errorf("relmap: not a draft: %s", firstLine(b))
	}
	return d, nil
}

func firstLine(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}

// Render is the write at revision: what UpsertWithID renders at it.
func (d Draft) Render(revision int64) (Write, error) {
	stmts, err := d.Statements(revision)
	if err != nil {
		return Write{}, err
	}
	p := d.Payload
	p.Revision = revision
	if len(p.Tables) > 0 && len(p.Tables[0].Rows) > 0 {
		tables := append([]Rows(nil), p.Tables...)
		root := make(map[string]any, len(tables[0].Rows[0]))
		for k, v := range tables[0].Rows[0] {
			root[k] = v
		}
		root[ColRevision] = revision
		tables[0] = Rows{Table: tables[0].Table, Rows: append([]map[string]any{root}, tables[0].Rows[1:]...)}
		p.Tables = tables
	}
	return Write{Statements: stmts, Payload: p}, nil
}

// SQL is the draft's script at revision (Write.SQL of Render).
func (d Draft) SQL(revision int64) (string, error) {
	stmts, err := d.Statements(revision)
	if err != nil {
		return "", err
	}
	return Write{Statements: stmts}.SQL(), nil
}

// Statements are the draft's statements at revision.
func (d Draft) Statements(revision int64) ([]Statement, error) {
	guard := fmt.Sprintf("EXISTS (SELECT 1 FROM %s WHERE %s AND %s = %d)", QuoteIdent(d.Root), d.KeyMatch,
		QuoteIdent(ColRevision), revision)
	out := make([]Statement, 0, len(d.Parts))
	for _, p := range d.Parts {
		var sql string
		switch p.Op {
		case "upsert":
			s, err := p.upsert(revision, d.RevisionType)
			if err != nil {
				return nil, err
			}
			sql = s
		case "delete":
			sql = fmt.Sprintf("DELETE FROM %s WHERE %s AND %s", QuoteIdent(p.Table), p.Match, guard)
		case "insert":
			tuples := make([]string, len(p.Rows))
			for i, row := range p.Rows {
				tuples[i] = "(" + strings.Join(row, ", ") + ")"
			}
			sql = fmt.Sprintf("INSERT INTO %s (%s) SELECT v.* FROM (VALUES %s) AS v WHERE %s",
				QuoteIdent(p.Table), idents(p.Columns), strings.Join(tuples, ", "), guard)
		default:
			return nil, fmt.Errorf("relmap: a draft statement with op %q", p.Op)
		}
		out = append(out, Statement{Table: p.Table, Op: p.Op, SQL: sql})
	}
	return out, nil
}

// upsert renders the entity row's upsert, which only a newer revision
// wins.
func (p Part) upsert(revision int64, typ string) (string, error) {
	if len(p.Rows) != 1 || len(p.Rows[0]) != len(p.Columns) {
		return "", fmt.Errorf("relmap: a draft upsert of %s without its row", p.Table)
	}
	lit, err := Literal(revision, typ)
	if err != nil {
		return "", err
	}
	values := append([]string(nil), p.Rows[0]...)
	var sets []string
	for i, c := range p.Columns {
		if c == ColRevision {
			values[i] = lit
		}
		if !contains(p.Key, c) {
			sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%s", QuoteIdent(c), QuoteIdent(c)))
		}
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO UPDATE SET %s WHERE %s.%s < EXCLUDED.%s",
		QuoteIdent(p.Table), idents(p.Columns), strings.Join(values, ", "), idents(p.Key),
		strings.Join(sets, ", "), QuoteIdent(p.Table), QuoteIdent(ColRevision), QuoteIdent(ColRevision)), nil
}
