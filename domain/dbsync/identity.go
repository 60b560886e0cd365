package dbsync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/relmap"
)

// DefaultKeyLanguage is the language a multilingual key is read in when no
// registration of the schema names one.
const DefaultKeyLanguage = "en"

// Identity is an entity's identity within its schema: its type and the
// values of its identifying properties (identifying, database_key and the
// semantic_id property), as the entity layer stores them.
type Identity struct {
	EntityType string
	// KeyIdentity is the canonical text of Keys, in key-column order:
	// a JSON array of [column, value] pairs (value null when absent).
	KeyIdentity string
	// Keys are the present key values by physical key-column name, as
	// text (the entity_keys of the outcome).
	Keys       map[string]string
	SemanticID string
}

// EntityMap is the projection the entity layer reads identities with: the
// contract's own, with the key language of multilingual keys. Its key
// columns are the contract's identifying properties (relmap.KeyColumns).
func EntityMap(contract json.RawMessage, keyLanguage string) (relmap.Map, error) {
	if keyLanguage == "" {
		keyLanguage = DefaultKeyLanguage
	}
	return relmap.Project(contract, relmap.Options{KeyLanguage: keyLanguage})
}

// IdentityOf is the identity of an entity state under the entity map m.
// An entity without any key value has none (relmap.ErrNoKeyValue).
func IdentityOf(m relmap.Map, state map[string]any) (Identity, error) {
	k, err := relmap.KeyOf(m, state)
	if err != nil {
		return Identity{}, err
	}
	id := Identity{EntityType: m.EntityType, Keys: map[string]string{}}
	pairs := make([][2]any, 0, len(k))
	var semantic [][2]any
	for _, c := range m.KeyColumns() {
		v := k[c.Name]
		pairs = append(pairs, [2]any{c.Name, keyText(v)})
		if v == nil {
			continue
		}
		id.Keys[c.Name] = *keyText(v)
		if semanticID(c) {
			id.SemanticID = *keyText(v)
			semantic = [][2]any{{c.Name, keyText(v)}}
		}
	}
	if semantic != nil {
		// The concept id names the entity whatever text it was resolved
		// from: "IBM" and "International Business Machines Corp." resolved
		// to one concept are one entity.
		pairs = semantic
	}
	b, err := json.Marshal(pairs)
	if err != nil {
		return Identity{}, err
	}
	id.KeyIdentity = string(b)
	return id, nil
}

// semanticID reports whether c is the semantic_id property's column: the
// property marked semantic_id, or, in a map projected before the mark was
// kept, the property named semantic_id.
func semanticID(c relmap.Column) bool {
	return c.Semantic || len(c.Path) > 0 && c.Path[len(c.Path)-1] == "semantic_id"
}

// keyText is a key value as text: a string as it is, a number in its JSON
// digits, a boolean as true/false; nil when absent.
func keyText(v any) *string {
	if v == nil {
		return nil
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

// EntityID is the entity layer's id of an identity: a name-based UUID
// (version 8, SHA-256) of the schema, the entity type and the key
// identity, so an identity keeps its id across a purge and every writer
// derives it without a read.
func EntityID(schemaID string, id Identity) string {
	sum := sha256.Sum256([]byte("entity/v1\x00" + schemaID + "\x00" + id.EntityType + "\x00" + id.KeyIdentity))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}

func decodeState(state json.RawMessage) (map[string]any, error) { return relmap.Decode(state) }
