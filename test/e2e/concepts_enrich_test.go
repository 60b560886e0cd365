package e2e_test

import (
	"slices"
	"testing"

	"github.com/matryer/is"
)

// conceptSchema has a root semantic_id property over an identifying name.
const conceptSchema = `{"type": "object", "title": "company", "properties": {
	"name": {"type": "string", "identifying": true},
	"id": {"type": ["string", "null"], "semantic_id": true, "semantic_concept_type": "company"}}}`

type conceptEnrichAnswer struct {
	Result   map[string]any `json:"result"`
	RecordID string         `json:"record_id"`
}

type conceptRecord struct {
	Raw []map[string]any `json:"semantic_concepts"`
}

// TestEnrichmentResolvesConcepts is issue 30's acceptance: a root
// semantic_id property over an identifying name gets a concept id and the
// record names it; an alias added through the API makes another text
// resolve to the same id, and the concept lists both records. On a linked
// schema the two texts are one entity, keyed by the concept id.
func TestEnrichmentResolvesConcepts(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("concepts-enrich@example.com").key
			sc := s.createSchema(key, "Company", conceptSchema)
			enrich := func(schema, name string) conceptEnrichAnswer {
				t.Helper()
				var out conceptEnrichAnswer
				if st := s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": name}, "schema_id": schema,
					"models": []string{"sandbox::echo"}}, &out); st != 200 {
					t.Fatalf("enrich %q: %d", name, st)
				}
				return out
			}

			first := enrich(sc, "IBM")
			id, _ := first.Result["id"].(string)
			is.True(id != "")
			var rec conceptRecord
			is.Equal(s.call("GET", "/api/records/"+first.RecordID, key, nil, &rec), 200)
			is.Equal(len(rec.Raw), 1)
			is.Equal(rec.Raw[0]["concept_id"], id)
			is.Equal(rec.Raw[0]["json_path"], "$.id")
			is.Equal(rec.Raw[0]["canonical_text"], "IBM")

			// The alias through the API, then the other text resolves to X.
			var c struct {
				ConceptType string `json:"concept_type"`
			}
			is.Equal(s.call("GET", "/api/semantic-concepts/"+id, key, nil, &c), 200)
			is.Equal(c.ConceptType, "company")
			is.Equal(s.call("POST", "/api/semantic-concepts", key, obj{"text": "International Business Machines Corp.",
				"concept_type": c.ConceptType, "alias_of": id}, nil), 201)
			long := enrich(sc, "International Business Machines Corp.")
			is.Equal(long.Result["id"], id)
			var detail struct {
				RefCount int `json:"ref_count"`
				Records  []struct {
					RecordID string `json:"record_id"`
				} `json:"records"`
			}
			is.Equal(s.call("GET", "/api/semantic-concepts/"+id, key, nil, &detail), 200)
			var recs []string
			for _, r := range detail.Records {
				recs = append(recs, r.RecordID)
			}
			is.Equal(detail.RefCount, 2)
			is.Equal(len(recs), 2)
			is.True(slices.Contains(recs, first.RecordID))
			is.True(slices.Contains(recs, long.RecordID))
			is.Equal(enrich(sc, "ibm").Result["id"], id) // the exact rung

			// A linked database: the two texts are one entity, keyed by X.
			linked := s.createSchema(key, "Linked company", conceptSchema)
			is.Equal(s.call("POST", "/api/schemas/"+linked+"/databases", key, obj{"name": "wh", "on_gaps": "reject_entity"}, nil), 201)
			is.Equal(s.call("POST", "/api/schema/saved/"+linked+"/publish", key, nil, nil), 200)
			a, z := enrich(linked, "IBM"), enrich(linked, "International Business Machines Corp.")
			is.Equal(a.Result["id"], id)
			is.Equal(z.Result["id"], id)
			r := entityRun{t: t, s: s, key: key, schema: linked}
			page := r.entities("")
			is.Equal(page.Total, 1)
			is.Equal(len(page.Entities), 1)
			is.Equal(page.Entities[0].Keys["id"], id)
			is.Equal(page.Entities[0].Revision, int64(2))
		})
	}
}

// enrichConcept enriches name under the schema sc (conceptSchema's) with
// the echo model and returns the concept id of its result and its record.
func enrichConcept(t *testing.T, s *service, key, sc, name string) (id, recordID string) {
	t.Helper()
	var out conceptEnrichAnswer
	if st := s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": name}, "schema_id": sc,
		"models": []string{"sandbox::echo"}}, &out); st != 200 {
		t.Fatalf("enrich %q: %d", name, st)
	}
	if id, _ = out.Result["id"].(string); id == "" {
		t.Fatalf("enrich %q: no concept id in %v", name, out.Result)
	}
	return id, out.RecordID
}

// TestConceptMergeRewritesRecords: after B is merged into A, the record
// that resolved to B names A in its semantic concepts (with A's canonical
// text) and in its output; the record of A is as it was.
func TestConceptMergeRewritesRecords(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("concepts-merge-records@example.com").key
			sc := s.createSchema(key, "Company", conceptSchema)
			a, recA := enrichConcept(t, s, key, sc, "IBM")
			bID, recB := enrichConcept(t, s, key, sc, "Big Blue Holdings")
			is.True(a != bID)
			is.Equal(s.call("POST", "/api/semantic-concepts/merge", key, obj{"winner_id": a, "loser_id": bID}, nil), 200)
			for _, id := range []string{recA, recB} {
				var rec struct {
					conceptRecord
					StructuredOutput map[string]any `json:"structured_output"`
				}
				is.Equal(s.call("GET", "/api/records/"+id, key, nil, &rec), 200)
				is.Equal(len(rec.Raw), 1)
				is.Equal(rec.Raw[0]["concept_id"], a)
				is.Equal(rec.Raw[0]["canonical_text"], "IBM")
				is.Equal(rec.StructuredOutput["id"], a)
			}
			var detail struct {
				RefCount int `json:"ref_count"`
				Records  []struct {
					RecordID string `json:"record_id"`
				} `json:"records"`
			}
			is.Equal(s.call("GET", "/api/semantic-concepts/"+a, key, nil, &detail), 200)
			is.Equal(detail.RefCount, 2)
			is.Equal(len(detail.Records), 2)
		})
	}
}
