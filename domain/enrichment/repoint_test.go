package enrichment_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

func TestRecordRepointConcept(t *testing.T) {
	cases := []struct {
		name    string
		out     string
		refs    []enrichment.SemanticConceptRef
		changed bool
		wantOut string
		wantIDs []string
	}{
		{"root", `{"id":"L","n":12345678901234567890}`, []enrichment.SemanticConceptRef{{ConceptID: "L", AliasID: "a", JSONPath: "$.id"}},
			true, `{"id":"W","n":12345678901234567890}`, []string{"W"}},
		{"nested and other concepts", `{"o":[{"id":"X"},{"id":"L"}]}`, []enrichment.SemanticConceptRef{
			{ConceptID: "X", JSONPath: "$.o[0].id"}, {ConceptID: "L", JSONPath: "$.o[1].id"}},
			true, `{"o":[{"id":"X"},{"id":"W"}]}`, []string{"X", "W"}},
		{"an output edited since", `{"id":"edited"}`, []enrichment.SemanticConceptRef{{ConceptID: "L", JSONPath: "$.id"}},
			true, `{"id":"edited"}`, []string{"W"}},
		{"a path that does not resolve", `{"id":"L"}`, []enrichment.SemanticConceptRef{{ConceptID: "L", JSONPath: "$.x[3].id"}},
			true, `{"id":"L"}`, []string{"W"}},
		{"not named", `{"id":"L"}`, []enrichment.SemanticConceptRef{{ConceptID: "X", JSONPath: "$.id"}},
			false, `{"id":"L"}`, []string{"X"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			r := enrichment.Record{StructuredOutput: []byte(c.out), SemanticConcepts: c.refs}
			is.Equal(r.RepointConcept("L", "W", "Winner"), c.changed)
			is.Equal(string(r.StructuredOutput), c.wantOut)
			for i, ref := range r.SemanticConcepts {
				is.Equal(ref.ConceptID, c.wantIDs[i])
				if ref.ConceptID == "W" {
					is.Equal(ref.CanonicalText, "Winner")
				}
			}
		})
	}
}
