package dbsync_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
)

func entityKeyed(schema, sid, payload string) *dbsync.Entity {
	ki, _ := json.Marshal([][2]any{{"semantic_id", sid}})
	id := dbsync.Identity{EntityType: "company", KeyIdentity: string(ki), Keys: map[string]string{"semantic_id": sid}, SemanticID: sid}
	return &dbsync.Entity{ID: dbsync.EntityID(schema, id), OrgID: "o", SchemaID: schema, EntityType: "company",
		KeyIdentity: id.KeyIdentity, Keys: id.Keys, SemanticID: sid, Payload: json.RawMessage(payload), LastRecordID: "r-" + sid}
}

func TestPlanRedirect(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	loserA := entityKeyed("s1", "L", `{"semantic_id":"L","name":"Intl"}`)
	winnerA := entityKeyed("s1", "W", `{"semantic_id":"W","name":"IBM"}`)
	loserB := entityKeyed("s2", "L", `{"semantic_id":"L","name":"Intl"}`)
	referrer := entityKeyed("s1", "X", `{"semantic_id":"X","parent":{"id":"L"},"n":12345678901234567890}`)
	tests := []struct {
		name     string
		found    []*dbsync.Entity
		existing map[string]*dbsync.Entity
		abs, rep int
		refs     int
		deletes  int
		writes   map[string]string // entity id -> state written
	}{
		{name: "absorbed", found: []*dbsync.Entity{loserA}, existing: map[string]*dbsync.Entity{winnerA.ID: winnerA},
			abs: 1, deletes: 1, writes: map[string]string{winnerA.ID: `{"name":"IBM","semantic_id":"W"}`}},
		{name: "repointed", found: []*dbsync.Entity{loserB}, rep: 1, deletes: 1,
			writes: map[string]string{entityKeyed("s2", "W", "{}").ID: `{"name":"Intl","semantic_id":"W"}`}},
		{name: "referrer", found: []*dbsync.Entity{referrer}, refs: 1,
			writes: map[string]string{referrer.ID: `{"n":12345678901234567890,"parent":{"id":"W"},"semantic_id":"X"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			targets, err := dbsync.RedirectTargets(tt.found, "L", "W")
			is.NoErr(err)
			is.Equal(len(targets), tt.abs+tt.rep)
			r, err := dbsync.PlanRedirect(tt.found, tt.existing, "L", "W", "b", at)
			is.NoErr(err)
			is.Equal([3]int{r.Absorbed, r.Repointed, r.Referrers}, [3]int{tt.abs, tt.rep, tt.refs})
			is.Equal(len(r.Deletes), tt.deletes)
			got := map[string]string{}
			for _, w := range r.Writes {
				got[dbsync.EntityID(w.SchemaID, w.Identity)] = string(w.State)
				is.Equal(w.BatchID, "b")
			}
			is.Equal(got, tt.writes)
		})
	}
}
