package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/ports"
)

// RunRecordConceptRepoint runs the contract of RepointConcept: the
// organization's records that name the loser, live and soft-deleted,
// name the winner in their refs (with its canonical text) and in their
// output where it still carried the loser; other records, other concepts
// and other organizations are untouched; a second run changes nothing.
func RunRecordConceptRepoint(t *testing.T, newStore func(t *testing.T) ports.RecordStore) {
	ctx := context.Background()
	is := is.New(t)
	s := newStore(t)
	org := newID("org")
	loser, winner, other := newID("c"), newID("c"), newID("c")
	mk := func(org string, n int, out string, refs ...enrichment.SemanticConceptRef) *enrichment.Record {
		r := newRecord(org, n)
		r.StructuredOutput, r.SemanticConcepts = json.RawMessage(out), refs
		is.NoErr(s.CreateRecord(ctx, r))
		return r
	}
	ref := func(id, path string) enrichment.SemanticConceptRef {
		return enrichment.SemanticConceptRef{ConceptID: id, AliasID: id + "-a", ConceptType: "company", CanonicalText: "old " + id, JSONPath: path}
	}
	root := mk(org, 0, `{"id": "`+loser+`", "n": 12345678901234567890}`, ref(loser, "$.id"))
	// A record's unresolved properties round-trip, and a repoint keeps them.
	unresolved := []enrichment.SemanticUnresolved{{JSONPath: "$.o[0].id", ConceptType: "company", Text: "Acme", Reason: enrichment.UnresolvedFailed}}
	partial := newRecord(org, 5)
	partial.StructuredOutput, partial.SemanticConcepts, partial.SemanticUnresolved = json.RawMessage(`{"id": "`+loser+`", "o": [{"id": null}]}`),
		[]enrichment.SemanticConceptRef{ref(loser, "$.id")}, unresolved
	is.NoErr(s.CreateRecord(ctx, partial))
	nested := mk(org, 1, `{"o": [{"id": "`+other+`"}, {"id": "`+loser+`"}]}`, ref(other, "$.o[0].id"), ref(loser, "$.o[1].id"))
	deleted := mk(org, 2, `{"id": "`+loser+`"}`, ref(loser, "$.id"))
	untouched := mk(org, 3, `{"id": "`+other+`"}`, ref(other, "$.id"))
	foreign := mk(newID("org"), 4, `{"id": "`+loser+`"}`, ref(loser, "$.id"))
	_, err := s.DeleteRecords(ctx, org, []string{deleted.ID}, false, at(10))
	is.NoErr(err)

	n, err := s.RepointConcept(ctx, org, loser, winner, "Winner")
	is.NoErr(err)
	is.Equal(n, 4)
	get := func(org, id string) *enrichment.Record {
		t.Helper()
		r, err := s.GetRecord(ctx, org, id)
		is.NoErr(err)
		return r
	}
	output := func(r *enrichment.Record) map[string]any {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(r.StructuredOutput))
		d.UseNumber()
		is.NoErr(d.Decode(&m))
		return m
	}
	r := get(org, root.ID)
	is.Equal(r.SemanticConcepts[0].ConceptID, winner)
	is.Equal(r.SemanticConcepts[0].CanonicalText, "Winner")
	is.Equal(r.SemanticConcepts[0].AliasID, loser+"-a")
	is.Equal(output(r)["id"], winner)
	is.Equal(output(r)["n"], json.Number("12345678901234567890")) // numbers keep their digits
	r = get(org, partial.ID)
	is.Equal(r.SemanticConcepts[0].ConceptID, winner)
	is.Equal(r.SemanticUnresolved, unresolved)
	r = get(org, nested.ID)
	is.Equal(r.SemanticConcepts[0].ConceptID, other)
	is.Equal(r.SemanticConcepts[0].CanonicalText, "old "+other)
	is.Equal(r.SemanticConcepts[1].ConceptID, winner)
	items, _ := output(r)["o"].([]any)
	is.Equal(len(items), 2)
	is.Equal(items[0].(map[string]any)["id"], other)
	is.Equal(items[1].(map[string]any)["id"], winner)
	r = get(org, untouched.ID)
	is.Equal(r.SemanticConcepts[0].ConceptID, other)
	r = get(foreign.OrgID, foreign.ID)
	is.Equal(r.SemanticConcepts[0].ConceptID, loser)
	is.Equal(output(r)["id"], loser)

	n, err = s.RepointConcept(ctx, org, loser, winner, "Winner")
	is.NoErr(err)
	is.Equal(n, 0) // nothing names the loser any more
	n, err = s.RepointConcept(ctx, org, "a\x00", winner, "Winner")
	is.NoErr(err)
	is.Equal(n, 0)
}
