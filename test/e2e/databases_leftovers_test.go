package e2e_test

import (
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// feedAnswer is DeltaBatchResponse as far as these tests read it.
type feedAnswer struct {
	Deltas []struct {
		ID   int64  `json:"id"`
		Kind string `json:"kind"`
	} `json:"deltas"`
	SnapshotRequired    bool               `json:"snapshot_required"`
	SchemaContentHashes map[string]*string `json:"schema_content_hashes"`
	SchemaContentHash   *string            `json:"schema_content_hash"`
}

type linkedRegistration struct {
	ID               string `json:"id"`
	SnapshotRequired bool   `json:"snapshot_required"`
	Schemas          []struct {
		SavedSchemaID     string  `json:"saved_schema_id"`
		SchemaContentHash *string `json:"schema_content_hash"`
	} `json:"schemas"`
}

// catchUp claims the registration's feed and acknowledges what it got,
// until nothing is left; it returns the last answer.
func catchUp(t *testing.T, s *service, key, db string) feedAnswer {
	t.Helper()
	for {
		var f feedAnswer
		if st := s.call("GET", "/api/databases/"+db+"/changes?since=0&claim=true&format=json", key, nil, &f); st != 200 {
			t.Fatalf("claim: %d", st)
		}
		if len(f.Deltas) == 0 || f.SnapshotRequired {
			return f
		}
		if st := s.call("POST", "/api/databases/"+db+"/ack", key, obj{"up_to_id": f.Deltas[len(f.Deltas)-1].ID}, nil); st != 200 {
			t.Fatalf("ack: %d", st)
		}
	}
}

// TestDatabaseSyncLeftovers: over HTTP on every storage: the create
// answer's registration notices carry the schema's numbers; each link and
// the feed name the content hash of the contract the link shipped
// (schema_content_hash only while one schema is linked); unlinking a
// schema whose deltas are not acknowledged is 409 unless force; a schema
// with entity state linked again pauses the claims (snapshot_required)
// until the snapshot is downloaded; delete_entity_state and
// clear_database_model act once no registration links the schema.
func TestDatabaseSyncLeftovers(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			l := lifecycle{t: t, s: s, ten: s.register("leftovers@example.com")}
			key := l.ten.key
			r := linkedSchema(t, s, key, "accept_partial")
			a, _ := l.get(r.schema)
			hashA := a.ContentHash

			// Notices, with this schema's numbers.
			var second struct {
				Database            linkedRegistration `json:"database"`
				RegistrationNotices []struct {
					Option, Value, Effect string
					LockedAfterShip       bool `json:"locked_after_ship"`
				} `json:"registration_notices"`
			}
			is.Equal(s.call("POST", "/api/schemas/"+r.schema+"/databases", key,
				obj{"name": "natural", "pk_strategy": "natural", "propagate_not_null": true}, &second), 201)
			is.Equal(len(second.RegistrationNotices), 2)
			nn, pk := second.RegistrationNotices[0], second.RegistrationNotices[1]
			is.Equal(nn.Option, "propagate_not_null")
			is.Equal(nn.Value, "true")
			is.True(strings.Contains(nn.Effect, "0 of the 6 property columns are NOT NULL")) // nothing required in entitySchema
			is.Equal(pk.Option, "pk_strategy")
			is.Equal(pk.Value, "natural")
			is.True(strings.Contains(pk.Effect, "3 tables get natural primary keys"))
			is.True(strings.Contains(pk.Effect, "company_offices (domain, ee_ordinal_1)"))
			is.True(nn.LockedAfterShip && pk.LockedAfterShip)
			is.Equal(*second.Database.Schemas[0].SchemaContentHash, hashA)

			// The link's hash, in the registration and in the feed.
			var d linkedRegistration
			is.Equal(s.call("GET", "/api/databases/"+r.db, key, nil, &d), 200)
			is.Equal(*d.Schemas[0].SchemaContentHash, hashA)
			is.True(!d.SnapshotRequired)
			r.enrich(acme(nil, []string{"x"}, "Wile"), nil)
			f := catchUp(t, s, key, r.db)
			is.True(!f.SnapshotRequired)
			is.Equal(*f.SchemaContentHashes[r.schema], hashA)
			is.Equal(*f.SchemaContentHash, hashA)

			// A second schema: two hashes, no single one; its unacknowledged
			// DDL refuses the unlink unless forced.
			other := s.createSchema(key, "Other", keyedSchema)
			is.Equal(s.call("POST", "/api/databases/"+r.db+"/schemas/"+other, key, nil, nil), 201)
			is.Equal(s.call("POST", "/api/schema/saved/"+other+"/publish", key, nil, nil), 200)
			o, _ := l.get(other)
			var two feedAnswer
			is.Equal(s.call("GET", "/api/databases/"+r.db+"/changes?claim=false", key, nil, &two), 200)
			is.Equal(len(two.SchemaContentHashes), 2)
			is.Equal(*two.SchemaContentHashes[other], o.ContentHash)
			is.True(two.SchemaContentHash == nil)
			is.True(!two.SnapshotRequired) // no entity state: nothing to reload
			l.fails("DELETE", "/api/databases/"+r.db+"/schemas/"+other, key, nil, 409, "unlink_pending_deltas")
			l.fails("DELETE", "/api/databases/"+r.db+"/schemas/"+other+"?force=maybe", key, nil, 400, "")
			is.Equal(s.call("DELETE", "/api/databases/"+r.db+"/schemas/"+other+"?force=true", key, nil, nil), 204)
			is.Equal(s.call("POST", "/api/databases/"+r.db+"/schemas/"+other, key, nil, nil), 201)
			catchUp(t, s, key, r.db)

			// Unlink the entity schema (the other registration still feeds on
			// it, so delete_entity_state keeps its rows), enrich while
			// unlinked, link again: claims pause until the snapshot.
			is.Equal(s.call("DELETE", "/api/databases/"+r.db+"/schemas/"+r.schema+"?delete_entity_state=true", key, nil, nil), 204)
			is.Equal(r.entities("").Total, 1)
			r.enrich(acme(nil, []string{"y"}, "Road"), nil)
			var relinked struct {
				Database linkedRegistration `json:"database"`
			}
			is.Equal(s.call("POST", "/api/databases/"+r.db+"/schemas/"+r.schema, key, nil, &relinked), 201)
			is.True(relinked.Database.SnapshotRequired)
			paused := catchUp(t, s, key, r.db)
			is.True(paused.SnapshotRequired)
			is.Equal(len(paused.Deltas), 0)
			var read feedAnswer
			is.Equal(s.call("GET", "/api/databases/"+r.db+"/changes?claim=false", key, nil, &read), 200)
			is.True(read.SnapshotRequired)
			is.True(len(read.Deltas) > 0) // a read still lists the rows
			resp := s.get("/api/databases/"+r.db+"/snapshot", key)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			is.NoErr(err)
			is.Equal(resp.StatusCode, 200)
			is.True(strings.Contains(string(body), "-- end of snapshot"))
			is.Equal(s.call("GET", "/api/databases/"+r.db, key, nil, &d), 200)
			is.True(!d.SnapshotRequired)
			resumed := catchUp(t, s, key, r.db)
			is.True(!resumed.SnapshotRequired)

			// Deleting the registration that shares the schema keeps its
			// entities; deleting the last one with both options removes them
			// and strips the database model from the working copies.
			is.Equal(s.call("DELETE", "/api/databases/"+second.Database.ID+"?delete_entity_state=true&clear_database_model=true", key, nil, nil), 204)
			is.Equal(r.entities("").Total, 1)
			a, _ = l.get(r.schema)
			is.True(strings.Contains(string(a.SchemaContent), "database_key"))
			l.fails("DELETE", "/api/databases/"+r.db+"?delete_entity_state=yes", key, nil, 400, "")
			is.Equal(s.call("DELETE", "/api/databases/"+r.db+"?delete_entity_state=true&clear_database_model=true", key, nil, nil), 204)
			is.Equal(r.entities("").Total, 0)
			for _, id := range []string{r.schema, other} {
				sc, _ := l.get(id)
				is.True(!sc.Linked)
				is.True(!strings.Contains(string(sc.SchemaContent), "database_key"))
				is.True(strings.Contains(string(sc.PublishedContent), "database_key")) // as last published
				is.Equal(sc.PublishState, "draft")                                     // unlinked
				is.True(sc.ContentHash != hashA && sc.ContentHash != o.ContentHash)
			}
		})
	}
}
