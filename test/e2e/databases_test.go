package e2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
)

// keyedSchema has a database key, so it projects.
const keyedSchema = `{"type":"object","title":"company","properties":{
  "domain":{"type":"string","database_key":true},"name":{"type":"string"}}}`

type databaseSync struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	PageLimit     int    `json:"page_limit"`
	OnGaps        string `json:"on_gaps"`
	MaxThreshold  int    `json:"max_threshold_timeout_s"`
	PendingDeltas int    `json:"pending_deltas"`
	ShapeShipped  bool   `json:"shape_shipped"`
	Schemas       []struct {
		SavedSchemaID string `json:"saved_schema_id"`
		SchemaName    string `json:"schema_name"`
		PublishState  string `json:"publish_state"`
	} `json:"schemas"`
}

// TestDatabaseRegistry: registrations over HTTP on every storage: create
// both ways, list and get with counters, validation naming the field,
// link/unlink moving the schema's linked flag (and its purge), DDL shipped
// as schema deltas on publish (only the ALTERs the second time), a
// transform refused without confirm_transforms, another organization's
// registration 404.
func TestDatabaseRegistry(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			l := lifecycle{t: t, s: s, ten: s.register("dbs@example.com")}
			key := l.ten.key
			sc := s.createSchema(key, "Company", keyedSchema)
			other := s.createSchema(key, "Other", keyedSchema)

			var created struct {
				Database   databaseSync `json:"database"`
				DDLDeltaID *int         `json:"ddl_delta_id"`
			}
			is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", key, obj{"name": "wh"}, &created), 201)
			d := created.Database
			is.Equal(d.PageLimit, 100)
			is.Equal(d.OnGaps, "skip_children")
			is.Equal(d.MaxThreshold, 300)
			is.True(created.DDLDeltaID == nil) // never published: nothing ships
			is.Equal(len(d.Schemas), 1)
			is.Equal(d.Schemas[0].SchemaName, "Company")
			is.Equal(d.Schemas[0].PublishState, "unpublished")
			got, _ := l.get(sc)
			is.True(got.Linked)
			l.fails("DELETE", "/api/schema/saved/"+sc+"/enrichment-data", key, nil, 409, "schema_linked")

			var viaBody struct{ Database databaseSync }
			is.Equal(s.call("POST", "/api/databases", key, obj{"name": "second", "saved_schema_id": other, "page_limit": 5}, &viaBody), 201)
			is.Equal(viaBody.Database.PageLimit, 5)
			l.fails("POST", "/api/databases", key, obj{"name": "x"}, 400, "invalid_request")

			var list struct {
				Databases []databaseSync `json:"databases"`
				Total     int            `json:"total"`
			}
			is.Equal(s.call("GET", "/api/databases", key, nil, &list), 200)
			is.Equal(list.Total, 2)
			is.Equal(s.call("GET", "/api/schemas/"+sc+"/databases", key, nil, &list), 200)
			is.Equal(list.Total, 1)

			// Validation names the field.
			for body, field := range map[string]obj{
				"page_limit": {"page_limit": 0}, "notify_debounce_s": {"notify_debounce_s": -1},
				"max_threshold_timeout_s": {"notify_debounce_s": 100, "max_threshold_timeout_s": 50}, "name": {"name": " "},
			} {
				var e apiError
				is.Equal(s.call("PATCH", "/api/databases/"+d.ID, key, field, &e), 400)
				is.Equal(e.Field, body)
			}

			// Publish ships the whole DDL; a second, additive publish only
			// the ALTERs; a type change needs confirm_transforms.
			var pub struct {
				DeltaIDs []int `json:"delta_ids"`
			}
			is.Equal(s.call("POST", "/api/schema/saved/"+sc+"/publish", key, nil, &pub), 200)
			is.Equal(len(pub.DeltaIDs), 1)
			is.Equal(s.call("GET", "/api/databases/"+d.ID, key, nil, &d), 200)
			is.Equal(d.PendingDeltas, 1)
			is.True(d.ShapeShipped)
			first := pub.DeltaIDs[0]
			added := strings.Replace(keyedSchema, `"name":{"type":"string"}`, `"name":{"type":"string"},"city":{"type":"string"}`, 1)
			is.Equal(s.call("PATCH", "/api/schema/saved/"+sc, key, obj{"schema": json.RawMessage(added)}, nil), 200)
			is.Equal(s.call("POST", "/api/schema/saved/"+sc+"/publish", key, nil, &pub), 200)
			is.Equal(len(pub.DeltaIDs), 1)
			is.Equal(pub.DeltaIDs[0], first+1)
			retyped := strings.Replace(added, `"city":{"type":"string"}`, `"city":{"type":"integer"}`, 1)
			is.Equal(s.call("PATCH", "/api/schema/saved/"+sc, key, obj{"schema": json.RawMessage(retyped)}, nil), 200)
			l.fails("POST", "/api/schema/saved/"+sc+"/publish", key, nil, 409, "confirm_transforms_required")
			if dsn != "" {
				checkDeltas(t, dsn, d.ID)
			}

			// pk_strategy is locked once DDL shipped.
			l.fails("PATCH", "/api/databases/"+d.ID, key, obj{"pk_strategy": "natural"}, 409, "projection_locked")

			// Linking: the other schema joins; its (unpublished) DDL waits.
			var link struct {
				Database   databaseSync `json:"database"`
				DDLDeltaID *int         `json:"ddl_delta_id"`
			}
			third := s.createSchema(key, "Third", keyedSchema)
			is.Equal(s.call("POST", "/api/databases/"+d.ID+"/schemas/"+third, key, nil, &link), 201)
			is.Equal(len(link.Database.Schemas), 2)
			got, _ = l.get(third)
			is.True(got.Linked)
			l.fails("POST", "/api/databases/"+d.ID+"/schemas/"+third, key, nil, 409, "schema_already_linked")
			is.Equal(s.call("DELETE", "/api/databases/"+d.ID+"/schemas/"+third, key, nil, nil), 204)
			got, _ = l.get(third)
			is.True(!got.Linked)
			is.Equal(s.call("DELETE", "/api/schema/saved/"+third+"/enrichment-data", key, nil, nil), 200)
			l.fails("DELETE", "/api/databases/"+d.ID+"/schemas/"+sc, key, nil, 409, "last_schema_link")

			// The relational map and the dry runs.
			var rm struct {
				Schemas []struct {
					Tables []struct{ Name string } `json:"tables"`
					DDL    []string                `json:"ddl"`
				} `json:"schemas"`
			}
			is.Equal(s.call("GET", "/api/databases/"+d.ID+"/relational-map", key, nil, &rm), 200)
			is.Equal(len(rm.Schemas), 1)
			is.True(len(rm.Schemas[0].DDL) > 0)
			var vr struct {
				Valid        bool `json:"valid"`
				EntityTables int  `json:"entity_tables"`
			}
			is.Equal(s.call("POST", "/api/schemas/"+other+"/databases/validate", key, nil, &vr), 200)
			is.True(vr.Valid)
			is.Equal(vr.EntityTables, 1)

			// Another organization: 404 everywhere.
			stranger := s.register("stranger@example.com").key
			for _, c := range []struct{ method, path string }{
				{"GET", "/api/databases/" + d.ID}, {"PATCH", "/api/databases/" + d.ID}, {"DELETE", "/api/databases/" + d.ID},
				{"GET", "/api/databases/" + d.ID + "/relational-map"}, {"POST", "/api/databases/" + d.ID + "/schemas/" + sc},
			} {
				var body any
				if c.method == "PATCH" {
					body = obj{"page_limit": 3}
				}
				is.Equal(s.call(c.method, c.path, stranger, body, nil), 404)
			}

			// Delete: the schema no registration links is unlinked; a second
			// delete is 404.
			is.Equal(s.call("DELETE", "/api/databases/"+d.ID, key, nil, nil), 204)
			is.Equal(s.call("DELETE", "/api/databases/"+d.ID, key, nil, nil), 404)
			got, _ = l.get(sc)
			is.True(!got.Linked)
		})
	}
}

// checkDeltas reads the registration's schema deltas from PostgreSQL: the
// first is the whole DDL, the second only an ALTER.
func checkDeltas(t *testing.T, dsn, id string) {
	is := is.New(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{MaxConns: 1})
	is.NoErr(err)
	defer db.Close()
	var sqls []string
	is.NoErr(db.DB.NewRaw("SELECT sql FROM deltas WHERE database_id = ? AND kind = 'schema' ORDER BY id", id).Scan(ctx, &sqls))
	is.Equal(len(sqls), 2)
	is.True(strings.Contains(sqls[0], "CREATE TABLE IF NOT EXISTS"))
	is.True(strings.Contains(sqls[1], "ADD COLUMN"))
	is.True(!strings.Contains(sqls[1], "CREATE TABLE"))
}

// TestDatabaseHostileNumbers: wrong types, huge and negative numbers in a
// registration are 400 naming the field.
func TestDatabaseHostileNumbers(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	key := s.register("dbnum@example.com").key
	sc := s.createSchema(key, "Company", keyedSchema)
	for field, v := range map[string]any{
		"page_limit": 1 << 40, "notify_debounce_s": -5, "max_threshold_timeout_s": "300", "purge_on_ack": "yes",
		"on_gaps": 3, "pk_strategy": "uuid", "dialect": "mysql", "index_scalars": []int{1},
	} {
		var e apiError
		is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", key, obj{"name": "wh", field: v}, &e), 400)
		is.Equal(e.Field, field)
	}
	var e apiError
	is.Equal(s.call("PATCH", "/api/databases/"+strings.Repeat("x", 300), key, obj{"page_limit": 1}, &e), 400)
}
