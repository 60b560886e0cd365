package e2e_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestFusedRecordResolvesConcepts: a job with two models auto-fuses, and
// the fused record resolves its semantic id as a model's record does: it
// names the concept (the one a single model's record names) in its output
// and its semantic concepts.
func TestFusedRecordResolvesConcepts(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("concepts-fused@example.com").key
			sc := s.createSchema(key, "Company", conceptSchema)
			var single conceptEnrichAnswer
			is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, &single), 200)
			id, _ := single.Result["id"].(string)
			is.True(id != "")

			var fused conceptEnrichAnswer
			is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
				"models": []string{"sandbox::echo", "sandbox::alt"}}, &fused), 200)
			var rec struct {
				conceptRecord
				Type             string         `json:"type"`
				StructuredOutput map[string]any `json:"structured_output"`
			}
			is.Equal(s.call("GET", "/api/records/"+fused.RecordID, key, nil, &rec), 200)
			is.Equal(rec.Type, "fusion")
			is.Equal(len(rec.Raw), 1)
			is.Equal(rec.Raw[0]["concept_id"], id)
			is.Equal(rec.Raw[0]["json_path"], "$.id")
			is.Equal(rec.StructuredOutput["id"], id)
			is.Equal(fused.Result["id"], id)
		})
	}
}

// refConceptSchema's semantic_id property sits in a definition that the
// root reaches through $ref, twice (an object and array items), and the
// definition refers to itself (a cycle the walk must end).
const refConceptSchema = `{"type": "object", "properties": {
	"name": {"type": "string", "identifying": true},
	"publisher": {"$ref": "#/$defs/Company"},
	"imprints": {"type": "array", "items": {"$ref": "#/$defs/Company"}}},
	"$defs": {"Company": {"type": "object", "properties": {
		"name": {"type": "string", "identifying": true},
		"sid": {"type": ["string", "null"], "semantic_id": true, "semantic_concept_type": "publisher"}}}}}`

// TestEnrichmentResolvesConceptsThroughRef: a semantic_id property reached
// through a $defs reference is resolved at the referring property's path.
func TestEnrichmentResolvesConceptsThroughRef(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("concepts-ref@example.com").key
			sc := s.createSchema(key, "Book", refConceptSchema)
			var out conceptEnrichAnswer
			is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "Dune",
				"publisher": obj{"name": "Chilton Books"}, "imprints": []obj{{"name": "Ace"}}}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, &out), 200)
			pub, _ := out.Result["publisher"].(map[string]any)
			sid, _ := pub["sid"].(string)
			is.True(sid != "")
			var rec conceptRecord
			is.Equal(s.call("GET", "/api/records/"+out.RecordID, key, nil, &rec), 200)
			paths := map[string]map[string]any{}
			for _, r := range rec.Raw {
				paths[r["json_path"].(string)] = r
			}
			is.Equal(paths["$.publisher.sid"]["concept_id"], sid)
			is.Equal(paths["$.publisher.sid"]["canonical_text"], "Chilton Books")
			is.Equal(paths["$.publisher.sid"]["concept_type"], "publisher")
			// The same definition as array items (which the walk of the
			// output reached no item of before).
			is.Equal(paths["$.imprints[0].sid"]["canonical_text"], "Ace")
			is.Equal(len(rec.Raw), 2)
		})
	}
}

// TestEnrichmentListsUnresolvedConcepts: with the embedder down, the
// enrichment stands, the semantic id is null, and the record lists the
// property it could not resolve, with the text and why.
func TestEnrichmentListsUnresolvedConcepts(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			fake := fakeopenai.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.Providers = append(cfg.Providers, llm.ProviderConfig{Name: "openai", Type: "openai", BaseURL: fake.URL(),
				APIKey: "sk-unresolved-key", Models: []string{"gpt-4o-mini"}})
			cfg.EmbeddingModel = "openai::text-embedding-3-small"
			s := start(t, cfg)
			key := s.register("concepts-unresolved@example.com").key
			sc := s.createSchema(key, "Company", conceptSchema)
			fake.FailNext(1000, 400) // the embedder is down
			var out conceptEnrichAnswer
			is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, &out), 200)
			is.Equal(out.Result["id"], nil)
			var rec struct {
				conceptRecord
				Unresolved []map[string]any `json:"semantic_unresolved"`
			}
			is.Equal(s.call("GET", "/api/records/"+out.RecordID, key, nil, &rec), 200)
			is.Equal(len(rec.Raw), 0)
			is.Equal(len(rec.Unresolved), 1)
			is.Equal(rec.Unresolved[0]["json_path"], "$.id")
			is.Equal(rec.Unresolved[0]["concept_type"], "company")
			is.Equal(rec.Unresolved[0]["text"], "IBM")
			is.Equal(rec.Unresolved[0]["reason"], "failed")

			// With the embedder back, the list is empty.
			fake.FailNext(0, 0)
			is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
				"models": []string{"sandbox::echo"}}, &out), 200)
			is.Equal(s.call("GET", "/api/records/"+out.RecordID, key, nil, &rec), 200)
			is.Equal(len(rec.Raw), 1)
			is.True(rec.Unresolved != nil)
			is.Equal(len(rec.Unresolved), 0)
		})
	}
}

// TestManualMergeResolvesConcepts: a record fused by POST
// /api/fusion/merge resolves its semantic ids as an auto-fused one does,
// and names its concept.
func TestManualMergeResolvesConcepts(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("concepts-merge@example.com").key
			sc := s.createSchema(key, "Company", conceptSchema)
			var ids []string
			var id string
			for _, m := range []string{"sandbox::echo", "sandbox::alt"} {
				var out conceptEnrichAnswer
				is.Equal(s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": "IBM"}, "schema_id": sc,
					"models": []string{m}}, &out), 200)
				id, _ = out.Result["id"].(string)
				is.True(id != "")
				ids = append(ids, out.RecordID)
			}
			var merged struct {
				RecordID     string         `json:"record_id"`
				MergedResult map[string]any `json:"merged_result"`
			}
			is.Equal(s.call("POST", "/api/fusion/merge", key, obj{"result_ids": ids}, &merged), 200)
			is.True(merged.RecordID != "")
			var rec struct {
				conceptRecord
				Type             string         `json:"type"`
				StructuredOutput map[string]any `json:"structured_output"`
			}
			is.Equal(s.call("GET", "/api/records/"+merged.RecordID, key, nil, &rec), 200)
			is.Equal(rec.Type, "fusion")
			is.Equal(len(rec.Raw), 1) // the fused record names its concept
			is.Equal(rec.Raw[0]["concept_id"], id)
			is.Equal(rec.Raw[0]["json_path"], "$.id")
			is.Equal(rec.StructuredOutput["id"], id)
		})
	}
}
