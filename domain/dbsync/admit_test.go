package dbsync_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
)

const contract = `{"root": {"name": "Company", "type": "object", "properties": {
	"name": {"type": "string", "identifying": true},
	"city": {"type": "string"},
	"note": {"type": ["string", "null"]},
	"people": {"type": "array", "nullable": true, "items": {"type": "object", "properties": {
		"name": {"type": "string"}, "role": {"type": "string", "nullable": true}}}}}}}`

func TestAdmit(t *testing.T) {
	m, err := dbsync.EntityMap(json.RawMessage(contract), "")
	if err != nil {
		t.Fatal(err)
	}
	full := `{"name": "Acme", "city": "Lyon", "people": [{"name": "Ada"}]}`
	itemGap := `{"name": "Acme", "city": "Lyon", "people": [{"name": "Ada"}, {"role": "cto"}]}`
	rootGap := `{"name": "Acme", "people": []}`
	noKey := `{"name": " ", "city": "Lyon"}`
	tests := []struct {
		policy  dbsync.OnGaps
		state   string
		status  dbsync.Status
		missing []string
		skipped []string
		people  int // items written (-1: rejected)
	}{
		{dbsync.RejectEntity, full, dbsync.StatusSaved, nil, nil, 1},
		{dbsync.RejectEntity, itemGap, dbsync.StatusRejected, []string{"people[1].name"}, nil, -1},
		{dbsync.SkipChildren, itemGap, dbsync.StatusPartial, []string{"people[1].name"}, []string{"people[1]"}, 1},
		{dbsync.SkipChildren, rootGap, dbsync.StatusRejected, []string{"city"}, nil, -1},
		{dbsync.AcceptPartial, rootGap, dbsync.StatusSaved, []string{"city"}, nil, 0},
		{dbsync.AcceptPartial, itemGap, dbsync.StatusSaved, []string{"people[1].name"}, nil, 2},
		{dbsync.AcceptPartial, noKey, dbsync.StatusRejected, nil, nil, -1},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+" "+tt.state, func(t *testing.T) {
			is := is.New(t)
			a, err := dbsync.Admit(tt.policy, json.RawMessage(contract), m, json.RawMessage(tt.state))
			is.NoErr(err)
			is.Equal(a.Outcome.Status, tt.status)
			is.Equal(a.Outcome.Saved, tt.status != dbsync.StatusRejected)
			is.Equal(a.Outcome.MissingFields, tt.missing)
			is.Equal(a.Outcome.SkippedItems, tt.skipped)
			if tt.people < 0 {
				is.True(!a.Admitted())
				is.True(a.Outcome.Reason != "")
				return
			}
			var got struct{ People []any }
			is.NoErr(json.Unmarshal(a.State, &got))
			is.Equal(len(got.People), tt.people)
			is.Equal(a.Outcome.EntityKeys, map[string]string{"name": "Acme"})
		})
	}
}

func TestDecideAndApply(t *testing.T) {
	is := is.New(t)
	shipped, err := relmap.Project(json.RawMessage(contract), relmap.Options{})
	is.NoErr(err)
	dbs := []*dbsync.Database{
		{ID: "a", OnGaps: dbsync.AcceptPartial, Links: []dbsync.Link{{SchemaID: "s", EnrichmentEnabled: true, Shipped: &shipped}}},
		{ID: "b", OnGaps: dbsync.SkipChildren, Links: []dbsync.Link{{SchemaID: "s", EnrichmentEnabled: true}}}, // never shipped
		{ID: "c", OnGaps: dbsync.RejectEntity, Links: []dbsync.Link{{SchemaID: "s", EnrichmentEnabled: false, Shipped: &shipped}}},
	}
	is.Equal(dbsync.Strictest(dbs, "s"), dbsync.SkipChildren) // c feeds nothing
	_, _, feeds, _ := dbsync.Decide(dbs, dbsync.Target{SchemaID: "other", Contract: json.RawMessage(contract)}, "r", nil, "b")
	is.True(!feeds)
	out, w, feeds, err := dbsync.Decide(dbs, dbsync.Target{OrgID: "o", SchemaID: "s", Contract: json.RawMessage(contract)}, "r1",
		json.RawMessage(`{"name": "Acme", "city": "Lyon"}`), "batch")
	is.NoErr(err)
	is.True(feeds)
	is.Equal(out.DeltaCount, 1) // only a: b never shipped, c is disabled
	is.Equal(out.BatchID, "batch")
	is.Equal(out.EntityCount, 1)
	e, dds, err := w.Apply(4, dbs)
	is.NoErr(err)
	is.Equal(e.Revision, int64(5)) // last + 1
	is.Equal(e.ID, dbsync.EntityID("s", w.Identity))
	is.Equal(len(dds), 1)
	is.Equal(dds[0].DatabaseID, "a")
	is.Equal(dds[0].Delta.BatchID, "batch")
	is.Equal(dds[0].Delta.Revision, int64(5))
	is.True(strings.Contains(dds[0].Delta.SQL, e.ID)) // the entity's id is the row's ee_id
	del, err := dbsync.DeleteDeltas(dbs, e, 6, "batch2", e.UpdatedAt)
	is.NoErr(err)
	is.Equal(len(del), 1)
	is.True(strings.HasPrefix(del[0].Delta.SQL, "DELETE FROM"))
}
