package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/text"
)

// hostile is one kind of text that no store keeps as sent, as it appears in
// JSON (json), in a URL (urlEnc), and in the field name the service reports
// when it is part of a key (shown).
type hostile struct {
	name, json, urlEnc, shown string
}

var hostiles = []hostile{
	{"NUL escape", `\u0000`, "%00", `\u0000`},
	{"raw NUL byte", "\x00", "%00", `\u0000`},
	{"lone high surrogate", `\ud800`, "%ED%A0%80", `\ud800`},
	{"lone low surrogate", `\uDC00`, "%ED%B0%80", `\udc00`},
	{"high surrogate then NUL", `\uD83D\u0000`, "%F0%9F%98", `\ud83d\u0000`},
	{"invalid UTF-8 byte", "\xff", "%FF", `\xff`},
}

// reply is what the service answered.
type reply struct {
	status int
	header http.Header
	err    struct{ Detail, Code, Field string }
	raw    string
}

// do sends one request with a raw body ("" for none) and extra headers, and
// reads the answer within ctx; a transport error (a hang) is returned.
func (s *service) do(ctx context.Context, method, path, cred, body string, header http.Header) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &r.err)
	}
	return r, nil
}

// TestHostileText: NUL bytes, lone surrogates and invalid UTF-8 in every
// string and key of the JSON-bodied routes, in path variables and in query
// parameters, are refused with 400 invalid_request naming the field, on
// every store: no 5xx, no hang, nothing stored, no job left running, and the
// service still enriches afterwards. (A schema whose property name held a
// NUL used to be accepted, and wedged every enrichment on PostgreSQL.)
func TestHostileText(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("hostile@example.com")
			schemaID := s.createSchema(ten.key, "Company", companySchema)
			const H = "@@H@@"
			type tc struct {
				name, method, path, cred, body, field string
			}
			enrich := func(route string) []tc {
				good := `{"entity_data":{"name":"Acme","tags":["a","b"]},"schema_id":"` + schemaID + `","models":["sandbox::echo"]}`
				return []tc{
					{route + " entity_data key", "POST", route, ten.key, strings.Replace(good, `"name"`, `"k`+H+`"`, 1), "entity_data.k{S}"},
					{route + " entity_data value", "POST", route, ten.key, strings.Replace(good, `"Acme"`, `"Ac`+H+`me"`, 1), "entity_data.name"},
					{route + " entity_data nested value", "POST", route, ten.key, strings.Replace(good, `"b"`, `"`+H+`"`, 1), "entity_data.tags.1"},
					{route + " schema_id", "POST", route, ten.key, strings.Replace(good, schemaID, schemaID+H, 1), "schema_id"},
					{route + " models", "POST", route, ten.key, strings.Replace(good, `"sandbox::echo"`, `"sandbox::echo`+H+`"`, 1), "models.0"},
					{route + " model", "POST", route, ten.key, strings.Replace(good, `"models":["sandbox::echo"]`, `"model":"sandbox::`+H+`"`, 1), "model"},
					{route + " strategy", "POST", route, ten.key, strings.Replace(good, `"models"`, `"strategy":"auto`+H+`","models"`, 1), "strategy"},
					{route + " top-level key", "POST", route, ten.key, strings.Replace(good, `"models"`, `"x`+H+`":1,"models"`, 1), "x{S}"},
				}
			}
			reg := `{"email":"new@example.com","password":"correct horse battery","organization":"Org"}`
			login := `{"email":"hostile@example.com","password":"correct horse battery"}`
			key := `{"name":"k","role":"editor","scopes":["read","write"],"expires_at":"2099-01-01T00:00:00Z"}`
			sc := `{"name":"S","description":"d","schema":{"type":"object","required":["p"],"properties":{"p":{"type":"string","enum":["a","b"]},"hq":{"type":"object","properties":{"city":{"type":"string"}}}}}}`
			member := `{"email":"member@example.com","password":"correct horse battery","role":"editor"}`
			cases := []tc{
				{"register email", "POST", "/api/auth/register", "", strings.Replace(reg, "new@", "n"+H+"ew@", 1), "email"},
				{"register password", "POST", "/api/auth/register", "", strings.Replace(reg, "horse", "ho"+H+"rse", 1), "password"},
				{"register organization", "POST", "/api/auth/register", "", strings.Replace(reg, `"Org"`, `"O`+H+`rg"`, 1), "organization"},
				{"register key", "POST", "/api/auth/register", "", strings.Replace(reg, `"email"`, `"x`+H+`":1,"email"`, 1), "x{S}"},
				{"login email", "POST", "/api/auth/login", "", strings.Replace(login, "hostile@", "hostile"+H+"@", 1), "email"},
				{"login password", "POST", "/api/auth/login", "", strings.Replace(login, "battery", "battery"+H, 1), "password"},
				{"login key", "POST", "/api/auth/login", "", strings.Replace(login, `"password"`, `"pass`+H+`word"`, 1), "pass{S}word"},
				{"refresh token", "POST", "/api/auth/refresh", "", `{"refresh_token":"abc` + H + `"}`, "refresh_token"},
				{"api-key name", "POST", "/api/auth/api-keys", ten.token, strings.Replace(key, `"k"`, `"k`+H+`"`, 1), "name"},
				{"api-key role", "POST", "/api/auth/api-keys", ten.token, strings.Replace(key, `"editor"`, `"editor`+H+`"`, 1), "role"},
				{"api-key scopes", "POST", "/api/auth/api-keys", ten.token, strings.Replace(key, `"write"`, `"wr`+H+`ite"`, 1), "scopes.1"},
				{"api-key expires_at", "POST", "/api/auth/api-keys", ten.token, strings.Replace(key, `Z"`, `Z`+H+`"`, 1), "expires_at"},
				{"api-key key", "POST", "/api/auth/api-keys", ten.token, strings.Replace(key, `"name"`, `"na`+H+`me"`, 1), "na{S}me"},
				{"member email", "POST", "/api/users", ten.token, strings.Replace(member, "member@", "mem"+H+"ber@", 1), "email"},
				{"member role", "POST", "/api/users", ten.token, strings.Replace(member, `"editor"`, `"`+H+`"`, 1), "role"},
				{"invitation email", "POST", "/api/invitations", ten.token, `{"email":"in` + H + `vitee@example.com","role":"editor"}`, "email"},
				{"invitation role", "POST", "/api/invitations", ten.token, `{"role":"ed` + H + `itor"}`, "role"},
				{"register invitation token", "POST", "/api/auth/register", "", strings.Replace(reg, `"Org"`, `"Org","invitation_token":"inv_`+H+`"`, 1), "invitation_token"},
				{"schema name", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"S"`, `"S`+H+`"`, 1), "name"},
				{"schema description", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"d"`, `"d`+H+`"`, 1), "description"},
				{"schema property name", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"p":{`, `"p`+H+`":{`, 1), "schema.properties.p{S}"},
				{"schema nested property name", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"city"`, `"ci`+H+`ty"`, 1), "schema.properties.hq.properties.ci{S}ty"},
				{"schema enum value", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"b"]`, `"b`+H+`"]`, 1), "schema.properties.p.enum.1"},
				{"schema required item", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `["p"]`, `["p`+H+`"]`, 1), "schema.required.0"},
				{"schema type value", "POST", "/api/schema/saved", ten.key, strings.Replace(sc, `"type":"string"`, `"type":"string`+H+`"`, 1), "schema.properties.p.type"},
				{"patch key role", "PATCH", "/api/auth/api-keys/k1", ten.token, `{"role":"` + H + `"}`, "role"},
				{"database name", "POST", "/api/schemas/" + schemaID + "/databases", ten.key, `{"name":"w` + H + `h"}`, "name"},
				{"database key_language", "POST", "/api/databases", ten.key, `{"name":"wh","saved_schema_id":"` + schemaID + `","key_language":"e` + H + `n"}`, "key_language"},
				{"database saved_schema_id", "POST", "/api/databases", ten.key, `{"name":"wh","saved_schema_id":"s` + H + `"}`, "saved_schema_id"},
				{"database key", "POST", "/api/databases", ten.key, `{"name":"wh","x` + H + `":1}`, "x{S}"},
				{"database patch name", "PATCH", "/api/databases/d1", ten.key, `{"name":"x` + H + `"}`, "name"},
				{"subscription url", "POST", "/api/schemas/" + schemaID + "/subscriptions", ten.key, `{"url":"https://e` + H + `.example/h"}`, "url"},
				{"subscription source", "POST", "/api/schemas/" + schemaID + "/subscriptions", ten.key, `{"url":"https://93.184.216.34/h","source":"n` + H + `"}`, "source"},
				{"subscription key", "POST", "/api/schemas/" + schemaID + "/subscriptions", ten.key, `{"url":"https://93.184.216.34/h","x` + H + `":1}`, "x{S}"},
				{"link webhook_url", "PUT", "/api/databases/d1/schemas/s1/webhook", ten.key, `{"webhook_url":"https://e` + H + `.example/h"}`, "webhook_url"},
				{"patch member status", "PATCH", "/api/users/u1", ten.token, `{"status":"active` + H + `"}`, "status"},
				{"sample entity_type", "POST", "/api/schema/sample/generate/stream", ten.key, `{"entity_type":"c` + H + `"}`, "entity_type"},
				{"sample field", "POST", "/api/schema/sample/generate/sync", ten.key, `{"entity_type":"c","fields":["a","b` + H + `"]}`, "fields.1"},
				{"sample typical object", "POST", "/api/schema/sample/generate/stream", ten.key, `{"entity_type":"c","typical_objects":["o` + H + `"]}`, "typical_objects.0"},
				{"continue answer text", "POST", "/api/llm/continue/j1", ten.key, `{"answers":{"q":{"text":"t` + H + `"}}}`, "answers.q.text"},
				{"continue answer option", "POST", "/api/llm/continue/j1", ten.key, `{"answers":{"q":{"option_ids":["o` + H + `"]}}}`, "answers.q.option_ids.0"},
				{"exchange refresh_token", "POST", "/api/database-sync/exchange", "", `{"refresh_token":"eesr_` + H + `"}`, "refresh_token"},
				{"exchange key", "POST", "/api/database-sync/exchange", "", `{"refresh_token":"eesr_x","k` + H + `":1}`, "k{S}"},
				{"concept text", "POST", "/api/semantic-concepts", ten.key, `{"text":"I` + H + `BM","concept_type":"company"}`, "text"},
				{"concept type", "POST", "/api/semantic-concepts", ten.key, `{"text":"IBM","concept_type":"c` + H + `"}`, "concept_type"},
				{"concept alias_of", "POST", "/api/semantic-concepts", ten.key, `{"text":"IBM","alias_of":"c` + H + `"}`, "alias_of"},
				{"probe text", "POST", "/api/semantic-concepts/probe", ten.key, `{"text":"I` + H + `BM","concept_type":"company"}`, "text"},
				{"probe embedding_model", "POST", "/api/semantic-concepts/probe", ten.key, `{"text":"IBM","concept_type":"company","embedding_model":"b` + H + `"}`, "embedding_model"},
				{"concept delete ids", "POST", "/api/semantic-concepts/delete", ten.key, `{"ids":["c` + H + `"]}`, "ids.0"},
				{"concept delete-impact types", "POST", "/api/semantic-concepts/delete-impact", ten.key, `{"concept_types":["c` + H + `"]}`, "concept_types.0"},
				{"concept import text", "POST", "/api/semantic-concepts/import", ten.key, `{"concept_type":"company","texts":["ok","I` + H + `BM"],"mint":true}`, "texts.1"},
				{"concept import type", "POST", "/api/semantic-concepts/import", ten.key, `{"concept_type":"c` + H + `","texts":["IBM"]}`, "concept_type"},
			}
			an := `{"sample_json":{"size":"large","board":[{"role":"chair"}]},"protected_fields":["size"],"model":"sandbox::echo"}`
			split := `{"path":"board","entity_fields":["name"],"entity_name":"Person","entity_samples":[{"board":[{"name":"Ann","role":"chair"}]}]}`
			cases = append(cases,
				tc{"analyze-sample key", "POST", "/api/schema/analyze-sample", ten.key, strings.Replace(an, `"size":"large"`, `"si`+H+`ze":"large"`, 1), "sample_json.si{S}ze"},
				tc{"analyze-sample nested value", "POST", "/api/schema/analyze-sample", ten.key, strings.Replace(an, `"chair"`, `"ch`+H+`air"`, 1), "sample_json.board.0.role"},
				tc{"analyze-sample protected_fields", "POST", "/api/schema/analyze-sample", ten.key, strings.Replace(an, `["size"]`, `["si`+H+`ze"]`, 1), "protected_fields.0"},
				tc{"analyze-sample model", "POST", "/api/schema/analyze-sample", ten.key, strings.Replace(an, `"sandbox::echo"`, `"sandbox::`+H+`"`, 1), "model"},
				tc{"scoping-split path", "POST", "/api/schema/scoping-split", ten.key, strings.Replace(split, `"board",`, `"bo`+H+`ard",`, 1), "path"},
				tc{"scoping-split entity_name", "POST", "/api/schema/scoping-split", ten.key, strings.Replace(split, `"Person"`, `"Per`+H+`son"`, 1), "entity_name"},
				tc{"scoping-split samples", "POST", "/api/schema/scoping-split", ten.key, strings.Replace(split, `"Ann"`, `"A`+H+`nn"`, 1), "entity_samples.0.board.0.name"},
			)
			gen := `{"entity_samples":[{"name":"Acme","tags":["a","b"]}],"model":"sandbox::echo","language":"en"}`
			for _, route := range []string{"/api/schema/generate/stream", "/api/schema/generate/sync", "/api/schema/samples/conformance"} {
				cases = append(cases,
					tc{route + " sample value", "POST", route, ten.key, strings.Replace(gen, `"Acme"`, `"Ac`+H+`me"`, 1), "entity_samples.0.name"},
					tc{route + " sample key", "POST", route, ten.key, strings.Replace(gen, `"name"`, `"n`+H+`"`, 1), "entity_samples.0.n{S}"},
					tc{route + " nested sample value", "POST", route, ten.key, strings.Replace(gen, `"b"`, `"`+H+`"`, 1), "entity_samples.0.tags.1"})
			}
			cases = append(cases,
				tc{"generate model", "POST", "/api/schema/generate/stream", ten.key, strings.Replace(gen, `"sandbox::echo"`, `"sandbox::`+H+`"`, 1), "model"},
				tc{"generate language", "POST", "/api/schema/generate/stream", ten.key, strings.Replace(gen, `"en"`, `"e`+H+`"`, 1), "language"},
				tc{"quarantine report error", "POST", "/api/databases/d1/quarantine/report", ten.key, `{"delta_id":1,"error":"refused ` + H + `"}`, "error"},
				tc{"quarantine delete entity_ids", "POST", "/api/databases/d1/quarantine/delete", ten.key, `{"entity_ids":["e` + H + `"]}`, "entity_ids.0"},
				tc{"quarantine reinject entity_ids", "POST", "/api/databases/d1/quarantine/reinject", ten.key, `{"entity_ids":["e` + H + `"]}`, "entity_ids.0"},
				tc{"sync-to-database record_id", "POST", "/api/records/sync-to-database", ten.key, `{"items":[{"record_id":"r` + H + `"}]}`, "items.0.record_id"},
				tc{"sync-to-database saved_schema_id", "POST", "/api/records/sync-to-database", ten.key,
					`{"items":[{"saved_schema_id":"s` + H + `","structured_output":{}}]}`, "items.0.saved_schema_id"},
				tc{"sync-to-database output value", "POST", "/api/records/sync-to-database", ten.key,
					`{"items":[{"saved_schema_id":"s","structured_output":{"name":"A` + H + `"}}]}`, "items.0.structured_output.name"},
				tc{"sync-to-database output key", "POST", "/api/records/sync-to-database", ten.key,
					`{"items":[{"saved_schema_id":"s","structured_output":{"n` + H + `":1}}]}`, "items.0.structured_output.n{S}"})
			for _, route := range []string{"/api/schema/saved/" + schemaID + "/prompt/stream", "/api/schema/saved/" + schemaID + "/prompt"} {
				cases = append(cases,
					tc{route + " prompt", "POST", route, ten.key, `{"prompt":"add a field ` + H + `"}`, "prompt"},
					tc{route + " model", "POST", route, ten.key, `{"prompt":"add a field x","model":"sandbox::` + H + `"}`, "model"})
			}
			for _, route := range []string{"/api/semantic-concepts/migration/preview", "/api/semantic-concepts/migration/start"} {
				cases = append(cases,
					tc{route + " target_model", "POST", route, ten.key, `{"target_model":"builtin::ngram-` + H + `"}`, "target_model"},
					tc{route + " source_model", "POST", route, ten.key, `{"target_model":"a::b","source_model":"x::` + H + `"}`, "source_model"},
					tc{route + " concept_types", "POST", route, ten.key, `{"target_model":"a::b","concept_types":["c` + H + `"]}`, "concept_types.0"})
			}
			cases = append(cases, tc{"embedding-model setting", "PUT", "/api/org-keys/embedding-model", ten.key,
				`{"embedding_model":"builtin::ngram-` + H + `"}`, "embedding_model"})
			cases = append(cases, enrich("/api/single/enrich/stream")...)
			cases = append(cases, enrich("/api/single/enrich/sync")...)
			for _, h := range hostiles {
				t.Run(h.name, func(t *testing.T) {
					all := append([]tc(nil), cases...)
					for _, p := range []struct{ method, path, field, body string }{
						{"GET", "/api/records/" + H, "id", ""},
						{"GET", "/api/schema/saved/" + H, "id", ""},
						{"POST", "/api/schema/saved/" + H + "/analyze", "id", ""},
						{"GET", "/api/llm/stream/" + H, "job_id", ""},
						{"POST", "/api/llm/cancel/" + H, "job_id", ""},
						{"POST", "/api/llm/continue/" + H, "job_id", ""},
						{"PATCH", "/api/auth/api-keys/" + H, "id", `{"role":"editor"}`},
						{"DELETE", "/api/auth/api-keys/" + H, "id", ""},
						{"PATCH", "/api/users/" + H, "id", `{"role":"editor"}`},
						{"GET", "/api/records?type=" + H, "type", ""},
						{"GET", "/api/records?schema_id=" + H, "schema_id", ""},
						{"GET", "/api/records?job_id=x" + H, "job_id", ""},
						{"GET", "/api/records?cursor=" + H, "cursor", ""},
						{"GET", "/api/records?page_size=1" + H, "page_size", ""},
						{"GET", "/api/records?x" + H + "=1", "{Q}", ""},
						{"GET", "/api/schema/saved?page_size=" + H, "page_size", ""},
						{"GET", "/api/llm/stream/j?last_event_id=" + H, "last_event_id", ""},
						{"GET", "/api/databases/" + H + "/changes", "database_id", ""},
						{"GET", "/api/databases/d1/changes?since=" + H, "since", ""},
						{"GET", "/api/databases/d1/changes?format=json" + H, "format", ""},
						{"POST", "/api/databases/" + H + "/ack", "database_id", `{"up_to_id":1}`},
						{"GET", "/api/databases/" + H + "/quarantine", "database_id", ""},
						{"GET", "/api/databases/" + H + "/credential", "database_id", ""},
						{"POST", "/api/databases/" + H + "/credential", "database_id", ""},
						{"DELETE", "/api/databases/" + H + "/credential", "database_id", ""},
						{"GET", "/api/databases/" + H + "/snapshot", "database_id", ""},
						{"GET", "/api/databases/d/snapshot?format=" + H, "format", ""},
						{"GET", "/api/databases/" + H + "/checksum", "database_id", ""},
						{"GET", "/api/schemas/" + H + "/entities", "schema_id", ""},
						{"GET", "/api/schemas/s/entities?entity_type=" + H, "entity_type", ""},
						{"POST", "/api/databases/" + H + "/quarantine/reinject", "database_id", `{"delta_ids":[1]}`},
						{"POST", "/api/database-sync/exchange?refresh_token=" + H, "refresh_token", ""},
						{"GET", "/api/schemas/" + H + "/subscriptions", "schema_id", ""},
						{"DELETE", "/api/schemas/s1/subscriptions?url=" + H, "url", ""},
						{"DELETE", "/api/schemas/s1/subscriptions?subscription_id=" + H, "subscription_id", ""},
						{"PUT", "/api/databases/" + H + "/schemas/s1/webhook", "database_id", `{"webhook_url":null}`},
						{"PUT", "/api/databases/d1/schemas/" + H + "/webhook", "saved_schema_id", `{"webhook_url":null}`},
						{"GET", "/api/databases/d1/webhook-secret?saved_schema_id=" + H, "saved_schema_id", ""},
						{"GET", "/api/semantic-concepts/" + H, "concept_id", ""},
						{"DELETE", "/api/semantic-concepts/" + H, "concept_id", ""},
						{"GET", "/api/semantic-concepts/" + H + "/neighbors", "concept_id", ""},
						{"DELETE", "/api/semantic-concepts/" + H + "/aliases/a1", "semantic_id", ""},
						{"PUT", "/api/semantic-concepts/c1/canonical/" + H, "alias_id", ""},
						{"GET", "/api/semantic-concepts?search=" + H, "search", ""},
						{"GET", "/api/semantic-concepts?concept_types=" + H, "concept_types", ""},
						{"GET", "/api/semantic-concepts/review?concept_types=" + H, "concept_types", ""},
						{"GET", "/api/semantic-concepts/duplicates?threshold=" + H, "threshold", ""},
						{"GET", "/api/semantic-concepts/export?concept_types=" + H, "concept_types", ""},
						{"GET", "/api/semantic-concepts/export?saved_schema_id=" + H, "saved_schema_id", ""},
						{"GET", "/api/semantic-concepts/export?search=" + H, "search", ""},
						{"POST", "/api/semantic-concepts/import?concept_type=" + H, "concept_type", `{"concept_type":"c","texts":["a"]}`},
					} {
						cred := ten.key
						if strings.Contains(p.path, "/api/auth/") || strings.Contains(p.path, "/api/users") {
							cred = ten.token
						}
						field := p.field
						if field == "{Q}" {
							raw, _ := url.QueryUnescape("x" + h.urlEnc)
							field = text.Escape(raw)
						}
						all = append(all, tc{p.method + " " + p.path, p.method, strings.ReplaceAll(p.path, H, h.urlEnc), cred, p.body, field})
					}
					for _, c := range all {
						is := is.NewRelaxed(t)
						if strings.Contains(c.body, H) {
							c.body = strings.ReplaceAll(c.body, H, h.json)
						}
						ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
						r, err := s.do(ctx, c.method, c.path, c.cred, c.body, nil)
						cancel()
						if err != nil {
							t.Errorf("%s: no answer (hang?): %v", c.name, err)
							continue
						}
						want := strings.ReplaceAll(c.field, "{S}", h.shown)
						if r.status != 400 || r.err.Code != "invalid_request" || r.err.Field != want {
							t.Errorf("%s: got %d %q field %q (%s); want 400 invalid_request field %q", c.name, r.status, r.err.Code, r.err.Field, r.err.Detail, want)
						}
						is.True(!strings.ContainsRune(r.raw, 0)) // the answer holds no NUL
					}
				})
			}

			// Nothing of it was stored, no job runs, and the service still
			// enriches.
			is := is.New(t)
			var schemas struct{ Schemas []struct{ ID string } }
			is.Equal(s.call("GET", "/api/schema/saved", ten.key, nil, &schemas), 200)
			is.Equal(len(schemas.Schemas), 1)
			var records struct{ Records []struct{ ID string } }
			is.Equal(s.call("GET", "/api/records", ten.key, nil, &records), 200)
			is.Equal(len(records.Records), 0)
			var users struct{ Users []struct{ Email string } }
			is.Equal(s.call("GET", "/api/users", ten.token, nil, &users), 200)
			is.Equal(len(users.Users), 1)
			is.Equal(len(s.srv.RunningJobs()), 0)
			var res struct {
				Status string `json:"status"`
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Acme \ufffd"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}}, &res), 200)
			is.Equal(res.Status, "completed")
			is.Equal(s.runningAfter(5*time.Second), 0) // its runner lets go shortly after the answer
		})
	}
}

// runningAfter waits up to d for the jobs running here to end and returns
// how many still run.
func (s *service) runningAfter(d time.Duration) int {
	for deadline := time.Now().Add(d); len(s.srv.RunningJobs()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	return len(s.srv.RunningJobs())
}

// TestEntityLayerHostileNumbers: the entity layer's routes refuse wrong
// types, too many items, huge limits and negative offsets with 400 naming
// the field.
func TestEntityLayerHostileNumbers(t *testing.T) {
	s := start(t, testConfig(""))
	ten := s.register("enthostile@example.com")
	sc := s.createSchema(ten.key, "Company", keyedSchema)
	var created struct{ Database struct{ ID string } }
	if st := s.call("POST", "/api/schemas/"+sc+"/databases", ten.key, obj{"name": "wh"}, &created); st != 201 {
		t.Fatalf("database: %d", st)
	}
	items := make([]obj, 101)
	for i := range items {
		items[i] = obj{"record_id": "r"}
	}
	db := "/api/databases/" + created.Database.ID + "/quarantine/reinject"
	for _, c := range []struct {
		method, path string
		body         any
		field        string
	}{
		{"GET", "/api/schemas/" + sc + "/entities?limit=1001", nil, "limit"},
		{"GET", "/api/schemas/" + sc + "/entities?limit=0", nil, "limit"},
		{"GET", "/api/schemas/" + sc + "/entities?limit=99999999999999999999", nil, "limit"},
		{"GET", "/api/schemas/" + sc + "/entities?limit=ten", nil, "limit"},
		{"GET", "/api/schemas/" + sc + "/entities?offset=-1", nil, "offset"},
		{"POST", "/api/records/sync-to-database", obj{"items": items}, "items"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{}}, "items"},
		{"POST", "/api/records/sync-to-database", obj{"items": "all"}, "items"},
		{"POST", "/api/records/sync-to-database", obj{}, "items"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{{"record_id": 5}}}, "items.0.record_id"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{{"structured_output": []int{1}, "saved_schema_id": sc}}}, "items.0.structured_output"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{{"structured_output": obj{"domain": "a"}}}}, "items.0.saved_schema_id"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{{}}}, "items.0.record_id"},
		{"POST", "/api/records/sync-to-database", obj{"items": []obj{{"record_id": "r", "x": 1}}}, "items.0.x"},
		{"POST", db, obj{"delta_ids": []any{-1}}, "delta_ids.0"},
		{"POST", db, obj{"delta_ids": []any{"1"}}, "delta_ids.0"},
		{"POST", db, obj{"delta_ids": 1e30}, "delta_ids"},
		{"POST", db, obj{}, "delta_ids"},
	} {
		var e apiError
		st := s.call(c.method, c.path, ten.key, c.body, &e)
		if st != 400 || e.Field != c.field {
			t.Errorf("%s %s %v: got %d field %q (%s); want 400 naming %q", c.method, c.path, c.body, st, e.Field, e.Detail, c.field)
		}
	}
}
