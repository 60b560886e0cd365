package relmap

import "errors"

// The pk_strategy values (WIRE.md §8.2; surrogate is the default).
const (
	Surrogate = "surrogate"
	Natural   = "natural"
)

// The index_scalars values (filterable is the default).
const (
	IndexNone       = "none"
	IndexKeys       = "keys"
	IndexFilterable = "filterable"
	IndexAll        = "all"
)

// Column types this package emits besides those of db_type.
const (
	TypeText      = "text"
	TypeBigint    = "bigint"
	TypeNumeric   = "numeric"
	TypeDouble    = "double precision"
	TypeBoolean   = "boolean"
	TypeJSONB     = "jsonb"
	TypeUUID      = "uuid"
	TypeDate      = "date"
	TypeTimestamp = "timestamptz"
	TypeInteger   = "integer"
)

// System column names. Property columns that would take one of these
// names get a hash suffix instead.
const (
	ColID       = "ee_id"
	ColRevision = "ee_revision"
	ColParentID = "ee_parent_id"
	ColOrdinal  = "ee_ordinal"
	ColValue    = "value"
)

// Column roles.
const (
	RoleID       = "id"       // surrogate primary key
	RoleRevision = "revision" // the entity revision (root table)
	RoleParent   = "parent"   // foreign key to the parent row
	RoleOrdinal  = "ordinal"  // position of an array item (0-based)
	RoleKey      = "key"      // identifying property (database key)
	RoleValue    = "value"    // any other property
	RoleItem     = "item"     // the value of an array of scalars
)

// Table kinds.
const (
	KindEntity  = "entity"  // the entity type's own table
	KindObjects = "objects" // an array of objects
	KindScalars = "scalars" // an array of scalars
)

// Errors of Project.
var (
	// ErrOptions is an unknown pk_strategy or index_scalars.
	ErrOptions = errors.New("invalid projection options")
	// ErrNoKey is a contract without identifying properties: an entity
	// layer row (and so a table row) has no identity.
	ErrNoKey = errors.New("the contract has no identifying property")
	// ErrContract is a contract that is not a JSON object schema.
	ErrContract = errors.New("the contract cannot be projected")
	// ErrKeyLanguage is a multilingual key without a key language.
	ErrKeyLanguage = errors.New("a multilingual key needs key_language")
)

// Options are the registration's projection fields (WIRE.md §8.2/§8.3).
type Options struct {
	PKStrategy       string // surrogate (default) | natural
	IndexScalars     string // none | keys | filterable (default) | all
	PropagateNotNull bool   // NOT NULL where the schema says always present
	// KeyLanguage is the language a multilingual key is keyed in.
	KeyLanguage string
	// EntityType overrides the entity type's name (default: the root's
	// name, then the document's title, then "entity").
	EntityType string
	// Previous is the map already shipped to the consumer: its names are
	// kept for the same sources, so a published change never renames.
	Previous *Map
	// Taken are relation names (tables, indexes, constraints) the target
	// database already uses for other maps (other schemas linked to the
	// same registration); new names avoid them.
	Taken []string
}

// Relations lists the map's relation names: tables, indexes and
// constraints, what another map of the same database passes as Taken.
func (m Map) Relations() []string {
	var out []string
	for _, t := range m.Tables {
		out = append(out, t.Name, t.PKName)
		if t.UniqueName != "" {
			out = append(out, t.UniqueName)
		}
		for _, x := range t.Indexes {
			out = append(out, x.Name)
		}
	}
	return out
}

// Map is the relational projection of one linked schema's contract.
type Map struct {
	EntityType       string  `json:"entity_type"`
	PKStrategy       string  `json:"pk_strategy"`
	IndexScalars     string  `json:"index_scalars"`
	PropagateNotNull bool    `json:"propagate_not_null"`
	KeyLanguage      string  `json:"key_language,omitempty"`
	Tables           []Table `json:"tables"` // parents before children
}

// Table is one table of a Map.
type Table struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Source is the dotted path of the array this table holds, from the
	// entity's root ("" for the entity table); Path its property names
	// relative to the parent table's row object.
	Source string   `json:"source"`
	Path   []string `json:"path,omitempty"`
	Parent string   `json:"parent,omitempty"`
	Depth  int      `json:"depth"`

	Columns    []Column `json:"columns"`
	PrimaryKey []string `json:"primary_key"`
	PKName     string   `json:"pk_name"`
	// ForeignKey columns reference the parent's primary key, in order,
	// ON DELETE CASCADE.
	ForeignKey []string `json:"foreign_key,omitempty"`
	FKName     string   `json:"fk_name,omitempty"`
	// Unique is (parent id, ordinal) on a surrogate child table.
	Unique     []string `json:"unique,omitempty"`
	UniqueName string   `json:"unique_name,omitempty"`
	Indexes    []Index  `json:"indexes,omitempty"`
}

// Column is one column of a Table.
type Column struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	NotNull bool   `json:"not_null"`
	Role    string `json:"role"`
	// Source is the dotted property path relative to the row's object;
	// Path its property names (a name may hold a dot).
	Source string   `json:"source,omitempty"`
	Path   []string `json:"path,omitempty"`
	// Language is set on the key column of a multilingual key: the column
	// holds the value of that language.
	Language string `json:"language,omitempty"`
	// IndexClass is "key" (identifying) or "filterable" (an index intent,
	// an enum, or a boolean, number, date or uuid column); "" otherwise.
	IndexClass string `json:"index_class,omitempty"`
	// Semantic marks the key column of the object's semantic_id property:
	// its concept id is the entity's identity when it has one.
	Semantic bool `json:"semantic,omitempty"`
}

// Index is a secondary index. Text columns get hash indexes: a btree
// entry is limited to about 2.7 kB, and a long enriched value must not
// make the consumer's insert fail.
type Index struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Method  string   `json:"method"` // btree | hash
}

// Root is the entity table.
func (m Map) Root() *Table {
	if len(m.Tables) == 0 {
		return nil
	}
	return &m.Tables[0]
}

// Table returns the table named name.
func (m Map) Table(name string) *Table {
	for i := range m.Tables {
		if m.Tables[i].Name == name {
			return &m.Tables[i]
		}
	}
	return nil
}

// Column returns the column named name.
func (t Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// KeyColumns are the entity table's identifying columns, in order.
func (m Map) KeyColumns() []Column {
	var out []Column
	if r := m.Root(); r != nil {
		for _, c := range r.Columns {
			if c.Role == RoleKey {
				out = append(out, c)
			}
		}
	}
	return out
}
