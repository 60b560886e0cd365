package relmap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/schema"
)

// Statement is one SQL statement of a write.
type Statement struct {
	Table string `json:"table"`
	Op    string `json:"op"` // upsert | delete | insert
	SQL   string `json:"sql"`
}

// Rows are the rows a write puts into one table (column name -> value as
// decoded JSON; a surrogate id as its text).
type Rows struct {
	Table string           `json:"table"`
	Rows  []map[string]any `json:"rows"`
}

// Payload is the structured form of a write: what a delta's payload
// carries beside its sql.
type Payload struct {
	EntityType string         `json:"entity_type"`
	Op         string         `json:"op"` // upsert | delete
	Revision   int64          `json:"revision"`
	Key        map[string]any `json:"key"` // primary key column -> value of the entity table
	Tables     []Rows         `json:"tables,omitempty"`
}

// Write is an entity's change rendered for the consumer: statements to run
// in order, in one transaction, and the same change as data.
type Write struct {
	Statements []Statement `json:"statements"`
	Payload    Payload     `json:"payload"`
}

// SQL joins the statements into one script.
func (w Write) SQL() string {
	var b strings.Builder
	for _, s := range w.Statements {
		b.WriteString(s.SQL)
		b.WriteString(";\n")
	}
	return b.String()
}

// Key is an entity's identity: the value of each key column of the entity
// table (for a multilingual key, the key language's value). Under
// surrogate, a Key may instead (or also) hold ColID: the row's ee_id as
// the entity layer knows it (see UpsertWithID), which then wins.
type Key map[string]any

// ErrNoKeyValue is an entity without a key value (any, for surrogate; each,
// for natural).
var ErrNoKeyValue = errors.New("the entity has no key value")

// Decode reads an entity state, keeping numbers exact.
func Decode(state json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(state))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil || obj == nil {
		return nil, &ValueError{Path: "$", Detail: "the entity state is not a JSON object"}
	}
	return obj, nil
}

// KeyOf is the key of an entity state.
func KeyOf(m Map, state map[string]any) (Key, error) {
	k := Key{}
	present := 0
	for _, c := range m.KeyColumns() {
		v, err := cellValue(c, state)
		if err != nil {
			return nil, err
		}
		if v != nil && v != "" {
			present++
		}
		if v == "" {
			v = nil
		}
		k[c.Name] = v
		if m.PKStrategy == Natural && v == nil {
			return nil, fmt.Errorf("%w: natural key %s is missing", ErrNoKeyValue, c.Source)
		}
	}
	if present == 0 {
		return nil, ErrNoKeyValue
	}
	return k, nil
}

// SurrogateID is the entity table's ee_id of a key: a UUID (version 8,
// name-based on SHA-256) of the entity type and the key's canonical JSON,
// so the same entity always lands on the same row.
func SurrogateID(m Map, k Key) string {
	var b strings.Builder
	for _, c := range m.KeyColumns() {
		enc, _ := json.Marshal([]any{c.Name, k[c.Name]})
		b.Write(enc)
	}
	return uuidOf("relmap/v1\x00" + m.EntityType + "\x00" + b.String())
}

func uuidOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// cellValue is the value of a property column in a row object (nil when
// absent); a multilingual key column takes its language.
func cellValue(c Column, obj map[string]any) (any, error) {
	v, ok := schema.Lookup(obj, c.Path)
	if !ok {
		return nil, nil
	}
	if c.Language != "" {
		if lm, ok := v.(map[string]any); ok {
			v = lm[c.Language]
		}
	}
	if c.Role == RoleKey {
		if _, ok := v.(map[string]any); ok {
			return nil, &ValueError{Path: c.Source, Detail: "a key value must be a scalar"}
		}
		if s, ok := v.(string); ok {
			v = strings.TrimSpace(s)
		}
	}
	return v, nil
}

// Upsert renders an entity state at a revision: an upsert of the entity
// row that only a newer revision wins, then, guarded by the entity row now
// holding exactly this revision, the replacement of every child row. A
// replayed revision rewrites the same rows; an older one changes nothing;
// an array that shrank loses its extra rows.
func Upsert(m Map, state json.RawMessage, revision int64) (Write, error) {
	return UpsertWithID(m, "", state, revision)
}

// UpsertWithID is Upsert with the entity layer's own id (a UUID) as the
// entity row's ee_id under surrogate, instead of SurrogateID of the key:
// an entity whose key values change (a key filled in later, two records
// merged into one entity) keeps its row. "" derives the id; natural
// ignores it.
func UpsertWithID(m Map, id string, state json.RawMessage, revision int64) (Write, error) {
	d, err := UpsertDraft(m, id, state)
	if err != nil {
		return Write{}, err
	}
	return d.Render(revision)
}

// UpsertDraft is UpsertWithID before the revision is known: every value
// is checked and rendered, and only the revision remains (Draft.Render).
func UpsertDraft(m Map, id string, state json.RawMessage) (Draft, error) {
	obj, err := Decode(state)
	if err != nil {
		return Draft{}, err
	}
	if m.Root() == nil {
		return Draft{}, ErrContract
	}
	k, err := KeyOf(m, obj)
	if err != nil {
		return Draft{}, err
	}
	if id != "" && m.PKStrategy == Surrogate {
		k[ColID] = id
	}
	r := renderer{m: m, key: k}
	if err := r.entity(obj); err != nil {
		return Draft{}, err
	}
	w := r.write("upsert")
	typ := TypeBigint
	if c := m.Root().Column(ColRevision); c != nil {
		typ = c.Type
	}
	return Draft{Root: m.Root().Name, KeyMatch: r.match, RevisionType: typ, Parts: r.parts, Payload: w.Payload}, nil
}

// Delete renders the removal of an entity (its child rows go by ON DELETE
// CASCADE). Only a row at this revision or older is deleted, so a replayed
// delete cannot remove an entity re-created later at a newer revision.
func Delete(m Map, k Key, revision int64) (Write, error) {
	root := m.Root()
	if root == nil {
		return Write{}, ErrContract
	}
	r := renderer{m: m, revision: revision, key: k}
	where, err := r.keyMatch()
	if err != nil {
		return Write{}, err
	}
	r.stmts = append(r.stmts, Statement{Table: root.Name, Op: "delete", SQL: fmt.Sprintf("DELETE FROM %s WHERE %s AND %s <= %d",
		QuoteIdent(root.Name), where, QuoteIdent(ColRevision), revision)})
	return r.write("delete"), nil
}

type renderer struct {
	m        Map
	revision int64
	key      Key
	pk       map[string]any // the entity table's primary key values
	stmts    []Statement
	parts    []Part // an upsert's statements, revision left out
	match    string // keyMatch, once a guard needed it
	rows     []Rows
}

func (r *renderer) write(op string) Write {
	if r.pk == nil {
		r.pk = r.primaryKey()
	}
	return Write{Statements: r.stmts, Payload: Payload{EntityType: r.m.EntityType, Op: op, Revision: r.revision, Key: r.pk, Tables: r.rows}}
}

func (r *renderer) primaryKey() map[string]any {
	if r.m.PKStrategy == Surrogate {
		if id, ok := r.key[ColID]; ok {
			return map[string]any{ColID: id}
		}
		return map[string]any{ColID: SurrogateID(r.m, r.key)}
	}
	pk := map[string]any{}
	for _, c := range r.m.KeyColumns() {
		pk[c.Name] = r.key[c.Name]
	}
	return pk
}

// keyMatch is the WHERE condition selecting the entity row.
func (r *renderer) keyMatch() (string, error) {
	r.pk = r.primaryKey()
	root := r.m.Root()
	var conds []string
	for _, name := range root.PrimaryKey {
		c := root.Column(name)
		lit, err := Literal(r.pk[name], c.Type)
		if err != nil {
			return "", withPath(err, c.Source)
		}
		conds = append(conds, QuoteIdent(name)+" = "+lit)
	}
	return strings.Join(conds, " AND "), nil
}

func withPath(err error, path string) error {
	var ve *ValueError
	if errors.As(err, &ve) && ve.Path == "" {
		return &ValueError{Path: path, Detail: ve.Detail}
	}
	return err
}
