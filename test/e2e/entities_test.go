package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/webhook"
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
		Draft    string  `bun:"draft"`
		BatchID  *string `bun:"batch_id"`
		Revision *int64  `bun:"revision"`
	}
	is.NoErr(db.DB.NewRaw("SELECT id, kind, op, sql, coalesce(draft::text, '') AS draft, batch_id, revision FROM deltas WHERE database_id = ? ORDER BY id", dbID).Scan(ctx, &rows))
	for i, d := range rows {
		if d.Draft != "" { // a linked end's delta: the feed renders its SQL at its revision
			sql, err := dbsync.DraftSQL([]byte(d.Draft), *d.Revision)
			is.NoErr(err)
			rows[i].SQL = sql
		}
	}
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

// TestEntityLayerBatch: a batch on a linked schema decides each entity:
// database_saved (or database_rejected for a gap) with its entity_index
// before that entity's entity_completed, the saved ones written in the
// job's end; database_sync=false on a batch writes nothing.
func TestEntityLayerBatch(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("entbatch@example.com").key
			r := linkedSchema(t, s, key, "reject_entity")
			entities := []obj{
				{"domain": "a.test", "ceo": "A", "tags": []string{"x"}},
				{"domain": "b.test", "ceo": nil},
				{"domain": "c.test", "ceo": "C"},
			}
			st := s.startBatch(key, obj{"entities": entities, "schema_id": r.schema, "models": []string{"sandbox::echo"}})
			groups := byEntity(s.follow(key, st.JobID, ""))
			for i, want := range []string{"database_saved", "database_rejected", "database_saved"} {
				evs := groups[i]
				at := indexOf(evs, want)
				mustf(t, at >= 0, "entity %d: no %s in %v", i, want, names(evs))
				is.True(at < indexOf(evs, "entity_completed"))
				is.Equal(num(evs[at].Data["entity_index"]), i)
			}
			page := r.entities("")
			is.Equal(page.Total, 2)

			st = s.startBatch(key, obj{"entities": []obj{{"domain": "d.test", "ceo": "D"}}, "schema_id": r.schema,
				"models": []string{"sandbox::echo"}, "database_sync": false})
			evs := s.follow(key, st.JobID, "")
			is.Equal(indexOf(evs, "database_saved"), -1)
			is.Equal(r.entities("").Total, 2)
		})
	}
}

type entityPage struct {
	Entities []struct {
		ID           string            `json:"id"`
		EntityType   string            `json:"entity_type"`
		Keys         map[string]string `json:"keys"`
		Revision     int64             `json:"revision"`
		LastRecordID *string           `json:"last_record_id"`
		Payload      map[string]any    `json:"payload"`
	} `json:"entities"`
	EntityTypes []string `json:"entity_types"`
	Total       int      `json:"total"`
}

// entities lists the schema's entities (query: "" or "?...").
func (r entityRun) entities(query string) entityPage {
	r.t.Helper()
	var p entityPage
	if st := r.s.call("GET", "/api/schemas/"+r.schema+"/entities"+query, r.key, nil, &p); st != 200 {
		r.t.Fatalf("list entities: %d", st)
	}
	return p
}

type injected struct {
	Results []struct {
		Status           string     `json:"status"`
		RecordID         *string    `json:"record_id"`
		SourceRecordID   *string    `json:"source_record_id"`
		CreatedRecord    bool       `json:"created_record"`
		Database         *dbOutcome `json:"database"`
		Reason           *string    `json:"reason"`
		ValidationErrors []string   `json:"validation_errors"`
	} `json:"results"`
	Saved, Partial, Rejected, Skipped int
}

// TestEntityLayerListAndInject: the entity listing pages and filters; the
// schema's purge deletes its entities (entities_deleted) and a re-created
// entity's revision keeps rising; sync-to-database injects a stored
// record, a supplied output (minting a record) and both, validates the
// output against the published contract, skips an unlinked schema, and
// answers 404 for another organization's record, writing nothing.
func TestEntityLayerListAndInject(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("entinject@example.com").key
			r := linkedSchema(t, s, key, "reject_entity")
			first := r.enrich(acme([]obj{{"city": "Paris", "note": "hq"}}, []string{"a"}, "Jane"), obj{"database_sync": false})
			is.True(first.Database == nil)
			is.Equal(r.entities("").Total, 0)

			// The stored record alone (the reference client's shape).
			var res injected
			is.Equal(s.call("POST", "/api/records/sync-to-database", key, obj{"items": []obj{{"record_id": first.RecordID}}}, &res), 200)
			is.Equal(res.Saved, 1)
			is.Equal(res.Results[0].Status, "saved")
			is.Equal(*res.Results[0].RecordID, first.RecordID)
			is.True(!res.Results[0].CreatedRecord)
			is.Equal(res.Results[0].Database.DeltaCount, 1)
			page := r.entities("")
			is.Equal(page.Total, 1)
			is.Equal(page.Entities[0].Revision, int64(1))
			is.Equal(page.Entities[0].Keys, map[string]string{"domain": "acme.test"})
			is.Equal(*page.Entities[0].LastRecordID, first.RecordID)

			// A transformed output with its provenance, and a standalone
			// one: each mints a record.
			out := obj{"domain": "acme.test", "name": "Acme SA", "ceo": "Eve", "offices": []obj{}, "tags": []string{}}
			other := obj{"domain": "zeta.test", "name": "Zeta", "ceo": "Z", "offices": []obj{}, "tags": []string{"z"}}
			is.Equal(s.call("POST", "/api/records/sync-to-database", key, obj{"items": []obj{
				{"record_id": first.RecordID, "structured_output": out},
				{"saved_schema_id": r.schema, "structured_output": other},
				{"saved_schema_id": r.schema, "structured_output": obj{"domain": 5}},
				{"saved_schema_id": r.schema, "structured_output": obj{"domain": "gap.test", "name": "G", "ceo": nil, "offices": []obj{}, "tags": []string{}}},
			}}, &res), 200)
			is.Equal([]int{res.Saved, res.Partial, res.Rejected, res.Skipped}, []int{2, 0, 2, 0})
			is.True(res.Results[0].CreatedRecord)
			is.Equal(*res.Results[0].SourceRecordID, first.RecordID)
			is.True(*res.Results[0].RecordID != first.RecordID)
			is.True(res.Results[1].CreatedRecord)
			is.True(res.Results[1].SourceRecordID == nil)
			is.Equal(res.Results[2].Status, "rejected")
			is.True(len(res.Results[2].ValidationErrors) > 0)
			is.True(!res.Results[2].CreatedRecord)
			is.Equal(res.Results[3].Database.MissingFields, []string{"ceo"})
			var rec struct {
				StructuredOutput map[string]any `json:"structured_output"`
			}
			is.Equal(s.call("GET", "/api/records/"+*res.Results[0].RecordID, key, nil, &rec), 200)
			is.Equal(rec.StructuredOutput["ceo"], "Eve")

			page = r.entities("?limit=1")
			is.Equal(page.Total, 2)
			is.Equal(len(page.Entities), 1)
			is.Equal(page.EntityTypes, []string{"company"})
			is.Equal(r.entities("?offset=5").Total, 2)
			is.Equal(len(r.entities("?offset=5").Entities), 0)
			is.Equal(r.entities("?entity_type=nope").Total, 0)
			acmeRev := int64(0)
			for _, e := range r.entities("").Entities {
				if e.Keys["domain"] == "acme.test" {
					acmeRev = e.Revision
				}
			}
			is.Equal(acmeRev, int64(2))

			// An unlinked schema's record is skipped; another organization's
			// record is 404 and nothing is written.
			plain := s.createSchema(key, "Plain", entitySchema)
			loose := entityRun{t: t, s: s, key: key, schema: plain}.enrich(acme(nil, nil, "P"), nil)
			is.Equal(s.call("POST", "/api/records/sync-to-database", key, obj{"items": []obj{{"record_id": loose.RecordID}}}, &res), 200)
			is.Equal(res.Skipped, 1)
			is.True(res.Results[0].Database == nil)
			stranger := s.register("stranger2@example.com").key
			var e apiError
			is.Equal(s.call("POST", "/api/records/sync-to-database", stranger, obj{"items": []obj{
				{"saved_schema_id": r.schema, "structured_output": other}}}, &e), 404)
			is.Equal(s.call("POST", "/api/records/sync-to-database", key, obj{"items": []obj{
				{"saved_schema_id": r.schema, "structured_output": other}, {"record_id": "nope"}}}, &e), 404)
			is.Equal(e.Field, "items.1.record_id")
			is.Equal(r.entities("").Total, 2)

			// Unlink (delete the registration), purge: the entities go; a
			// re-created entity continues its revisions.
			is.Equal(s.call("DELETE", "/api/databases/"+r.db, key, nil, nil), 204)
			var purge struct {
				RecordsDeleted  int `json:"records_deleted"`
				EntitiesDeleted int `json:"entities_deleted"`
			}
			is.Equal(s.call("DELETE", "/api/schema/saved/"+r.schema+"/enrichment-data", key, nil, &purge), 200)
			is.Equal(purge.EntitiesDeleted, 2)
			is.Equal(r.entities("").Total, 0)
			r2 := r
			var created struct {
				Database databaseSync `json:"database"`
			}
			is.Equal(s.call("POST", "/api/schemas/"+r.schema+"/databases", key, obj{"name": "again"}, &created), 201)
			r2.db = created.Database.ID
			is.True(r2.enrich(acme(nil, nil, "New"), nil).Database.Saved)
			page = r2.entities("")
			is.Equal(page.Total, 1)
			is.Equal(page.Entities[0].Revision, int64(3))
		})
	}
}

// TestEntityLayerReinject: a consumer reports a data delta; reinject by
// entity appends the entity's current state as one new batch at the tail
// and removes the quarantined batch; naming nothing is 400; another
// organization's registration is 404.
func TestEntityLayerReinject(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("reinject@example.com")
			key := ten.key
			r := linkedSchema(t, s, key, "reject_entity")
			first := r.enrich(acme(nil, []string{"a"}, "Jane"), nil)
			second := r.enrich(acme(nil, []string{"a", "b"}, "Joe"), nil)
			base := "/api/databases/" + r.db

			var w deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=0&claim=true&format=json", key, nil, &w), 200)
			is.Equal(w.ids(), []int64{1, 2, 3}) // DDL, two upserts
			is.Equal(*w.Deltas[1].BatchID, *first.Database.BatchID)
			is.Equal(*w.Deltas[2].BatchID, *second.Database.BatchID)
			is.Equal(s.call("POST", base+"/quarantine/report", key, obj{"delta_id": 2, "error": "boom"}, nil), 200)
			page := r.entities("")
			is.Equal(page.Total, 1)
			entityID := page.Entities[0].ID

			var e apiError
			is.Equal(s.call("POST", base+"/quarantine/reinject", key, obj{}, &e), 400)
			is.Equal(e.Field, "delta_ids")
			var out struct {
				BatchID *string `json:"batch_id"`
				Queued  int     `json:"queued"`
				Removed int     `json:"removed"`
			}
			is.Equal(s.call("POST", base+"/quarantine/reinject", key, obj{"entity_ids": []string{entityID}}, &out), 200)
			is.Equal(out.Queued, 1)
			is.True(out.Removed >= 1)
			is.True(out.BatchID != nil)
			var q struct {
				TotalDeltas int `json:"total_deltas"`
			}
			is.Equal(s.call("GET", base+"/quarantine", key, nil, &q), 200)
			is.Equal(q.TotalDeltas, 0)
			var read deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=3&claim=false&format=json", key, nil, &read), 200)
			is.Equal(len(read.Deltas), 1)
			is.Equal(*read.Deltas[0].BatchID, *out.BatchID)
			is.Equal(*read.Deltas[0].Revision, int64(2)) // the current state, at its revision

			// Nothing quarantined left: a reinject queues nothing.
			is.Equal(s.call("POST", base+"/quarantine/reinject", key, obj{"delta_ids": []int64{2}}, &out), 200)
			is.Equal([]int{out.Queued, out.Removed}, []int{0, 0})
			is.True(out.BatchID == nil)
			stranger := s.register("reinject-other@example.com").key
			is.Equal(s.call("POST", base+"/quarantine/reinject", stranger, obj{"delta_ids": []int64{2}}, nil), 404)
		})
	}
}

// TestSchemaCascadeUnlinks: deleting a linked schema with cascade removes
// its links from the registrations in the same unit of work; the
// registration stays, with its other links.
func TestSchemaCascadeUnlinks(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			key := s.register("cascade@example.com").key
			r := linkedSchema(t, s, key, "skip_children")
			other := s.createSchema(key, "Other", keyedSchema)
			is.Equal(s.call("POST", "/api/databases/"+r.db+"/schemas/"+other, key, nil, nil), 201)
			is.Equal(s.call("DELETE", "/api/schema/saved/"+r.schema, key, nil, nil), 409)
			is.Equal(s.call("DELETE", "/api/schema/saved/"+r.schema+"?cascade=true", key, nil, nil), 200)
			var d databaseSync
			is.Equal(s.call("GET", "/api/databases/"+r.db, key, nil, &d), 200)
			is.Equal(len(d.Schemas), 1)
			is.Equal(d.Schemas[0].SavedSchemaID, other)
			is.Equal(s.call("DELETE", "/api/schema/saved/"+other+"/permanent?cascade=true", key, nil, nil), 200)
			is.Equal(s.call("GET", "/api/databases/"+r.db, key, nil, &d), 200)
			is.Equal(len(d.Schemas), 0)
		})
	}
}

// TestEntityLayerSubscriptionEvents: on a linked schema, a rejected
// enrichment delivers enrichment_result with its database block and
// rejected_for_database_save; a saved one only enrichment_result.
func TestEntityLayerSubscriptionEvents(t *testing.T) {
	is := is.New(t)
	rc := newHookReceiver(t)
	s := start(t, notifyConfig("", rc))
	key := s.register("entsubs@example.com").key
	r := linkedSchema(t, s, key, "reject_entity")
	is.Equal(s.call("POST", "/api/schemas/"+r.schema+"/subscriptions", key, obj{"url": rc.url()}, nil), 201)
	rejected := r.enrich(acme(nil, nil, nil), nil)
	is.True(!rejected.Database.Saved)
	got := rc.waitFor(2)
	events := map[webhook.Event]json.RawMessage{}
	for _, h := range got {
		events[h.env.Event] = h.env.Data
	}
	var data struct {
		ID       string    `json:"id"`
		Database dbOutcome `json:"database"`
	}
	is.NoErr(json.Unmarshal(events[webhook.RejectedForDatabaseSave], &data))
	is.Equal(data.ID, rejected.RecordID)
	is.Equal(data.Database.Status, "rejected")
	is.NoErr(json.Unmarshal(events[webhook.EnrichmentResult], &data))
	is.Equal(data.Database.Status, "rejected")
	saved := r.enrich(acme(nil, nil, "Jane"), nil)
	is.True(saved.Database.Saved)
	got = rc.waitFor(3)
	is.Equal(got[2].env.Event, webhook.EnrichmentResult)
	time.Sleep(200 * time.Millisecond)
	is.Equal(len(rc.hooks()), 3)

	// sync-to-database announces too: the rejected record injected again
	// is refused again (a new event, its own id), and an output injected
	// for the saved record mints a record (enrichment_result).
	var res struct {
		Results []struct {
			Status   string `json:"status"`
			RecordID string `json:"record_id"`
		} `json:"results"`
	}
	is.Equal(s.call("POST", "/api/records/sync-to-database", key, obj{"items": []obj{
		{"record_id": rejected.RecordID},
		{"record_id": saved.RecordID, "structured_output": acme([]obj{}, []string{}, "Joan")},
	}}, &res), 200)
	is.Equal(res.Results[0].Status, "rejected")
	is.Equal(res.Results[1].Status, "saved")
	got = rc.waitFor(5)
	ids := map[string]bool{}
	for _, h := range got {
		id := h.header.Get(webhook.EventIDHeader)
		is.True(id != "" && !ids[id]) // every event has its own id
		ids[id] = true
	}
	last := map[webhook.Event]json.RawMessage{got[3].env.Event: got[3].env.Data, got[4].env.Event: got[4].env.Data}
	is.NoErr(json.Unmarshal(last[webhook.RejectedForDatabaseSave], &data))
	is.Equal(data.ID, rejected.RecordID)
	is.Equal(data.Database.Status, "rejected")
	is.NoErr(json.Unmarshal(last[webhook.EnrichmentResult], &data))
	is.Equal(data.ID, res.Results[1].RecordID)
	is.Equal(data.Database.Status, "saved")
	time.Sleep(200 * time.Millisecond)
	is.Equal(len(rc.hooks()), 5)
}
