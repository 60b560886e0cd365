package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gorilla/mux"
	"github.com/matryer/is"
)

func TestOpenAPILoadSpec(t *testing.T) {
	is := is.New(t)
	doc, err := LoadSpec()
	is.NoErr(err)
	is.Equal(doc.OpenAPI, "3.1.0")
	is.NoErr(doc.Validate(context.Background()))

	again, err := LoadSpec()
	is.NoErr(err)
	is.True(again != doc) // every caller gets its own document

	b, err := SpecJSON()
	is.NoErr(err)
	var m map[string]any
	is.NoErr(json.Unmarshal(b, &m))
	is.Equal(m["openapi"], "3.1.0")
	b[0] = 'x' // the caller's own bytes
	b2, err := SpecJSON()
	is.NoErr(err)
	is.Equal(b2[0], byte('{'))

	// The JSON form loads back into the same operations.
	back, err := openapi3.NewLoader().LoadFromData(b2)
	is.NoErr(err)
	is.NoErr(back.Validate(context.Background()))
	is.Equal(SpecRoutes(back), SpecRoutes(doc))
}

// TestOpenAPIRoutesMatchPolicy keeps the document and the access policy
// (which lists every served route) in step.
func TestOpenAPIRoutesMatchPolicy(t *testing.T) {
	is := is.New(t)
	doc, err := LoadSpec()
	is.NoErr(err)
	var want []SpecRoute
	for _, r := range PolicyRoutes() {
		want = append(want, SpecRoute{r.Method, r.Path})
	}
	slices.SortFunc(want, func(a, b SpecRoute) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	})
	got := SpecRoutes(doc)
	is.True(slices.IsSortedFunc(got, func(a, b SpecRoute) int {
		return strings.Compare(a.Path+" "+a.Method, b.Path+" "+b.Method)
	}))
	is.Equal(got, want)
}

// TestOpenAPIConventions checks the document's house rules operation by
// operation.
func TestOpenAPIConventions(t *testing.T) {
	doc, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	publicPaths := map[string]bool{}
	for _, r := range PolicyRoutes() {
		if public(r.Method, r.Path) {
			publicPaths[r.Path] = true
		}
	}
	ids := map[string]bool{}
	for _, sr := range SpecRoutes(doc) {
		op := doc.Paths.Find(sr.Path).GetOperation(sr.Method)
		name := sr.Method + " " + sr.Path
		if op.OperationID == "" || op.Summary == "" || strings.Contains(op.Summary, "\n") {
			t.Errorf("%s: wants an operationId and a one-line summary", name)
		}
		if ids[op.OperationID] {
			t.Errorf("%s: operationId %q is used twice", name, op.OperationID)
		}
		ids[op.OperationID] = true
		isPublic := op.Security != nil && len(*op.Security) == 0
		if isPublic != publicPaths[sr.Path] {
			t.Errorf("%s: public is %v, want %v", name, isPublic, publicPaths[sr.Path])
		}
		if !isPublic {
			for _, code := range []int{401, 403} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s: lists no %d response", name, code)
				}
			}
		}
		if rb := op.RequestBody; rb != nil {
			for _, code := range []int{400, 413} {
				if op.Responses.Status(code) == nil {
					t.Errorf("%s: takes a body but lists no %d response", name, code)
				}
			}
			js := rb.Value.Content.Get("application/json")
			if js == nil && rb.Value.Content.Get("multipart/form-data") != nil {
				continue // an upload: its parts are files
			}
			s := js.Schema.Value
			if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
				t.Errorf("%s: request body schema must set additionalProperties: false", name)
			}
		}
	}
	if len(doc.Security) != 2 {
		t.Errorf("global security: got %d alternatives, want X-API-Key or bearer", len(doc.Security))
	}
}

// verdict is what a request through the middleware came to: the next
// handler (status 200, with the body it read) or a rejection.
type verdict struct {
	status        int
	field, detail string
	body          string // what the next handler read
}

func newValidator(t testing.TB) (func(http.Handler) http.Handler, *openapi3.T) {
	t.Helper()
	doc, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	mw, err := ValidateRequests(doc, func(w http.ResponseWriter, r *http.Request, status int, field, detail string) {
		writeJSON(w, status, errorBody{Detail: detail, Field: field}.wire())
	})
	if err != nil {
		t.Fatal(err)
	}
	return mw, doc
}

// echo stands for the handlers: it reads the whole body back.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusTeapot)
		return
	}
	w.Header().Set("X-Next", "1")
	_, _ = w.Write(b)
})

func do(t testing.TB, h http.Handler, req *http.Request) verdict {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	v := verdict{status: rec.Code}
	if rec.Header().Get("X-Next") == "1" {
		v.body = rec.Body.String()
		return v
	}
	e, err := readErrorBody(rec.Body.Bytes())
	if err != nil {
		t.Errorf("error body %q: %v", rec.Body.String(), err)
	}
	v.field, v.detail = e.Field, e.Detail
	return v
}

type validateCase struct {
	name         string
	method, path string
	body         string
	contentType  string // "-" for none; default application/json when there is a body
	limit        int64  // wrap the body in http.MaxBytesReader
	status       int
	field        string
	detail       string // substring
	// schema marks cases decided by the schema validator, which
	// TestValidateRequestsAgreesWith31Engine compares with kin-openapi's 3.1 engine.
	schema bool
}

const validEnrich = `{"entity_data":{"name":"Acme","tags":["a"],"n":1.5},"schema_id":"sch_1","models":["sandbox::echo"],"strategy":"auto","enable_web_search":false}`

var validateCases = []validateCase{
	{name: "valid register passes", method: "POST", path: "/api/auth/register",
		body: `{"email":"ada@example.com","password":"correct horse","organization":"Acme"}`, status: 200, schema: true},
	{name: "unknown field is named", method: "POST", path: "/api/auth/register",
		body:   `{"email":"ada@example.com","password":"correct horse","organization":"Acme","colour":"red"}`,
		status: 400, field: "colour", detail: `unknown field "colour"`, schema: true},
	{name: "missing required field is named", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{}}`, status: 400, field: "schema_id", detail: `field "schema_id" is required`, schema: true},
	{name: "wrong type is named", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":"x","schema_id":"s"}`, status: 400, field: "entity_data", detail: `field "entity_data" must be an object`, schema: true},
	{name: "eleven models rejected", method: "POST", path: "/api/single/enrich/stream",
		body:   `{"entity_data":{},"schema_id":"s","models":["a","b","c","d","e","f","g","h","i","j","k"]}`,
		status: 400, field: "models", detail: `field "models" must have at most 10 items`, schema: true},
	{name: "array item path", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{},"schema_id":"s","models":["a",3]}`, status: 400, field: "models.1", detail: `field "models.1" must be a string`, schema: true},
	{name: "strategy fastest rejected", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{},"schema_id":"s","strategy":"fastest"}`, status: 400, field: "strategy", detail: `field "strategy" must be one of auto, multi_expertise`, schema: true},
	{name: "valid enrich passes", method: "POST", path: "/api/single/enrich/stream", body: validEnrich, status: 200, schema: true},
	{name: "entity_data is free-form", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{"anything":{"deep":[1,null,{"x":true}]}},"schema_id":"s","model":"auto"}`, status: 200, schema: true},
	{name: "sync timeout bounded", method: "POST", path: "/api/single/enrich/sync",
		body: `{"entity_data":{},"schema_id":"s","timeout_seconds":0}`, status: 400, field: "timeout_seconds", detail: `field "timeout_seconds" must be at least 1`, schema: true},
	{name: "sync timeout accepted", method: "POST", path: "/api/single/enrich/sync",
		body: `{"entity_data":{},"schema_id":"s","timeout_seconds":60}`, status: 200, schema: true},
	{name: "timeout_seconds is sync only", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{},"schema_id":"s","timeout_seconds":60}`, status: 400, field: "timeout_seconds", detail: `unknown field "timeout_seconds"`, schema: true},
	{name: "page_size above 200 rejected", method: "GET", path: "/api/schema/saved?page_size=500",
		status: 400, field: "page_size", detail: `field "page_size" must be at most 200`, schema: true},
	{name: "page_size not a number", method: "GET", path: "/api/records?page_size=ten",
		status: 400, field: "page_size", detail: `field "page_size" must be an integer`, schema: true},
	{name: "page_size and cursor pass", method: "GET", path: "/api/records?page_size=200&cursor=abc&type=enrichment", status: 200, schema: true},
	{name: "record type enum", method: "GET", path: "/api/records?type=benchmark", status: 400, field: "type", detail: `field "type" must be one of enrichment`, schema: true},
	{name: "key role null is a legacy key", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","role":null,"expires_at":null}`, status: 200, schema: true},
	{name: "key with everything", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","role":"operator","scopes":["read"],"expires_at":"2030-01-02T03:04:05Z"}`, status: 200, schema: true},
	{name: "key role enum", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","role":"admin"}`, status: 400, field: "role", detail: `field "role" must be one of owner, editor, operator, null`, schema: true},
	{name: "key scopes not empty", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","scopes":[]}`, status: 400, field: "scopes", detail: `field "scopes" must have at least 1 item`, schema: true},
	{name: "key expiry format", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","expires_at":"next week"}`, status: 400, field: "expires_at", detail: "RFC 3339", schema: true},
	{name: "key expiry days bounded", method: "POST", path: "/api/auth/api-keys",
		body: `{"name":"ci","expires_in_days":3651}`, status: 400, field: "expires_in_days", detail: "at most 3650", schema: true},
	{name: "key role update needs a role", method: "PATCH", path: "/api/auth/api-keys/k1",
		body: `{}`, status: 400, field: "role", detail: `field "role" is required`, schema: true},
	{name: "register email format", method: "POST", path: "/api/auth/register",
		body: `{"email":"not-an-address","password":"correct horse","organization":"Acme"}`, status: 400, field: "email", detail: "email address", schema: true},
	{name: "register password length", method: "POST", path: "/api/auth/register",
		body: `{"email":"ada@example.com","password":"short","organization":"Acme"}`, status: 400, field: "password", detail: "at least 8 characters", schema: true},
	{name: "schema create keeps schema free-form", method: "POST", path: "/api/schema/saved",
		body: `{"name":"Company","schema":{"type":"object","properties":{"x":{"type":"string"}},"$defs":{}},"linked":true}`, status: 200, schema: true},
	{name: "body must be an object", method: "POST", path: "/api/auth/login",
		body: `["ada@example.com"]`, status: 400, field: "", detail: "request body must be an object", schema: true},
	{name: "invalid JSON", method: "POST", path: "/api/single/enrich/stream",
		body: `{"entity_data":{},"schema_id":`, status: 400, detail: "request body is not valid JSON"},
	{name: "trailing data is not JSON", method: "POST", path: "/api/auth/login",
		body: `{"email":"a@b.c","password":"x"} {}`, status: 400, detail: "request body is not valid JSON"},
	{name: "empty body", method: "POST", path: "/api/auth/refresh", status: 400, detail: "request body is required"},
	{name: "oversized body gives 413", method: "POST", path: "/api/single/enrich/stream",
		body: validEnrich, limit: 16, status: 413, detail: "request body too large"},
	{name: "body within the limit passes", method: "POST", path: "/api/single/enrich/stream",
		body: validEnrich, limit: 1 << 20, status: 200},
	{name: "no content type is read as JSON", method: "POST", path: "/api/auth/login",
		body: `{"email":"a@b.c","password":"x"}`, contentType: "-", status: 200},
	{name: "JSON with charset", method: "POST", path: "/api/auth/login",
		body: `{"email":"a@b.c","password":"x"}`, contentType: "application/json; charset=utf-8", status: 200},
	{name: "form body rejected", method: "POST", path: "/api/auth/login",
		body: `email=a@b.c`, contentType: "application/x-www-form-urlencoded", status: 415, field: "Content-Type", detail: "application/json"},
	{name: "path not in the document passes", method: "GET", path: "/metrics", status: 200},
	{name: "method not in the document passes", method: "DELETE", path: "/api/records", body: `not json`, status: 200},
	{name: "route without a body ignores one", method: "POST", path: "/api/llm/cancel/job_1", body: `whatever`, status: 200},
	{name: "stream token and Last-Event-ID", method: "GET", path: "/api/llm/stream/job_1?token=abc", status: 200, schema: true},
}

func newRequest(tc validateCase) *http.Request {
	var body io.Reader = http.NoBody
	if tc.body != "" {
		body = strings.NewReader(tc.body)
	}
	req := httptest.NewRequest(tc.method, tc.path, body)
	switch {
	case tc.contentType == "-":
	case tc.contentType != "":
		req.Header.Set("Content-Type", tc.contentType)
	case tc.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(tc.path, "/api/llm/stream/") {
		req.Header.Set("Last-Event-ID", "3")
	}
	if tc.limit > 0 {
		req.Body = http.MaxBytesReader(httptest.NewRecorder(), req.Body, tc.limit)
	}
	return req
}

// muxed mounts the middleware the way the server does: inside a gorilla/mux
// router, on every route of the document plus a few it does not describe.
func muxed(mw func(http.Handler) http.Handler, doc *openapi3.T) http.Handler {
	r := mux.NewRouter()
	r.Use(mw)
	for _, sr := range SpecRoutes(doc) {
		r.Handle(sr.Path, echo).Methods(sr.Method)
	}
	r.Handle("/metrics", echo).Methods("GET")
	r.Handle("/api/records", echo).Methods("DELETE")
	return r
}

func TestValidateRequests(t *testing.T) {
	mw, doc := newValidator(t)
	for mount, h := range map[string]http.Handler{"standalone": mw(echo), "mux": muxed(mw, doc)} {
		for _, tc := range validateCases {
			t.Run(mount+"/"+tc.name, func(t *testing.T) {
				is := is.New(t)
				got := do(t, h, newRequest(tc))
				is.Equal(got.status, tc.status) // status
				if tc.status == http.StatusOK {
					is.Equal(got.body, tc.body) // the handler reads the body as sent
					return
				}
				t.Logf("%d field=%q detail=%q", got.status, got.field, got.detail)
				is.Equal(got.field, tc.field) // field
				if !strings.Contains(got.detail, tc.detail) {
					t.Errorf("detail %q does not contain %q", got.detail, tc.detail)
				}
			})
		}
	}
}

// TestValidateRequestsAgreesWith31Engine runs the schema cases through
// kin-openapi's own OpenAPI 3.1 path (the JSON Schema 2020-12 validator),
// which the middleware skips for speed, and expects the same verdicts.
func TestValidateRequestsAgreesWith31Engine(t *testing.T) {
	doc, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	extra := []validateCase{
		{name: "integral float for an integer", method: "POST", path: "/api/auth/api-keys", body: `{"name":"k","expires_in_days":30.0}`},
		{name: "fraction for an integer", method: "POST", path: "/api/auth/api-keys", body: `{"name":"k","expires_in_days":1.5}`},
		{name: "repeated scopes", method: "POST", path: "/api/auth/api-keys", body: `{"name":"k","scopes":["read","read"]}`},
		{name: "null where not nullable", method: "POST", path: "/api/single/enrich/stream", body: `{"entity_data":null,"schema_id":"s"}`},
		{name: "null model", method: "POST", path: "/api/single/enrich/stream", body: `{"entity_data":{},"schema_id":"s","model":null}`},
		{name: "empty schema_id", method: "POST", path: "/api/single/enrich/stream", body: `{"entity_data":{},"schema_id":""}`},
		{name: "unicode name length", method: "POST", path: "/api/schema/saved", body: `{"name":"é","schema":{}}`},
		{name: "page_size zero", method: "GET", path: "/api/schema/saved?page_size=0"},
	}
	mw, _ := newValidator(t)
	h := mw(echo)
	for _, tc := range append(slices.Clone(validateCases), extra...) {
		if !tc.schema && !slices.ContainsFunc(extra, func(e validateCase) bool { return e.name == tc.name }) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(tc)
			route, params, err := router.FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
				Request: req, PathParams: params, Route: route,
				Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, SkipSettingDefaults: true,
					SchemaValidationOptions: []openapi3.SchemaValidationOption{
						openapi3.WithStringFormatValidator("email", openapi3.NewCallbackValidator(checkEmail)),
					}},
			})
			ours := do(t, h, newRequest(tc))
			if (err == nil) != (ours.status == http.StatusOK) {
				t.Errorf("3.1 engine: %v; middleware: %d %s", err, ours.status, ours.detail)
			}
		})
	}
}

// TestValidateRequestsConcurrent gives the race detector shared state to look
// at: one middleware, many requests at once.
func TestValidateRequestsConcurrent(t *testing.T) {
	mw, doc := newValidator(t)
	h := muxed(mw, doc)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				tc := validateCases[(g*40+i)%len(validateCases)]
				if got := do(t, h, newRequest(tc)); got.status != tc.status {
					t.Errorf("%s: status %d, want %d", tc.name, got.status, tc.status)
				}
			}
		})
	}
	wg.Wait()
}

func TestValidateRequestsRejectsBadSetup(t *testing.T) {
	is := is.New(t)
	_, err := ValidateRequests(nil, func(http.ResponseWriter, *http.Request, int, string, string) {})
	is.True(err != nil)
	doc, err := LoadSpec()
	is.NoErr(err)
	_, err = ValidateRequests(doc, nil)
	is.True(err != nil)
}

func BenchmarkValidateRequests(b *testing.B) {
	mw, doc := newValidator(b)
	for mount, h := range map[string]http.Handler{"standalone": mw(echo), "mux": muxed(mw, doc)} {
		b.Run(mount, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/api/single/enrich/stream", strings.NewReader(validEnrich))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// FuzzValidateEnrichStream feeds arbitrary bodies to POST
// /api/single/enrich/stream: the middleware must never panic, and must
// either hand the unchanged body to the handler or answer a 4xx.
func FuzzValidateEnrichStream(f *testing.F) {
	for _, s := range []string{
		validEnrich,
		`{"entity_data":{},"schema_id":"s"}`,
		`{"entity_data":"x","schema_id":"s"}`,
		`{"entity_data":{},"schema_id":"s","models":["a","b","c","d","e","f","g","h","i","j","k"]}`,
		`{"entity_data":{},"schema_id":"s","strategy":"fastest","colour":1}`,
		`{"entity_data":{"a":{"b":[1,2,{"c":null}]}},"schema_id":"s","model":"auto","enable_web_search":true}`,
		`{"entity_data":{},"schema_id":1e400}`,
		`{"entity_data":{},"entity_data":[]}`,
		`[]`, `null`, `"x"`, `{`, ``, "\xff", `{"schema_id":"\u0000"}`,
	} {
		f.Add([]byte(s), "application/json")
	}
	f.Add([]byte(validEnrich), "")
	f.Add([]byte(validEnrich), "text/plain")
	mw, _ := newValidator(f)
	h := mw(echo)
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest("POST", "/api/single/enrich/stream", bytes.NewReader(body))
		if contentType != "" {
			req.Header["Content-Type"] = []string{contentType}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Header().Get("X-Next") == "1" {
			if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), body) {
				t.Fatalf("the handler read %q, want %q", rec.Body.Bytes(), body)
			}
			return
		}
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
		if e, err := readErrorBody(rec.Body.Bytes()); err != nil || e.Detail == "" {
			t.Fatalf("error body %q", rec.Body.String())
		}
	})
}
