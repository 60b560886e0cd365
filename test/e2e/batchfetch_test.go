package e2e_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"
)

// Secrets of TestBatchFetch: they must reach the test server and nothing
// else (no answer, no log line).
const (
	fetchBearer = "bearer-secret-e2e-7f3a"
	fetchAPIKey = "apikey-secret-e2e-91bc"
	fetchPass   = "basic-secret-e2e-c0de"
)

// upstream is a loopback server the batch fetch may reach (its port is
// allowed by ENRICH_FETCH_ALLOW_LOOPBACK_PORTS), recording the headers it
// was sent.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func (u *upstream) seen() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.headers...)
}

func portOf(t *testing.T, raw string) uint16 {
	t.Helper()
	u, _ := url.Parse(raw)
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return uint16(p)
}

// TestBatchFetch: the formats over HTTP, the auth headers sent, the limits,
// and SSRF refusals whose loopback target sees no request, on memory and
// PostgreSQL. Every URL in this test is a loopback one.
func TestBatchFetch(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue
		}
		t.Run(b.name, func(t *testing.T) { testBatchFetch(t, b.dsn(t)) })
	}
}

func testBatchFetch(t *testing.T, dsn string) {
	is := is.New(t)
	// The forbidden target: never allowed, must never be reached.
	var forbiddenHits atomic.Int64
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbiddenHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"leak":true}]`)
	}))
	defer forbidden.Close()
	fport := strconv.Itoa(int(portOf(t, forbidden.URL)))

	// other is a second allowed host (another port): a redirect to it must
	// not carry the secrets.
	other := &upstream{}
	other.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.mu.Lock()
		other.headers = append(other.headers, r.Header.Clone())
		other.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"from":"other"}]`)
	}))
	defer other.Close()

	up := &upstream{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		up.headers = append(up.headers, r.Header.Clone())
		up.mu.Unlock()
		switch r.URL.Path {
		case "/array":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprint(w, `[{"name":"Acme","country":"FR"},{"name":"Globex","employees":12}]`)
		case "/wrapped":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"results":[{"name":"Initech"}],"next":"/wrapped?page=2"}`)
		case "/ndjson":
			w.Header().Set("Content-Type", "application/x-ndjson")
			fmt.Fprint(w, "{\"name\":\"A\"}\n{\"name\":\"B\"}\n\n{\"name\":\"C\"}\n")
		case "/csv":
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "name,city\nAcme,Lyon\n\"Globex, Inc\",Paris\n")
		case "/csv-sniffed":
			w.Header().Set("Content-Type", "application/octet-stream")
			fmt.Fprint(w, "name;city\nAcme;Lyon\n")
		case "/many":
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "name\n"+strings.Repeat("x\n", 6))
		case "/garbage":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"name": "Acme"}`)
		case "/fail":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/redirect-forbidden":
			http.Redirect(w, r, forbidden.URL+"/", http.StatusFound)
		case "/redirect-localhost":
			http.Redirect(w, r, "http://localhost:"+fport+"/", http.StatusFound)
		case "/redirect-other":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/redirect-same":
			http.Redirect(w, r, "/array", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()

	logs := &syncBuffer{}
	cfg := testConfig(dsn)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.FetchAllowLoopbackPorts = []uint16{portOf(t, up.URL), portOf(t, other.URL)}
	cfg.BatchMaxEntities = 5
	s := start(t, cfg)
	home := s.register("home@example.com")
	operator := s.newKey(home.key, "operator")

	type answer struct {
		Entities    []obj  `json:"entities"`
		Total       int    `json:"total"`
		FetchTimeMS *int64 `json:"fetch_time_ms"`
		Format      string `json:"format"`
	}
	fetch := func(body obj) (int, answer, apiError) {
		t.Helper()
		var raw obj
		st := s.call("POST", "/api/batch/fetch", operator, body, &raw)
		var a answer
		var e apiError
		b, _ := jsonMarshal(raw)
		if st == 200 {
			jsonUnmarshal(t, b, &a)
		} else {
			jsonUnmarshal(t, b, &e)
		}
		for _, secret := range []string{fetchBearer, fetchAPIKey, fetchPass} {
			if strings.Contains(string(b), secret) {
				t.Errorf("answer holds a secret: %s", b)
			}
		}
		return st, a, e
	}

	// The formats.
	for _, tt := range []struct {
		path, format string
		want         string
	}{
		{"/array", "json", `[{"country":"FR","name":"Acme"},{"employees":12,"name":"Globex"}]`},
		{"/wrapped", "json", `[{"name":"Initech"}]`},
		{"/ndjson", "ndjson", `[{"name":"A"},{"name":"B"},{"name":"C"}]`},
		{"/csv", "csv", `[{"city":"Lyon","name":"Acme"},{"city":"Paris","name":"Globex, Inc"}]`},
		{"/csv-sniffed", "csv", `[{"city":"Lyon","name":"Acme"}]`},
		{"/redirect-same", "json", `[{"country":"FR","name":"Acme"},{"employees":12,"name":"Globex"}]`},
	} {
		st, a, e := fetch(obj{"url": up.URL + tt.path})
		if st != 200 {
			t.Fatalf("%s: %d %+v", tt.path, st, e)
		}
		got, _ := jsonMarshal(a.Entities)
		is.Equal(string(got), tt.want)
		is.Equal(a.Total, len(a.Entities))
		is.Equal(a.Format, tt.format)
		is.True(a.FetchTimeMS != nil)
	}

	// The auth headers reach the server.
	n := len(up.seen())
	for _, auth := range []obj{
		{"auth_type": "bearer", "bearer_token": fetchBearer},
		{"auth_type": "api_key", "api_key_header": "X-Partner-Key", "api_key_value": fetchAPIKey},
		{"auth_type": "api_key", "api_key_value": fetchAPIKey},
		{"auth_type": "basic", "basic_username": "batch-user", "basic_password": fetchPass},
		{"auth_type": "none", "bearer_token": fetchBearer}, // ignored
	} {
		st, _, e := fetch(obj{"url": up.URL + "/array", "auth": auth})
		mustf(t, st == 200, "auth %v: %d %+v", auth["auth_type"], st, e)
	}
	h := up.seen()[n:]
	is.Equal(len(h), 5)
	is.Equal(h[0].Get("Authorization"), "Bearer "+fetchBearer)
	is.Equal(h[1].Get("X-Partner-Key"), fetchAPIKey)
	is.Equal(h[1].Get("Authorization"), "")
	is.Equal(h[2].Get("X-API-Key"), fetchAPIKey)
	is.Equal(h[3].Get("Authorization"), "Basic "+base64.StdEncoding.EncodeToString([]byte("batch-user:"+fetchPass)))
	is.Equal(h[4].Get("Authorization"), "")

	// A redirect to another host does not carry the secrets.
	for _, auth := range []obj{
		{"auth_type": "bearer", "bearer_token": fetchBearer},
		{"auth_type": "api_key", "api_key_value": fetchAPIKey},
		{"auth_type": "basic", "basic_username": "u", "basic_password": fetchPass},
	} {
		st, a, _ := fetch(obj{"url": up.URL + "/redirect-other", "auth": auth})
		is.Equal(st, 200)
		is.Equal(a.Entities[0]["from"], "other")
	}
	for _, hh := range other.seen() {
		is.Equal(hh.Get("Authorization"), "")
		is.Equal(hh.Get("X-API-Key"), "")
	}

	// SSRF: loopback forms of the forbidden server, numeric forms even on an
	// allowed port, and redirects to loopback. Nothing reaches it.
	uport := strconv.Itoa(int(portOf(t, up.URL)))
	for _, u := range []string{
		forbidden.URL + "/", "http://localhost:" + fport + "/", "http://LOCALHOST.:" + fport + "/", "http://api.localhost:" + fport + "/",
		"http://[::1]:" + fport + "/", "http://[::ffff:127.0.0.1]:" + fport + "/", "http://[::ffff:7f00:1]:" + fport + "/",
		"http://2130706433:" + fport + "/", "http://0177.0.0.1:" + fport + "/", "http://0x7f.0.0.1:" + fport + "/",
		"http://127.1:" + fport + "/", "http://0x7f000001:" + fport + "/", "http://0.0.0.0:" + fport + "/",
		"http://2130706433:" + uport + "/array", "http://0177.0.0.1:" + uport + "/array", "http://[::ffff:127.0.0.1]:" + uport + "/array",
		"http://localhost:" + uport + "/array",
		up.URL + "/redirect-forbidden", up.URL + "/redirect-localhost",
	} {
		st, _, e := fetch(obj{"url": u})
		if st != 400 || e.Code != "url_refused" || e.Field != "url" {
			t.Errorf("%s: %d %+v, want 400 url_refused naming url", u, st, e)
		}
		// One answer for every refusal: which rule refused (a name that
		// does not resolve, a loopback name, an address that is not
		// public, a port) is the server's log's, never the caller's.
		if _, _, first := fetch(obj{"url": forbidden.URL + "/"}); e != first {
			t.Errorf("%s: %+v, want the same refusal as every other: %+v", u, e, first)
		}
	}
	is.Equal(forbiddenHits.Load(), int64(0))

	// The request's own errors.
	for _, tt := range []struct {
		body        obj
		code, field string
	}{
		{obj{}, "invalid_request", "url"},
		{obj{"url": ""}, "invalid_request", "url"},
		{obj{"url": "ftp://127.0.0.1/x"}, "invalid_request", "url"},
		{obj{"url": "file:///etc/passwd"}, "invalid_request", "url"},
		{obj{"url": "http://user:pw@127.0.0.1:" + uport + "/array"}, "invalid_request", "url"},
		{obj{"url": up.URL + "/array", "auth": obj{"auth_type": "oauth"}}, "invalid_request", "auth.auth_type"},
		{obj{"url": up.URL + "/array", "auth": obj{"auth_type": "bearer"}}, "invalid_request", "auth.bearer_token"},
		{obj{"url": up.URL + "/array", "auth": obj{"auth_type": "api_key", "api_key_value": "v", "api_key_header": "Bad Header"}}, "invalid_request", "auth.api_key_header"},
		{obj{"url": up.URL + "/array", "auth": obj{"auth_type": "api_key", "api_key_value": "a\r\nX-Injected: 1"}}, "invalid_request", "auth.api_key_value"},
		{obj{"url": up.URL + "/array", "auth": obj{"auth_type": "basic", "basic_username": "a:b"}}, "invalid_request", "auth.basic_username"},
		{obj{"url": up.URL + "/array", "auth": obj{"token": "x"}}, "invalid_request", "auth.token"},
		{obj{"url": up.URL + "/array", "batch": obj{"schema_id": "s", "entities": []obj{{"name": "x"}}}}, "invalid_request", "batch.entities"},
		{obj{"url": up.URL + "/array", "batch": obj{"schema_id": "s", "nope": 1}}, "invalid_request", "batch"},
		// The document's.
		{obj{"url": up.URL + "/many"}, "too_many_entities", "url"},
		{obj{"url": up.URL + "/garbage"}, "fetch_unparseable", "url"},
	} {
		st, _, e := fetch(tt.body)
		if st != 400 || e.Code != tt.code || e.Field != tt.field {
			t.Errorf("%v: %d %+v, want 400 %s naming %s", tt.body, st, e, tt.code, tt.field)
		}
	}
	// The server's failures.
	for _, path := range []string{"/fail", "/missing", "/loop"} {
		st, _, e := fetch(obj{"url": up.URL + path})
		if st != 502 || e.Code != "fetch_failed" {
			t.Errorf("%s: %d %+v, want 502 fetch_failed", path, st, e)
		}
	}
	// Nothing listens on port 80 of 127.0.0.1 in tests; it is refused by the
	// guard anyway, before any connection.
	is.Equal(forbiddenHits.Load(), int64(0))

	// Secrets never reach the logs.
	for _, secret := range []string{fetchBearer, fetchAPIKey, fetchPass} {
		is.True(!strings.Contains(logs.String(), secret))
	}
	// Fetch and start the batch in one call: the fetched entities are the
	// batch's, followed on the usual stream.
	schemaID := s.createSchema(home.key, "Company", companySchema)
	var started struct {
		JobID   string `json:"job_id"`
		Total   int    `json:"total"`
		Message string `json:"message"`
	}
	is.Equal(s.call("POST", "/api/batch/fetch", operator, obj{"url": up.URL + "/array",
		"batch": obj{"schema_id": schemaID, "models": []string{"sandbox::echo"}}}, &started), 200)
	is.Equal(started.Total, 2)
	is.True(started.JobID != "" && strings.Contains(started.Message, started.JobID))
	evs := s.follow(operator, started.JobID, "")
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "entity_completed")), 2)

	// Another organization's schema_id: 404, checked before the download
	// (the server sees no request), as is every other field of the batch
	// that needs no entity.
	stranger := s.register("stranger@example.com")
	foreignSchema := s.createSchema(stranger.key, "Theirs", companySchema)
	before := len(up.seen())
	for _, tt := range []struct {
		batch       obj
		status      int
		code, field string
	}{
		{obj{"schema_id": foreignSchema, "models": []string{"sandbox::echo"}}, 404, "not_found", ""},
		{obj{"schema_id": "no-such-schema", "models": []string{"sandbox::echo"}}, 404, "not_found", ""},
		{obj{"schema_id": schemaID, "models": []string{"nowhere::nothing"}}, 400, "", "models"},
		{obj{"schema_id": schemaID, "models": []string{"sandbox::echo"}, "selected_indices": []int{}}, 400, "invalid_request", "selected_indices"},
		{obj{"schema_id": schemaID, "models": []string{"sandbox::echo"}, "selected_indices": []int{0, 0}}, 400, "invalid_request", "selected_indices.1"},
		{obj{"schema_id": schemaID, "models": []string{"sandbox::echo"}, "pause_timeout_seconds": 5}, 400, "invalid_request", "pause_timeout_seconds"},
	} {
		var e apiError
		st := s.call("POST", "/api/batch/fetch", operator, obj{"url": up.URL + "/array", "batch": tt.batch}, &e)
		if st != tt.status || (tt.code != "" && e.Code != tt.code) || e.Field != tt.field {
			t.Errorf("batch %v: %d %+v, want %d %s naming %q", tt.batch, st, e, tt.status, tt.code, tt.field)
		}
	}
	is.Equal(len(up.seen()), before) // nothing was downloaded

	// The role: operators may fetch; a read-only key may not.
	ro := s.newKeyScopes(home.key, "owner", []string{"read"})
	is.Equal(s.call("POST", "/api/batch/fetch", ro, obj{"url": up.URL + "/array"}, nil), 403)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// newKeyScopes creates an organization key with a role and scopes.
func (s *service) newKeyScopes(cred, role string, scopes []string) string {
	s.t.Helper()
	var k struct {
		Key string `json:"key"`
	}
	if st := s.call("POST", "/api/auth/api-keys", cred, obj{"name": role + " scoped", "role": role, "scopes": scopes}, &k); st != 201 {
		s.t.Fatalf("create key: %d", st)
	}
	return k.Key
}
