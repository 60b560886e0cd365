package e2e_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/test/pgtest"
)

// entitySchema is keyed by domain, with an array of objects (offices) and
// an array of scalars (tags). ceo and offices[].note have no type: a null
// the entity data names is echoed as a null, the sandbox's way to leave a
// non-nullable property unfilled (a gap).
const entitySchema = `{"type":"object","title":"company","properties":{
  "domain":{"type":"string","database_key":true},
  "name":{"type":"string"},
  "ceo":{"description":"the chief executive"},
  "offices":{"type":"array","items":{"type":"object","properties":{"city":{"type":"string"},"note":{"description":"free text"}}}},
  "tags":{"type":"array","items":{"type":"string"}}}}`

// dbOutcome is the wire's DatabaseSyncOutcome, as far as the tests read it.
type dbOutcome struct {
	Saved         bool              `json:"saved"`
	Status        string            `json:"status"`
	BatchID       *string           `json:"batch_id"`
	DeltaCount    int               `json:"delta_count"`
	EntityCount   int               `json:"entity_count"`
	EntityKeys    map[string]string `json:"entity_keys"`
	MissingFields []string          `json:"missing_fields"`
	SkippedItems  []string          `json:"skipped_items"`
	Reason        *string           `json:"reason"`
}

type syncAnswer struct {
	RecordID string     `json:"record_id"`
	Database *dbOutcome `json:"database"`
}

// entityRun is one tenant's linked schema, its registration, and a way to
// enrich it.
type entityRun struct {
	t      *testing.T
	s      *service
	key    string
	schema string
	db     string
}

func linkedSchema(t *testing.T, s *service, key, onGaps string) entityRun {
	is := is.New(t)
	sc := s.createSchema(key, "Company", entitySchema)
	var created struct {
		Database databaseSync `json:"database"`
	}
	is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", key, obj{"name": "wh", "on_gaps": onGaps}, &created), 201)
	var pub struct {
		DeltaIDs []int `json:"delta_ids"`
	}
	is.Equal(s.call("POST", "/api/schema/saved/"+sc+"/publish", key, nil, &pub), 200)
	is.Equal(len(pub.DeltaIDs), 1) // the DDL
	return entityRun{t: t, s: s, key: key, schema: sc, db: created.Database.ID}
}

func (r entityRun) enrich(entity obj, extra obj) syncAnswer {
	r.t.Helper()
	body := obj{"entity_data": entity, "schema_id": r.schema, "models": []string{"sandbox::echo"}}
	for k, v := range extra {
		body[k] = v
	}
	var res syncAnswer
	if st := r.s.call("POST", "/api/single/enrich/sync", r.key, body, &res); st != 200 {
		r.t.Fatalf("enrich: %d", st)
	}
	return res
}

func acme(offices []obj, tags []string, ceo any) obj {
	return obj{"domain": "acme.test", "name": "Acme", "ceo": ceo, "offices": offices, "tags": tags}
}

// TestEntityLayerEnrichment: a linked, published schema's enrichment
// writes its entity (revision 1, then 2), queues one upsert per run under
// one batch, announces database_saved before completed and answers the
// database block; reject_entity refuses a gap (database_rejected, nothing
// written), skip_children drops the gapped items (partial);
// database_sync=false and an unlinked schema write nothing. On PostgreSQL
// the shipped DDL and the data deltas, applied in id order to a scratch
// database, give the entity's rows, the shrunk arrays included.
func TestEntityLayerEnrichment(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			key := s.register("entities@example.com").key
			r := linkedSchema(t, s, key, "reject_entity")

			first := r.enrich(acme([]obj{{"city": "Paris", "note": "hq"}, {"city": "Oslo", "note": "lab"}}, []string{"a", "b", "c"}, "Jane"), nil)
			d := first.Database
			is.True(d != nil)
			is.True(d.Saved)
			is.Equal(d.Status, "saved")
			is.Equal(d.DeltaCount, 1)
			is.Equal(d.EntityCount, 1)
			is.Equal(d.EntityKeys, map[string]string{"domain": "acme.test"})
			is.True(d.BatchID != nil && *d.BatchID != "")

			// The second run of the identity, streamed: the arrays shrink.
			evs := s.follow(key, s.startJob(key, obj{"entity_data": acme([]obj{{"city": "Paris", "note": "hq"}}, []string{"a"}, "Joe"),
				"schema_id": r.schema, "models": []string{"sandbox::echo"}}), "")
			saved := indexOf(evs, "database_saved")
			is.True(saved >= 0)
			is.True(saved < indexOf(evs, "completed"))
			db, _ := evs[saved].Data["database"].(map[string]any)
			is.Equal(db["status"], "saved")
			is.Equal(db["delta_count"], float64(1))

			// reject_entity: a gap of the entity rejects it.
			gap := r.enrich(acme([]obj{{"city": "Rome", "note": "x"}}, []string{"z"}, nil), nil)
			is.True(gap.Database != nil)
			is.True(!gap.Database.Saved)
			is.Equal(gap.Database.Status, "rejected")
			is.Equal(gap.Database.MissingFields, []string{"ceo"})
			is.Equal(gap.Database.DeltaCount, 0)
			is.True(gap.Database.BatchID == nil)
			evs = s.follow(key, s.startJob(key, obj{"entity_data": acme(nil, nil, nil), "schema_id": r.schema,
				"models": []string{"sandbox::echo"}}), "")
			is.True(indexOf(evs, "database_rejected") >= 0)
			is.True(indexOf(evs, "database_rejected") < indexOf(evs, "completed"))
			is.Equal(indexOf(evs, "database_saved"), -1)

			// database_sync=false and an unlinked schema: nothing.
			off := r.enrich(acme(nil, []string{"q"}, "Off"), obj{"database_sync": false})
			is.True(off.Database == nil)
			unlinked := entityRun{t: t, s: s, key: key, schema: s.createSchema(key, "Plain", entitySchema)}
			is.True(unlinked.enrich(acme(nil, nil, "U"), nil).Database == nil)

			// skip_children: the gapped office goes, the rest is written.
			is.Equal(s.call("PATCH", "/api/databases/"+r.db, key, obj{"on_gaps": "skip_children"}, nil), 200)
			partial := r.enrich(obj{"domain": "beta.test", "name": "Beta", "ceo": "Ann", "tags": []string{"t"},
				"offices": []obj{{"city": "Lyon", "note": "a"}, {"city": "Nice", "note": nil}}}, nil)
			is.Equal(partial.Database.Status, "partial")
			is.True(partial.Database.Saved)
			is.Equal(partial.Database.SkippedItems, []string{"offices[1]"})
			is.Equal(partial.Database.MissingFields, []string{"offices[1].note"})

			if dsn != "" && b.name == "postgres" {
				checkEntityDeltas(t, dsn, r.db, *first.Database.BatchID)
			}
		})
	}
}

// checkEntityDeltas reads the registration's feed from the service's
// database: the DDL, then three upserts (acme at revisions 1 and 2, beta
// at 1), each in its own batch; applied in id order to a scratch database
// on the native server, they leave acme with one office and one tag.
func checkEntityDeltas(t *testing.T, dsn, dbID, firstBatch string) {
	is := is.New(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{MaxConns: 1})
	is.NoErr(err)
	defer db.Close()
	var rows []struct {
		ID       int64   `bun:"id"`
		Kind     string  `bun:"kind"`
		Op       *string `bun:"op"`
		SQL      string  `bun:"sql"`
		BatchID  *string `bun:"batch_id"`
		Revision *int64  `bun:"revision"`
	}
	is.NoErr(db.DB.NewRaw("SELECT id, kind, op, sql, batch_id, revision FROM deltas WHERE database_id = ? ORDER BY id", dbID).Scan(ctx, &rows))
	is.Equal(len(rows), 4)
	is.Equal(rows[0].Kind, "schema")
	for i, want := range []int64{1, 2, 1} {
		d := rows[i+1]
		is.Equal(d.Kind, "data")
		is.Equal(*d.Op, "upsert")
		is.Equal(*d.Revision, want)
		is.True(strings.Contains(d.SQL, "INSERT INTO"))
	}
	is.Equal(*rows[1].BatchID, firstBatch)
	is.True(*rows[2].BatchID != firstBatch)
	var revs []int64
	is.NoErr(db.DB.NewRaw("SELECT revision FROM entities ORDER BY key_identity").Scan(ctx, &revs))
	is.Equal(revs, []int64{2, 1}) // acme, beta

	target, err := pgx.Connect(ctx, pgtest.Native(t))
	is.NoErr(err)
	defer target.Close(ctx)
	for _, d := range rows {
		_, err := target.Exec(ctx, d.SQL)
		mustf(t, err == nil, "apply delta %d: %v\n%s", d.ID, err, d.SQL)
	}
	var offices, tags, companies int
	is.NoErr(target.QueryRow(ctx, "SELECT count(*) FROM company").Scan(&companies))
	is.Equal(companies, 2)
	var rev int64
	var ceo string
	is.NoErr(target.QueryRow(ctx, "SELECT ee_revision, ceo #>> '{}' FROM company WHERE domain = 'acme.test'").Scan(&rev, &ceo))
	is.Equal(rev, int64(2))
	is.Equal(ceo, "Joe")
	is.NoErr(target.QueryRow(ctx, `SELECT count(*) FROM company_offices o JOIN company c ON c.ee_id = o.ee_parent_id
		WHERE c.domain = 'acme.test'`).Scan(&offices))
	is.Equal(offices, 1)
	is.NoErr(target.QueryRow(ctx, `SELECT count(*) FROM company_tags g JOIN company c ON c.ee_id = g.ee_parent_id
		WHERE c.domain = 'acme.test'`).Scan(&tags))
	is.Equal(tags, 1)
	is.NoErr(target.QueryRow(ctx, `SELECT count(*) FROM company_offices o JOIN company c ON c.ee_id = o.ee_parent_id
		WHERE c.domain = 'beta.test'`).Scan(&offices))
	is.Equal(offices, 1)
}
