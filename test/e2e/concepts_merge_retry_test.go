package e2e_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
)

var errInjected = errors.New("injected fault")

// faultyUoW is a unit of work whose units fail one step while armed: the
// records' repoint (step "records") or the entity layer's upserts, after
// the redirect's deletes (step "entities").
type faultyUoW struct {
	ports.UnitOfWork
	step  string
	fails atomic.Int32
}

func (f *faultyUoW) InTx(ctx context.Context, fn func(context.Context, ports.Repos) error) error {
	return f.UnitOfWork.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		switch f.step {
		case "records":
			r.Records = faultyRecords{RecordStore: r.Records, f: f}
		case "entities":
			r.Entities = faultyEntities{EntityWriter: r.Entities, f: f}
		}
		return fn(ctx, r)
	})
}

func (f *faultyUoW) fail() bool { return f.fails.Add(-1) >= 0 }

type faultyRecords struct {
	ports.RecordStore
	f *faultyUoW
}

func (r faultyRecords) RepointConcept(ctx context.Context, orgID, from, to, text string) (int, error) {
	if r.f.fail() {
		return 0, errInjected
	}
	return r.RecordStore.RepointConcept(ctx, orgID, from, to, text)
}

type faultyEntities struct {
	ports.EntityWriter
	f *faultyUoW
}

func (e faultyEntities) WriteEntities(ctx context.Context, ws []ports.EntityWrite) ([]ports.EntityWritten, error) {
	if e.f.fail() {
		return nil, errInjected
	}
	return e.EntityWriter.WriteEntities(ctx, ws)
}

// TestConceptMergeFailsWhole: on a linked schema, "IBM" and "Big Blue
// Holdings" are two concepts, two records and two entities. The concept
// names its records with their identity text and schema, and the delete
// impact counts the deltas a resync would emit. A merge that fails half
// way (the records' repoint, or the entity upserts after the redirect's
// deletes) leaves everything as it was: the loser, its record, its link
// and its entity. Run again, it finishes: one concept, both records
// naming the winner, one entity; a third run is 404.
func TestConceptMergeFailsWhole(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		for _, step := range []string{"records", "entities"} {
			t.Run(b.name+"/"+step, func(t *testing.T) {
				is := is.New(t)
				s := start(t, testConfig(b.dsn(t)))
				ten := s.register("concepts-merge-retry@example.com")
				key := ten.key
				sc := s.createSchema(key, "Linked company", conceptSchema)
				is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", key, obj{"name": "wh", "on_gaps": "reject_entity"}, nil), 201)
				is.Equal(s.call("POST", "/api/schema/saved/"+sc+"/publish", key, nil, nil), 200)
				a, recA := enrichConcept(t, s, key, sc, "IBM")
				loser, recB := enrichConcept(t, s, key, sc, "Big Blue Holdings")
				is.True(a != loser)
				entities := entityRun{t: t, s: s, key: key, schema: sc}
				is.Equal(entities.entities("").Total, 2)

				// The records of a concept carry their names.
				var detail conceptRecords
				is.Equal(s.call("GET", "/api/semantic-concepts/"+loser, key, nil, &detail), 200)
				is.Equal(len(detail.Records), 1)
				is.Equal(detail.Records[0].RecordID, recB)
				is.Equal(detail.Records[0].EntityName, "Big Blue Holdings")
				is.Equal(detail.Records[0].SchemaName, "Linked company")
				is.Equal(resyncDeltas(t, s, key, a, loser), 2) // two entities, one feed each

				f := &faultyUoW{UnitOfWork: s.srv.Concepts.UoW, step: step}
				cs := *s.srv.Concepts
				cs.UoW = f
				owner := &access.Principal{OrgID: ten.orgID, UserID: "owner", Role: access.Owner,
					Scopes: []access.Scope{access.ScopeRead, access.ScopeWrite}}
				f.fails.Store(1)
				_, err := cs.Merge(context.Background(), owner, a, loser)
				is.True(errors.Is(err, errInjected))

				// Nothing half-done.
				is.Equal(s.call("GET", "/api/semantic-concepts/"+loser, key, nil, &detail), 200)
				is.Equal(len(detail.Records), 1)
				is.Equal(conceptOf(t, s, key, recB), loser)
				is.Equal(entities.entities("").Total, 2)

				// The re-run finishes.
				res, err := cs.Merge(context.Background(), owner, a, loser)
				is.NoErr(err)
				is.Equal(res.EntitiesAbsorbed, 1)
				is.True(res.DeltasQueued >= 1) // at least the loser's entity's delete
				is.Equal(s.call("GET", "/api/semantic-concepts/"+loser, key, nil, nil), 404)
				is.Equal(conceptOf(t, s, key, recA), a)
				is.Equal(conceptOf(t, s, key, recB), a)
				is.Equal(entities.entities("").Total, 1)
				is.Equal(s.call("GET", "/api/semantic-concepts/"+a, key, nil, &detail), 200)
				is.Equal(detail.RefCount, 2)
				is.Equal(len(detail.Records), 2)
				is.Equal(resyncDeltas(t, s, key, a), 1)
				_, err = cs.Merge(context.Background(), owner, a, loser)
				is.True(errors.Is(err, ports.ErrNotFound))
			})
		}
	}
}

type conceptRecords struct {
	RefCount int `json:"ref_count"`
	Records  []struct {
		RecordID   string `json:"record_id"`
		EntityName string `json:"entity_name"`
		SchemaName string `json:"schema_name"`
	} `json:"records"`
}

// conceptOf is the concept id a record's one semantic concept names.
func conceptOf(t *testing.T, s *service, key, recordID string) any {
	t.Helper()
	var rec struct {
		conceptRecord
		StructuredOutput map[string]any `json:"structured_output"`
	}
	if st := s.call("GET", "/api/records/"+recordID, key, nil, &rec); st != 200 || len(rec.Raw) != 1 {
		t.Fatalf("record %s: %d, %d concepts", recordID, st, len(rec.Raw))
	}
	if rec.Raw[0]["concept_id"] != rec.StructuredOutput["id"] {
		t.Errorf("record %s: concept %v, output id %v", recordID, rec.Raw[0]["concept_id"], rec.StructuredOutput["id"])
	}
	return rec.Raw[0]["concept_id"]
}

func resyncDeltas(t *testing.T, s *service, key string, ids ...string) int {
	t.Helper()
	var im struct {
		ConceptCount int  `json:"concept_count"`
		Resync       *int `json:"resync_delta_count"`
	}
	if st := s.call("POST", "/api/semantic-concepts/delete-impact", key, obj{"ids": ids}, &im); st != 200 || im.Resync == nil {
		t.Fatalf("delete-impact: %d, %+v", st, im)
	}
	if im.ConceptCount != len(ids) {
		t.Errorf("delete-impact: %d concepts, want %d", im.ConceptCount, len(ids))
	}
	return *im.Resync
}
