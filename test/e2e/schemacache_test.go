package e2e_test

import (
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestSchemaEditAcrossInstances: two servers on one PostgreSQL, the schema
// cache on. Jobs started on B run on the schema as edited, trashed or
// restored through A as soon as A's NOTIFY arrives (milliseconds); on A
// itself, at once (the drop happens before A's answer).
func TestSchemaEditAcrossInstances(t *testing.T) {
	is := is.New(t)
	cfg := testConfig(backends[1].dsn(t))
	cfg.SchemaCacheTTL = time.Hour // only the notifications can refresh it
	a, b := start(t, cfg), start(t, cfg)
	ten := a.register("schemacache@example.com")
	id := a.createSchema(ten.key, "Company", `{"type":"object","properties":{"name":{"type":"string"}}}`)
	body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}}
	has := func(s *service, field string) bool {
		var res struct {
			Result map[string]any `json:"result"`
		}
		is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, body, &res), 200)
		_, ok := res.Result[field]
		return ok
	}
	// Both instances have the first version cached.
	for _, s := range []*service{a, b, a, b} {
		is.True(!has(s, "city"))
	}
	is.Equal(a.call("PATCH", "/api/schema/saved/"+id, ten.key,
		obj{"schema": obj{"type": "object", "properties": obj{"name": obj{"type": "string"}, "city": obj{"type": "string"}}}}, nil), 200)
	is.True(has(a, "city")) // the very next start on A
	waitFor(t, "the edit on B", func() bool { return has(b, "city") })

	is.Equal(a.call("DELETE", "/api/schema/saved/"+id, ten.key, nil, nil), 200)
	is.Equal(a.call("POST", "/api/single/enrich/sync", ten.key, body, nil), 404)
	waitStatus(t, b, "POST", "/api/single/enrich/sync", ten.key, body, 404)
	is.Equal(a.call("POST", "/api/schema/saved/"+id+"/restore", ten.key, nil, nil), 200)
	is.Equal(a.call("POST", "/api/single/enrich/sync", ten.key, body, nil), 200)
	waitStatus(t, b, "POST", "/api/single/enrich/sync", ten.key, body, 200)
}

// waitFor repeats ok until it holds, for at most 1 s, and logs how long
// that took.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	t0 := time.Now()
	for !ok() {
		if time.Since(t0) > time.Second {
			t.Fatalf("%s: not seen after 1 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("%s seen after %v", what, time.Since(t0))
}
