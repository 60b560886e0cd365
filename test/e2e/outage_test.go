package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/pgtest"
)

// TestDatabaseOutage: with PostgreSQL cut off (a proxy between the server
// and the database closes every connection and refuses new ones), the API
// answers 503 unavailable with Retry-After, never 500, and promptly; once the
// database is back, the same requests succeed again.
func TestDatabaseOutage(t *testing.T) {
	proxy, dsn := pgtest.ProxyDSN(t, pgtest.Native(t))
	s := start(t, testConfig(dsn))
	ten := s.register("outage@example.com")
	schemaID := s.createSchema(ten.key, "Company", companySchema)
	var res struct {
		JobID    string `json:"job_id"`
		RecordID string `json:"record_id"`
	}
	enrich := `{"entity_data":{"name":"Acme"},"schema_id":"` + schemaID + `","models":["sandbox::echo"]}`
	if st := s.call("POST", "/api/single/enrich/sync", ten.key, enrich, &res); st != 200 {
		t.Fatalf("sync: %d", st)
	}
	// Credentials used before the outage are cached (AuthCacheTTL); ones
	// that are not need the database to be checked.
	is.New(t).Equal(s.call("GET", "/api/records/"+res.RecordID, ten.token, nil, nil), 200)
	freshKey := s.newKey(ten.token, "editor")
	is.New(t).Equal(s.call("POST", "/api/users", ten.token, obj{"email": "member@example.com", "password": "correct horse battery", "role": "editor"}, nil), 201)
	var member struct {
		AccessToken string `json:"access_token"`
	}
	is.New(t).Equal(s.call("POST", "/api/auth/login", "", obj{"email": "member@example.com", "password": "correct horse battery"}, &member), 200)

	type tc struct {
		name, method, path, cred, body string
		ok                             int // the status once the database is back
		// pending, when set, names the change outside this helper's files
		// that turns this row's answer (500, or 401 for a session) into
		// 503; until it lands the row is skipped when it is not 503.
		pending string
	}
	cases := []tc{
		{"record by key", "GET", "/api/records/" + res.RecordID, ten.key, "", 200, ""},
		{"record by session", "GET", "/api/records/" + res.RecordID, ten.token, "", 200, ""},
		{"schema", "GET", "/api/schema/saved/" + schemaID, ten.key, "", 200, ""},
		{"create schema", "POST", "/api/schema/saved", ten.key, `{"name":"S","schema":{"type":"object","properties":{"a":{"type":"string"}}}}`, 201, ""},
		{"start enrichment", "POST", "/api/single/enrich/stream", ten.key, enrich, 200, ""},
		{"sync enrichment", "POST", "/api/single/enrich/sync", ten.key, enrich, 200, ""},
		{"stream", "GET", "/api/llm/stream/" + res.JobID, ten.key, "", 200, ""},
		{"cancel a finished job", "POST", "/api/llm/cancel/" + res.JobID, ten.key, "", 409, ""},
		{"me", "GET", "/api/auth/me", ten.token, "", 200, ""},
		{"create key", "POST", "/api/auth/api-keys", ten.token, `{"name":"k","role":"editor"}`, 201, ""},
		{"login", "POST", "/api/auth/login", "", `{"email":"outage@example.com","password":"correct horse battery"}`, 200, ""},
		{"register", "POST", "/api/auth/register", "", `{"email":"new-{n}@example.com","password":"correct horse battery","organization":"N"}`, 201, ""},
		{"readiness", "GET", "/readyz", "", "", 200, ""},
		{"list records", "GET", "/api/records", ten.key, "", 200, "adapters/postgres/content.go ListRecords: wrap with notFound (classify)"},
		{"list schemas", "GET", "/api/schema/saved", ten.key, "", 200, "adapters/postgres/content.go ListSchemas: wrap with notFound (classify)"},
		{"list keys", "GET", "/api/auth/api-keys", ten.token, "", 200, "adapters/postgres/access.go ListKeys: wrap with notFound (classify)"},
		{"list members", "GET", "/api/users", ten.token, "", 200, "adapters/postgres/access.go ListUsers: wrap with notFound (classify)"},
		{"uncached key", "GET", "/api/schema/saved/" + schemaID, freshKey, "", 200, "adapters/postgres/access.go FindKeysByPrefix: wrap with notFound (classify)"},
		{"uncached session", "GET", "/api/schema/saved/" + schemaID, member.AccessToken, "", 200, "app/access.go AuthenticateToken: return an ErrUnavailable from getUser instead of 401"},
	}
	round := 0
	run := func(t *testing.T, c tc, outage bool) {
		is := is.New(t)
		round++
		body := strings.ReplaceAll(c.body, "{n}", strings.Repeat("x", round))
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		start := time.Now()
		r, err := s.do(ctx, c.method, c.path, c.cred, body, nil)
		if err != nil {
			t.Fatalf("no answer within 15 s: %v", err)
		}
		if !outage {
			if r.status != c.ok {
				t.Fatalf("after the outage: %d %s, want %d", r.status, r.raw, c.ok)
			}
			return
		}
		if r.status != 503 && c.pending != "" {
			t.Skipf("answers %d during an outage until: %s", r.status, c.pending)
		}
		if c.path == "/readyz" {
			is.Equal(r.status, 503)
			is.Equal(r.header.Get("Retry-After"), "2")
			is.True(!strings.Contains(r.raw, "postgres")) // no user, host or database names
			return
		}
		if r.status != 503 {
			t.Fatalf("during the outage: %d %s, want 503", r.status, r.raw)
		}
		is.Equal(r.err.Code, "unavailable")
		is.Equal(r.header.Get("Retry-After"), "2")
		is.True(!strings.Contains(r.err.Detail, "postgres")) // adapter text stays inside
		is.True(time.Since(start) < 10*time.Second)
	}

	proxy.Cut()
	t.Run("cut", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { run(t, c, true) })
		}
	})

	proxy.Restore()
	// Pooled connections died with the outage; the pool drops them as it
	// meets them, so wait until a read succeeds.
	deadline := time.Now().Add(15 * time.Second)
	for s.call("GET", "/api/records/"+res.RecordID, ten.key, nil, nil) != 200 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	t.Run("restored", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { run(t, c, false) })
		}
	})
	is.New(t).Equal(s.runningAfter(5*time.Second), 0)
}

// TestDatabasePartition is the quieter outage: the database stops answering
// without closing anything (a network partition). The API should still
// answer 503 within a bound. On a real partition the pool's TCP settings
// (TCP_USER_TIMEOUT 30 s, keepalive; adapters/postgres/dial.go, checked by
// TestConnectionsDetectDeadPeers) close the connection. This test's proxy
// stalls in user space, so its kernel still acknowledges every byte and only
// a deadline on each database call would end the wait: there is none yet, so
// the test runs only with ENRICH_TEST_PARTITION=1.
func TestDatabasePartition(t *testing.T) {
	if os.Getenv("ENRICH_TEST_PARTITION") != "1" {
		t.Skip("KNOWN GAP: a partitioned database hangs requests on pooled connections; set ENRICH_TEST_PARTITION=1 to run")
	}
	is := is.New(t)
	proxy, dsn := pgtest.ProxyDSN(t, pgtest.Native(t))
	s := start(t, testConfig(dsn))
	ten := s.register("partition@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	proxy.Stall()
	defer proxy.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.do(ctx, "GET", "/api/schema/saved/"+id, ten.key, "", nil)
	is.NoErr(err) // an answer, not a hang
	is.Equal(r.status, 503)
	is.Equal(r.header.Get("Retry-After"), "2")
}
