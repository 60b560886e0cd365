package e2e_test

import (
	"testing"

	"github.com/matryer/is"
)

// TestEnrichmentResolvesConcepts: a root semantic_id property over an
// identifying name gets a concept id, and the record names it.
func TestEnrichmentResolvesConcepts(t *testing.T) {
	is := is.New(t)
	cfg := testConfig("")
	s := start(t, cfg)
	key := s.register("concepts-enrich@example.com").key
	sc := s.createSchema(key, "Company", `{"type": "object", "properties": {
		"name": {"type": "string", "identifying": true},
		"id": {"type": ["string", "null"], "semantic_id": true, "semantic_concept_type": "company"}}}`)
	var out struct {
		Result   map[string]any `json:"result"`
		RecordID string         `json:"record_id"`
	}
	is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
		"models": []string{"sandbox::echo"}}, &out), 200)
	id, _ := out.Result["id"].(string)
	is.True(id != "")
	var rec struct {
		Raw []map[string]any `json:"semantic_concepts"`
	}
	is.Equal(s.call("GET", "/api/records/"+out.RecordID, key, nil, &rec), 200)
	is.Equal(len(rec.Raw), 1)
	is.Equal(rec.Raw[0]["concept_id"], id)
	is.Equal(rec.Raw[0]["json_path"], "$.id")
	is.Equal(rec.Raw[0]["canonical_text"], "IBM")

	is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "ibm"}, "schema_id": sc,
		"models": []string{"sandbox::echo"}}, &out), 200)
	is.Equal(out.Result["id"], id) // the exact rung
}
