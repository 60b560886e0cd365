package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/domain/job"
)

func TestHealthAndOpenAPI(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			var h struct{ Status string }
			is.Equal(s.call("GET", "/healthz", "", nil, &h), 200)
			is.Equal(h.Status, "ok")
			is.Equal(s.call("GET", "/readyz", "", nil, &h), 200)
			ten := s.register("ops@example.com")
			is.Equal(s.call("GET", "/api/openapi.json", "", nil, nil), 401)
			is.Equal(s.call("GET", "/api/openapi.json", ten.key, nil, nil), 403) // owners are not sysadmins
			admin := s.register("admin@example.com")
			var doc struct {
				OpenAPI string         `json:"openapi"`
				Paths   map[string]any `json:"paths"`
			}
			is.Equal(s.call("GET", "/api/openapi.json", admin.token, nil, &doc), 200)
			is.Equal(doc.OpenAPI, "3.1.0")
			is.True(doc.Paths["/api/llm/stream/{job_id}"] != nil)
		})
	}
}

// TestSyncClientGoesAway: a blocking enrichment whose client disconnects is
// cancelled, not left running.
func TestSyncClientGoesAway(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("away@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+"/api/single/enrich/sync",
		jsonBody(obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}}))
	req.Header.Set("X-API-Key", ten.key)
	errc := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	var jobID string
	for jobID == "" {
		if ids := s.srv.RunningJobs(); len(ids) == 1 {
			jobID = ids[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	is.True(<-errc != nil) // the client gave up
	deadline := time.Now().Add(2 * time.Second)
	for len(s.srv.RunningJobs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	j, err := s.srv.Stores.Jobs.GetJob(context.Background(), ten.orgID, jobID)
	is.NoErr(err)
	is.Equal(j.State, job.Cancelled)
	evs := s.follow(ten.key, jobID, "")
	is.Equal(last(evs).Name, "cancelled")
	is.Equal(last(evs).Data["reason"], "client went away")
}

// TestMigrateCommand: enrichd migrate applies the migrations and is
// idempotent.
func TestMigrateCommand(t *testing.T) {
	is := is.New(t)
	cfg := testConfig(backends[1].dsn(t))
	is.NoErr(enrich.Migrate(context.Background(), cfg))
	is.NoErr(enrich.Migrate(context.Background(), cfg))
	is.True(enrich.Migrate(context.Background(), testConfig("")) != nil)
}

// TestDocsUI: the interactive documentation is served by the binary to
// system administrators only; a browser passes ?token= once and the page's
// own requests ride on an HttpOnly cookie.
func TestDocsUI(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	owner := s.register("docs-owner@example.com")
	admin := s.register("admin@example.com")
	is.Equal(s.call("GET", "/api/docs", "", nil, nil), 401)
	is.Equal(s.call("GET", "/api/docs", owner.token, nil, nil), 403)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(s.url + "/api/docs?token=" + admin.token)
	is.NoErr(err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	is.True(strings.Contains(resp.Header.Get("Content-Type"), "text/html"))
	is.True(strings.Contains(string(page), "/api/openapi.json"))
	is.True(!strings.Contains(string(page), "cdn")) // assets come from the binary
	m := regexp.MustCompile(`(?:src|href)="(/api/docs/[^"]+)"`).FindStringSubmatch(string(page))
	is.True(m != nil)
	for _, path := range []string{m[1], "/api/openapi.json"} {
		resp, err := browser.Get(s.url + path)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, 200) // the cookie carries the credential
	}
	// Without the cookie an asset is refused.
	resp, err = http.Get(s.url + m[1])
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 401)
}
