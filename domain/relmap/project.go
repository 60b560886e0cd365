package relmap

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/jsondoc"
)

// MaxTables bounds the tables of one map: a contract that would need more
// (a deeply recursive $ref) is refused.
const MaxTables = 100

// maxDepth bounds nested objects and arrays (and so a recursive $ref):
// deeper structure is kept whole in a jsonb column.
const maxDepth = 6

// Project derives the relational projection of a published contract (a
// JSON Schema with top-level properties, or the internal form with a root
// entity definition and $defs). See the package documentation for the
// rules.
func Project(contract json.RawMessage, opts Options) (Map, error) {
	opts, err := normalize(opts)
	if err != nil {
		return Map{}, err
	}
	var doc map[string]any
	if json.Unmarshal(contract, &doc) != nil || doc == nil {
		return Map{}, fmt.Errorf("%w: not a JSON object", ErrContract)
	}
	root := doc
	if r, ok := doc["root"].(map[string]any); ok {
		if _, has := doc["properties"]; !has {
			root = r
		}
	}
	root = jsondoc.Deref(doc, root)
	if !projectable(root) {
		return Map{}, fmt.Errorf("%w: the root has no properties", ErrContract)
	}
	b := newBuilder(doc, opts)
	m := Map{EntityType: entityName(doc, root, opts), PKStrategy: opts.PKStrategy,
		IndexScalars: opts.IndexScalars, PropagateNotNull: opts.PropagateNotNull, KeyLanguage: opts.KeyLanguage}
	if err := b.table(nil, child{kind: KindEntity, schema: root}, "", m.EntityType); err != nil {
		return Map{}, err
	}
	m.Tables = b.tables
	if len(m.KeyColumns()) == 0 {
		return Map{}, ErrNoKey
	}
	return m, nil
}

func normalize(o Options) (Options, error) {
	if o.PKStrategy == "" {
		o.PKStrategy = Surrogate
	}
	if o.IndexScalars == "" {
		o.IndexScalars = IndexFilterable
	}
	if o.PKStrategy != Surrogate && o.PKStrategy != Natural {
		return o, fmt.Errorf("%w: pk_strategy must be surrogate or natural", ErrOptions)
	}
	switch o.IndexScalars {
	case IndexNone, IndexKeys, IndexFilterable, IndexAll:
	default:
		return o, fmt.Errorf("%w: index_scalars must be none, keys, filterable or all", ErrOptions)
	}
	return o, nil
}

func entityName(doc, root map[string]any, o Options) string {
	for _, s := range []any{o.EntityType, root["name"], doc["title"]} {
		if n, _ := s.(string); strings.TrimSpace(n) != "" {
			return n
		}
	}
	return "entity"
}

type builder struct {
	doc    map[string]any
	opts   Options
	rel    *scope
	prev   map[string]map[string]string // table name -> column owner -> name
	tables []Table
}

func newBuilder(doc map[string]any, o Options) *builder {
	pinned := map[string]string{}
	prev := map[string]map[string]string{}
	if o.Previous != nil {
		for _, t := range o.Previous.Tables {
			pinned["table:"+t.Source] = t.Name
			cols := map[string]string{}
			for _, c := range t.Columns {
				owner := columnOwner(c.Role, c.Source)
				if c.Source == "" {
					owner = columnOwner(c.Role, c.Name)
				}
				cols[owner] = c.Name
			}
			prev[t.Name] = cols
			for _, x := range t.Indexes {
				pinned["index:"+t.Source+":"+strings.Join(x.Columns, ",")] = x.Name
			}
			pinned["pkey:"+t.Source], pinned["fkey:"+t.Source], pinned["ukey:"+t.Source] = t.PKName, t.FKName, t.UniqueName
		}
	}
	for k, v := range pinned {
		if v == "" {
			delete(pinned, k)
		}
	}
	return &builder{doc: doc, opts: o, rel: newScope(pinned, o.Taken...), prev: prev}
}

func columnOwner(role, source string) string { return role + ":" + source }

// table projects one table (the entity's, or an array's) and then its
// child tables, depth first, so that parents come before children.
func (b *builder) table(parent *Table, c child, source string, entity string) error {
	if len(b.tables) >= MaxTables {
		return fmt.Errorf("%w: more than %d tables", ErrContract, MaxTables)
	}
	kind, path, obj := c.kind, c.path, c.schema
	t := Table{Kind: kind, Source: source, Path: path}
	if parent == nil {
		t.Name = b.rel.alloc("table:", Ident(entity))
	} else {
		t.Parent, t.Depth = parent.Name, parent.Depth+1
		t.Name = b.rel.alloc("table:"+source, parent.Name+"_"+Ident(strings.Join(path, "_")))
	}
	cols := newScope(b.prev[t.Name])
	b.systemColumns(&t, parent, cols)
	var children []child
	if kind == KindScalars {
		typ := ColumnType(obj)
		t.Columns = append(t.Columns, Column{Name: cols.alloc(columnOwner(RoleItem, ColValue), ColValue), Type: typ,
			Role: RoleItem, IndexClass: classOf(obj, typ, false)})
	} else {
		w := &walk{b: b, t: &t, cols: cols, root: parent == nil}
		if err := w.object(obj, nil, true, c.depth); err != nil {
			return err
		}
		children = w.children
	}
	b.keys(&t)
	b.indexes(&t)
	b.tables = append(b.tables, t)
	for _, c := range children {
		src := c.source(source)
		if err := b.table(&t, c, src, entity); err != nil {
			return err
		}
	}
	return nil
}

// systemColumns adds the key, revision, parent and ordinal columns.
func (b *builder) systemColumns(t *Table, parent *Table, cols *scope) {
	add := func(name, typ, role string) {
		cols.reserve(columnOwner(role, name), name)
		t.Columns = append(t.Columns, Column{Name: name, Type: typ, NotNull: true, Role: role})
	}
	if b.opts.PKStrategy == Surrogate {
		add(ColID, TypeUUID, RoleID)
		t.PrimaryKey = []string{ColID}
	}
	if parent == nil {
		add(ColRevision, TypeBigint, RoleRevision)
		return
	}
	if b.opts.PKStrategy == Surrogate {
		add(ColParentID, TypeUUID, RoleParent)
		add(ColOrdinal, TypeInteger, RoleOrdinal)
		t.ForeignKey = []string{ColParentID}
		t.Unique = []string{ColParentID, ColOrdinal}
		return
	}
	for _, name := range parent.PrimaryKey {
		pc := parent.Column(name)
		add(name, pc.Type, RoleParent)
		t.ForeignKey = append(t.ForeignKey, name)
	}
	ord := fmt.Sprintf("%s_%d", ColOrdinal, t.Depth)
	add(ord, TypeInteger, RoleOrdinal)
	t.PrimaryKey = append(append([]string(nil), t.ForeignKey...), ord)
}

// keys completes the primary key of a natural entity table and names the
// constraints.
func (b *builder) keys(t *Table) {
	if b.opts.PKStrategy == Natural && t.Parent == "" {
		for i := range t.Columns {
			if c := &t.Columns[i]; c.Role == RoleKey {
				c.NotNull = true
				t.PrimaryKey = append(t.PrimaryKey, c.Name)
			}
		}
	}
	t.PKName = b.rel.alloc("pkey:"+t.Source, t.Name+"_pkey")
	if len(t.ForeignKey) > 0 {
		t.FKName = b.rel.alloc("fkey:"+t.Source, t.Name+"_parent_fkey")
	}
	if len(t.Unique) > 0 {
		t.UniqueName = b.rel.alloc("ukey:"+t.Source, t.Name+"_parent_key")
	}
}

// indexes adds a secondary index per column of the classes index_scalars
// asks for; primary key columns are indexed already.
func (b *builder) indexes(t *Table) {
	if b.opts.IndexScalars == IndexNone {
		return
	}
	inPK := map[string]bool{}
	for _, c := range t.PrimaryKey {
		inPK[c] = true
	}
	for _, c := range t.Columns {
		if inPK[c.Name] || !wanted(b.opts.IndexScalars, c) {
			continue
		}
		method := "btree"
		if textType(c.Type) {
			method = "hash"
		}
		name := b.rel.alloc("index:"+t.Source+":"+c.Name, t.Name+"_"+c.Name+"_idx")
		t.Indexes = append(t.Indexes, Index{Name: name, Columns: []string{c.Name}, Method: method})
	}
}

func wanted(level string, c Column) bool {
	switch c.Role {
	case RoleKey, RoleValue, RoleItem:
	default:
		return false
	}
	switch level {
	case IndexKeys:
		return c.IndexClass == "key"
	case IndexFilterable:
		return c.IndexClass != ""
	case IndexAll:
		return c.Type != TypeJSONB
	}
	return false
}

// classOf is a column's index class.
func classOf(p map[string]any, typ string, key bool) string {
	switch {
	case key:
		return "key"
	case typ == TypeJSONB:
		return ""
	case p["index"] != nil && p["index"] != "", filterableType(typ), p["enum"] != nil:
		return "filterable"
	}
	if ref, _ := p["$ref"].(string); strings.HasPrefix(ref, "#/$enums/") {
		return "filterable"
	}
	return ""
}

// child is an array met while walking a table's object, at depth (its
// nesting from the entity's root, objects and arrays alike).
type child struct {
	kind   string
	path   []string
	schema map[string]any
	depth  int
}

func (c child) source(parent string) string {
	s := strings.Join(c.path, ".")
	if parent == "" {
		return s
	}
	return parent + "." + s
}

// walk visits the properties of one table's row object.
type walk struct {
	b        *builder
	t        *Table
	cols     *scope
	root     bool
	children []child
}

func (w *walk) object(obj map[string]any, prefix []string, required bool, depth int) error {
	obj = jsondoc.Deref(w.b.doc, obj)
	props, _ := obj["properties"].(map[string]any)
	req := map[string]bool{}
	if rl, ok := obj["required"].([]any); ok {
		for _, r := range rl {
			if s, ok := r.(string); ok {
				req[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		raw, _ := props[name].(map[string]any)
		if raw == nil {
			continue
		}
		path := append(append([]string(nil), prefix...), name)
		if err := w.property(raw, path, required && req[name], depth); err != nil {
			return err
		}
	}
	return nil
}

func (w *walk) property(raw map[string]any, path []string, required bool, depth int) error {
	p := jsondoc.Deref(w.b.doc, raw)
	if depth < maxDepth && projectable(p) {
		return w.object(p, path, required && !nullable(p), depth+1)
	}
	if jsondoc.HasType(p, "array") && depth < maxDepth {
		items := jsondoc.Deref(w.b.doc, mapOf(p["items"]))
		switch {
		case projectable(items):
			w.children = append(w.children, child{kind: KindObjects, path: path, schema: items, depth: depth + 1})
			return nil
		case items != nil && scalarType(items) != "":
			w.children = append(w.children, child{kind: KindScalars, path: path, schema: items, depth: depth + 1})
			return nil
		}
	}
	semantic := raw["semantic_id"] == true || p["semantic_id"] == true
	key := raw["identifying"] == true || raw["database_key"] == true || p["identifying"] == true || p["database_key"] == true || semantic
	n := len(w.t.Columns)
	if err := w.column(p, path, required, key); err != nil {
		return err
	}
	if semantic && len(w.t.Columns) > n && w.t.Columns[n].Role == RoleKey {
		w.t.Columns[n].Semantic = true
	}
	return nil
}

func (w *walk) column(p map[string]any, path []string, required, key bool) error {
	src := strings.Join(path, ".")
	typ := ColumnType(p)
	multi := p["multilingual"] == true
	if multi {
		typ = TypeJSONB
	}
	if key && !multi && typ == TypeJSONB {
		return fmt.Errorf("%w: key property %s is not a scalar", ErrContract, src)
	}
	notNull := w.b.opts.PropagateNotNull && required && !nullable(p)
	role := RoleValue
	if key && !multi {
		role = RoleKey
	}
	w.t.Columns = append(w.t.Columns, Column{Name: w.cols.alloc(columnOwner(role, src), Ident(strings.Join(path, "_"))),
		Type: typ, NotNull: notNull, Role: role, Source: src, Path: path, IndexClass: classOf(p, typ, role == RoleKey)})
	if !key || !multi {
		return nil
	}
	if w.b.opts.KeyLanguage == "" {
		return fmt.Errorf("%w: %s", ErrKeyLanguage, src)
	}
	w.t.Columns = append(w.t.Columns, Column{Name: w.cols.alloc(columnOwner(RoleKey, src), Ident(strings.Join(path, "_"))+"_key"),
		Type: TypeText, NotNull: notNull, Role: RoleKey, Source: src, Path: path, Language: w.b.opts.KeyLanguage, IndexClass: "key"})
	return nil
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
