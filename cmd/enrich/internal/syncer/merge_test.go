package syncer_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
	"github.com/entityenrich/enrich/test/serve"
)

// mergeSchema is keyed by its root semantic_id property alone.
const mergeSchema = `{"type":"object","title":"company","properties":{
  "semantic_id":{"type":"string","semantic_id":true,"semantic_concept_type":"company"},
  "name":{"type":"string"}}}`

// TestSyncConceptMerge: two entities keyed by concepts A and B reach the
// consumer as two rows; merging B into A sends redirect deltas (B's row
// deleted, A's upserted) and the consumer ends with one row, which a
// fresh snapshot and the checksum agree with.
func TestSyncConceptMerge(t *testing.T) {
	serverDSN, targetDSN, freshDSN := pgtest.Native(t), pgtest.Native(t), pgtest.Native(t)
	ctx := context.Background()
	r := newReplicationOf(t, serve.Sandbox(t, enrich.Config{DatabaseURL: serverDSN}), mergeSchema)
	var me struct {
		Organization struct {
			ID string `json:"id"`
		} `json:"organization"`
	}
	r.call("GET", "/api/auth/me", nil, &me)
	db, err := postgres.Open(ctx, serverDSN, postgres.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	store := postgres.NewConceptStore(db)
	ids := map[string]string{}
	for i, text := range []string{"IBM", "International Business Machines"} {
		c, err := store.CreateConcept(ctx, ports.NewConcept{ID: "concept-" + text[:3], OrgID: me.Organization.ID, Type: "company",
			AliasID: "alias-" + text[:3], Text: text, Origin: concept.OriginManual, CreatedAt: time.Now().Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		ids[text] = c.ID
	}
	a, b := ids["IBM"], ids["International Business Machines"]
	target := connectTarget(t, targetDSN)
	r.sync(ctx, target) // the DDL
	for _, e := range []map[string]any{{"semantic_id": a, "name": "IBM"}, {"semantic_id": b, "name": "Intl. Business Machines"}} {
		r.call("POST", "/api/single/enrich/sync", map[string]any{"entity_data": e, "schema_id": r.schema,
			"models": []string{"sandbox::echo"}}, nil)
	}
	r.sync(ctx, target)
	if got := companyIDs(t, target); len(got) != 2 {
		t.Fatalf("before the merge the target holds %v, two rows expected", got)
	}

	var impact struct {
		EntityCount   int      `json:"entity_count"`
		Absorbed      int      `json:"absorbed_entity_count"`
		DatabaseNames []string `json:"database_names"`
		LoserText     string   `json:"loser_text"`
	}
	r.call("POST", "/api/semantic-concepts/merge-impact", map[string]any{"winner_id": a, "loser_id": b}, &impact)
	if impact.EntityCount != 1 || impact.Absorbed != 1 || len(impact.DatabaseNames) != 1 || impact.LoserText != "International Business Machines" {
		t.Fatalf("impact %+v", impact)
	}
	var res struct {
		AliasesMoved      int `json:"aliases_moved"`
		DatabasesNotified int `json:"databases_notified"`
		DeltasQueued      int `json:"deltas_queued"`
		EntitiesAbsorbed  int `json:"entities_absorbed"`
	}
	r.call("POST", "/api/semantic-concepts/merge", map[string]any{"winner_id": a, "loser_id": b}, &res)
	if res.AliasesMoved != 1 || res.DatabasesNotified != 1 || res.DeltasQueued != 2 || res.EntitiesAbsorbed != 1 {
		t.Fatalf("merge %+v", res)
	}
	st := r.sync(ctx, target)
	if got := companyIDs(t, target); len(got) != 1 || got[0] != a {
		t.Fatalf("after the merge the target holds %v, the winner's row alone expected", got)
	}
	if _, diffs, err := r.syncer(target).s.Verify(ctx); err != nil || len(diffs) > 0 {
		t.Fatalf("verify: %v %v", err, diffs)
	}
	fresh := connectTarget(t, freshDSN)
	fs := r.syncer(fresh)
	if loaded, err := fs.s.Bootstrap(ctx); err != nil || !loaded {
		t.Fatalf("snapshot: loaded %v, %v", loaded, err)
	}
	if fs.s.Stats().Watermark != st.Watermark {
		t.Fatalf("snapshot as of %d, the target at %d", fs.s.Stats().Watermark, st.Watermark)
	}
	compareDatabases(t, target, fresh)
}

func companyIDs(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT semantic_id FROM company ORDER BY semantic_id`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
