package sandbox_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
)

func TestContrarianPlannedDisagreements(t *testing.T) {
	is := is.New(t)
	var schema map[string]any
	is.NoErr(json.Unmarshal([]byte(`{"type":"object","properties":{
		"a_text":{"type":"string"},"b_text":{"type":"string"},"name":{"type":"string"},
		"count":{"type":"integer","minimum":0,"maximum":1000},"tags":{"type":"array","items":{"type":"string"}},
		"public":{"type":"boolean"}}}`), &schema))
	entity := map[string]any{"name": "Acme"}
	echo := sandbox.Generate(schema, entity, "echo").(map[string]any)
	own := sandbox.Generate(schema, entity, "contrarian").(map[string]any)
	c := sandbox.Contrarian(schema, entity).(map[string]any)
	is.Equal(c["a_text"], own["a_text"])  // position 0: its own
	is.Equal(c["b_text"], echo["b_text"]) // position 1: echo's
	is.Equal(c["name"], "Acme")           // echoed from the entity
	is.Equal(c["count"], own["count"])    // numbers: its own
	is.Equal(c["public"], !echo["public"].(bool))
	again := sandbox.Contrarian(schema, entity)
	is.Equal(again, any(c)) // deterministic
}
