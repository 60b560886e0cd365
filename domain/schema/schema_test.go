package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

func TestContentHash(t *testing.T) {
	is := is.New(t)
	a := schema.ContentHash(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	spaced := schema.ContentHash(json.RawMessage("{ \"type\": \"object\",\n \"properties\": {\"a\": {\"type\": \"string\"}} }"))
	reordered := schema.ContentHash(json.RawMessage(`{"properties":{"a":{"type":"string"}},"type":"object"}`))
	changed := schema.ContentHash(json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"}}}`))
	is.Equal(a, spaced)     // whitespace does not count
	is.True(a != reordered) // key order does
	is.True(a != changed)   // content does
	is.Equal(len(a), 64)    // hex SHA-256
	is.True(schema.ContentHash(json.RawMessage(`{not json`)) != "")
}
