package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// clockPast waits until the clock reads a later microsecond than ts (the
// resolution the service stores times with), so that whatever the service
// stamps next is later than ts. The service runs in this process, on the
// same clock.
func clockPast(ts time.Time) {
	for !time.Now().After(ts.Add(time.Microsecond)) {
		runtime.Gosched()
	}
}

// backends are the storages every end-to-end flow runs on.
var backends = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"memory", func(*testing.T) string { return "" }},
	{"postgres", func(t *testing.T) string { return pgtest.Native(t) }},
	{"pglite", func(t *testing.T) string { return pgtest.PGlite(t) }},
}

// service is a running enrichd on a loopback port.
type service struct {
	t    *testing.T
	url  string
	srv  *enrich.Server
	stop func()
	http *http.Client
}

func testConfig(dsn string) enrich.Config {
	return enrich.Config{
		DatabaseURL:     dsn,
		EmbeddingModel:  "builtin::ngram-384",
		Sandbox:         true,
		JWTSecret:       strings.Repeat("s", 40),
		PasswordHashing: "fast",
		SysAdminEmails:  []string{"admin@example.com"},
		AuthCacheTTL:    30 * time.Second,
		SchemaCacheTTL:  time.Minute, // the environment's default
		// The environment's default too.
		ConceptRouteCacheTTL: time.Minute,
		ShutdownGrace:        2 * time.Second,
		SSEHeartbeat:         15 * time.Second,
		// Errors reach the test output; the rest is noise.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
}

func start(t *testing.T, cfg enrich.Config) *service {
	t.Helper()
	if os.Getenv("ENRICH_E2E_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := enrich.NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	s := &service{t: t, url: "http://" + ln.Addr().String(), srv: srv, http: &http.Client{Timeout: 60 * time.Second}}
	var once bool
	s.stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(s.stop)
	return s
}

// call makes a JSON request with a credential ("" for none) and decodes the
// answer into out (if not nil). It returns the status.
func (s *service) call(method, path, cred string, body any, out any) int {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

func setCred(req *http.Request, cred string) {
	switch {
	case cred == "":
	case strings.HasPrefix(cred, "ent_"):
		req.Header.Set("X-API-Key", cred)
	default:
		req.Header.Set("Authorization", "Bearer "+cred)
	}
}

type obj = map[string]any

// tenant is a registered organization with an owner session and an API key.
type tenant struct {
	token, key, orgID string
}

func (s *service) register(email string) tenant {
	s.t.Helper()
	var sess struct {
		AccessToken  string `json:"access_token"`
		Organization struct {
			ID string `json:"id"`
		} `json:"organization"`
	}
	if st := s.call("POST", "/api/auth/register", "", obj{"email": email, "password": "correct horse battery", "organization": "Org " + email}, &sess); st != 201 {
		s.t.Fatalf("register: %d", st)
	}
	return tenant{token: sess.AccessToken, key: s.newKey(sess.AccessToken, "owner"), orgID: sess.Organization.ID}
}

func (s *service) newKey(cred, role string) string {
	s.t.Helper()
	var k struct {
		Key string `json:"key"`
	}
	body := obj{"name": role + " key", "role": role}
	if role == "" {
		body["role"] = nil
	}
	if st := s.call("POST", "/api/auth/api-keys", cred, body, &k); st != 201 || k.Key == "" {
		s.t.Fatalf("create %s key: %d", role, st)
	}
	return k.Key
}

// companySchema has three expertise domains: general, finance (named on
// properties) and headquarters (an object).
const companySchema = `{
  "type": "object",
  "x-expertiseDomains": {"finance": {"name": "Finance", "description": "revenue and listing"}},
  "required": ["name", "industry", "founded", "revenue", "ticker", "headquarters"],
  "properties": {
    "name": {"type": "string"},
    "industry": {"type": "string"},
    "founded": {"type": "integer", "minimum": 1600, "maximum": 2100},
    "employees": {"type": ["integer", "null"]},
    "revenue": {"type": "number", "expertise": "finance"},
    "ticker": {"type": "string", "expertise": "finance"},
    "headquarters": {"type": "object", "required": ["city", "country"], "properties": {"city": {"type": "string"}, "country": {"type": "string"}}}
  }
}`

func (s *service) createSchema(cred, name, doc string) string {
	s.t.Helper()
	var out struct {
		ID string `json:"id"`
	}
	if st := s.call("POST", "/api/schema/saved", cred, obj{"name": name, "schema": json.RawMessage(doc)}, &out); st != 201 {
		s.t.Fatalf("create schema: %d", st)
	}
	return out.ID
}

func (s *service) startJob(cred string, body obj) string {
	s.t.Helper()
	var out struct {
		JobID string `json:"job_id"`
	}
	if st := s.call("POST", "/api/single/enrich/stream", cred, body, &out); st != 200 || out.JobID == "" {
		s.t.Fatalf("start enrichment: %d", st)
	}
	return out.JobID
}

// event is one SSE event as a client sees it.
type event struct {
	ID   string
	Name string
	Data obj
}

// follow reads a job's SSE stream to its end with a real SSE parser.
func (s *service) follow(cred, jobID, lastEventID string) []event {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/llm/stream/"+jobID, nil)
	setCred(req, cred)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		s.t.Fatalf("stream %s: status %d", jobID, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		s.t.Fatalf("stream content type %q", ct)
	}
	var evs []event
	for e, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			s.t.Fatalf("read stream: %v", err)
		}
		var d obj
		if err := json.Unmarshal([]byte(e.Data), &d); err != nil {
			s.t.Fatalf("event data %q: %v", e.Data, err)
		}
		name, _ := d["event"].(string)
		evs = append(evs, event{ID: e.LastEventID, Name: name, Data: d})
	}
	return evs
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Name
		if x, ok := e.Data["expertise"].(string); ok {
			out[i] += ":" + x
		} else if x, ok := e.Data["expertise_key"].(string); ok {
			out[i] += ":" + x
		}
	}
	return out
}

func find(evs []event, name string) []event {
	var out []event
	for _, e := range evs {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func indexOf(evs []event, name string) int {
	for i, e := range evs {
		if e.Name == name {
			return i
		}
	}
	return -1
}

func last(evs []event) event {
	if len(evs) == 0 {
		return event{}
	}
	return evs[len(evs)-1]
}

func mustf(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

func jsonBody(v any) io.Reader {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bytes.NewReader(b)
}
