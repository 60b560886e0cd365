package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// DatabaseModelFlags are the per-property keywords that shape a schema's
// database model (its relational projection) and nothing of what
// enrichment produces: what an unlink or a delete with
// clear_database_model strips. identifying and semantic_id stay: they
// also steer enrichment and identity.
var DatabaseModelFlags = []string{"database_key", "database_key_reason", "db_type", "db_type_length", "db_name", "index",
	"unique_group", "unique_reason"}

// ClearDatabaseModel removes DatabaseModelFlags from every property (and
// array item) of doc, keeping every other byte's order: key order shows in
// prompts and in the content hash. It reports whether anything was
// removed; a document that is not a JSON object is an error.
func ClearDatabaseModel(doc json.RawMessage) (json.RawMessage, bool, error) {
	var b bytes.Buffer
	changed, err := clearModel(&b, doc, false)
	if err != nil {
		return nil, false, fmt.Errorf("clear the database model: %w", err)
	}
	if !changed {
		return doc, false, nil
	}
	return b.Bytes(), true, nil
}

// clearModel writes raw to b compacted, without the flags when raw is a
// property schema; children are walked through properties, items and
// $defs.
func clearModel(b *bytes.Buffer, raw json.RawMessage, property bool) (bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false, json.Compact(b, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return false, err
	}
	changed, first := false, true
	b.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false, err
		}
		if property && isModelFlag(key) {
			changed = true
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeKey(b, key)
		var c bool
		switch key {
		case "properties", "$defs":
			c, err = clearEach(b, v, key == "properties")
		case "items":
			c, err = clearModel(b, v, true)
		default:
			err = json.Compact(b, v)
		}
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	b.WriteByte('}')
	return changed, nil
}

// clearEach walks an object of schemas (properties or $defs) in order.
func clearEach(b *bytes.Buffer, raw json.RawMessage, property bool) (bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false, json.Compact(b, raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return false, err
	}
	changed, first := false, true
	b.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false, err
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		key, _ := t.(string)
		writeKey(b, key)
		c, err := clearModel(b, v, property)
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	b.WriteByte('}')
	return changed, nil
}

// writeKey writes an object key and its colon as JSON text, leaving <, >
// and & as they are.
func writeKey(b *bytes.Buffer, key string) {
	var k bytes.Buffer
	enc := json.NewEncoder(&k)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(key)
	b.Write(bytes.TrimRight(k.Bytes(), "\n"))
	b.WriteByte(':')
}

func isModelFlag(k string) bool {
	for _, f := range DatabaseModelFlags {
		if k == f {
			return true
		}
	}
	return false
}

// ClearDatabaseModel strips DatabaseModelFlags from the working copy at
// now (the package function); it reports whether the document changed.
// A published contract is left as it is until the next publish.
func (s *Schema) ClearDatabaseModel(now time.Time) (bool, error) {
	doc, changed, err := ClearDatabaseModel(s.Content)
	if err != nil || !changed {
		return false, err
	}
	s.Edit(doc, now)
	return true, nil
}
