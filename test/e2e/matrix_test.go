package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// principal is one column of the authorization matrix.
type principal struct {
	name   string
	cred   string
	valid  bool   // the credential authenticates
	role   string // operator, editor, owner ("" when invalid)
	write  bool   // carries the write scope
	admin  bool   // system administrator
	other  bool   // belongs to another organization
	orgKey bool   // an organization access key (no user behind it)
}

// minimum is SPEC.md's minimum-role table transcribed per route,
// independently of domain/access: public, any (authenticated), operator,
// editor, owner, sysadmin.
var minimum = map[string]string{
	"GET /healthz": "public", "GET /readyz": "public", "GET /metrics": "public",
	"POST /api/auth/register": "public", "POST /api/auth/login": "public",
	"POST /api/auth/refresh": "public", "POST /api/auth/logout": "public",
	"GET /api/auth/me": "any", "POST /api/auth/api-keys": "any",
	"GET /api/auth/api-keys": "owner", "PATCH /api/auth/api-keys/{id}": "owner", "DELETE /api/auth/api-keys/{id}": "owner",
	"GET /api/users": "owner", "POST /api/users": "owner", "PATCH /api/users/{id}": "owner",
	// Invitations to register (issue 27): member management, owners.
	"GET /api/invitations": "owner", "POST /api/invitations": "owner", "DELETE /api/invitations/{id}": "owner",
	"GET /api/openapi.json": "sysadmin", "GET /api/docs": "sysadmin", "GET /api/docs/{asset}": "sysadmin",
	"GET /api/schema/saved": "operator", "GET /api/schema/saved/{id}": "operator", "POST /api/schema/saved": "editor",
	"GET /api/schema/saved/deleted": "operator", "PATCH /api/schema/saved/{id}": "editor", "DELETE /api/schema/saved/{id}": "editor",
	"DELETE /api/schema/saved/{id}/permanent": "editor", "POST /api/schema/saved/{id}/restore": "editor",
	"POST /api/schema/saved/{id}/duplicate": "editor", "POST /api/schema/saved/{id}/publish": "editor",
	"POST /api/schema/saved/{id}/publish/validate": "editor", "DELETE /api/schema/saved/{id}/enrichment-data": "owner",
	// Database registrations (issue 28): editor; deletes (a registration,
	// a link) owner.
	"GET /api/databases": "editor", "POST /api/databases": "editor",
	"GET /api/schemas/{schema_id}/databases": "editor", "POST /api/schemas/{schema_id}/databases": "editor",
	"POST /api/schemas/{schema_id}/databases/validate": "editor", "GET /api/schemas/{schema_id}/relational-map": "editor",
	"GET /api/databases/{database_id}": "editor", "PATCH /api/databases/{database_id}": "editor",
	"DELETE /api/databases/{database_id}": "owner", "GET /api/databases/{database_id}/relational-map": "editor",
	"POST /api/databases/{database_id}/schemas/{schema_id}": "editor", "DELETE /api/databases/{database_id}/schemas/{schema_id}": "owner",
	"PATCH /api/databases/{database_id}/schemas/{schema_id}":         "editor",
	"POST /api/databases/{database_id}/schemas/{schema_id}/validate": "editor",
	// Notifications (issue 28): subscriptions and links' webhooks editor;
	// the webhook secret owner.
	"GET /api/schemas/{schema_id}/subscriptions": "editor", "POST /api/schemas/{schema_id}/subscriptions": "editor",
	"DELETE /api/schemas/{schema_id}/subscriptions":                      "editor",
	"PUT /api/databases/{database_id}/schemas/{saved_schema_id}/webhook": "editor",
	"GET /api/databases/{database_id}/webhook-secret":                    "owner",
	"POST /api/schema/generate/stream":                                   "editor", "POST /api/schema/generate/sync": "editor",
	"POST /api/schema/samples/conformance":      "operator",
	"POST /api/schema/saved/{id}/prompt/stream": "editor", "POST /api/schema/saved/{id}/prompt": "editor",
	"GET /api/records": "operator", "GET /api/records/{id}": "operator",
	"GET /api/enrichment/options":    "operator",
	"POST /api/single/enrich/stream": "operator", "POST /api/single/enrich/sync": "operator",
	"GET /api/llm/stream/{job_id}": "operator", "POST /api/llm/cancel/{job_id}": "operator",
	"POST /api/llm/continue/{job_id}":         "operator",
	"POST /api/schema/sample/generate/stream": "editor", "POST /api/schema/sample/generate/sync": "editor",
	"POST /api/fusion/merge": "operator", "POST /api/fusion/merge/stream": "operator",
	"GET /api/org-keys": "owner", "POST /api/org-keys": "owner", "PATCH /api/org-keys/{key_id}": "owner",
	"DELETE /api/org-keys/{key_id}": "owner", "POST /api/org-keys/{key_id}/enable": "owner",
	"POST /api/org-keys/{key_id}/health-check": "owner",
	"GET /api/global-keys":                     "sysadmin", "POST /api/global-keys": "sysadmin", "PATCH /api/global-keys/{key_id}": "sysadmin",
	"DELETE /api/global-keys/{key_id}": "sysadmin", "POST /api/global-keys/{key_id}/enable": "sysadmin",
	"POST /api/global-keys/{key_id}/health-check": "sysadmin", "POST /api/global-keys/test-all": "sysadmin",
	"GET /api/organization/model-defaults": "operator", "PUT /api/organization/model-defaults": "owner",
	"PATCH /api/organization/model-defaults": "owner",
	"GET /api/costs/summary":                 "operator", "GET /api/costs/stats": "operator", "GET /api/costs/by-model": "operator",
	"GET /api/costs/presets/{preset}": "operator", "GET /api/costs/performance": "operator",
	"GET /api/costs/performance/presets/{preset}": "operator",
	// Analyses: analyze-sample spends and stores a record, analyze edits the
	// schema (editor); scoping-split is free and stateless (schema read).
	"POST /api/schema/analyze-sample": "editor", "POST /api/schema/saved/{id}/analyze": "editor",
	"POST /api/schema/scoping-split": "operator",
	// Records deletion (operator; a hard delete needs the owner, checked
	// in TestRecordBatchDelete) and batch fetch (enrichment).
	"POST /api/records/batch-delete": "operator", "POST /api/batch/fetch": "operator",
	// Batch enrichment (issue 11, part BC).
	"POST /api/batch/start": "operator",
	// An organization's own providers (issue 8): reads are SPEC.md's
	// "provider info" (operator, issue 27); changes are owners', like
	// provider keys.
	"GET /api/providers": "operator", "POST /api/providers": "owner", "GET /api/providers/{provider_id}": "operator",
	"PATCH /api/providers/{provider_id}": "owner", "DELETE /api/providers/{provider_id}": "owner",
	"POST /api/providers/{provider_id}/models": "owner", "POST /api/providers/{provider_id}/test-connection": "owner",
	"POST /api/providers/{provider_id}/discover-models": "owner",
	"GET /api/providers/models/{model_id}":              "operator", "PATCH /api/providers/models/{model_id}": "owner",
	"DELETE /api/providers/models/{model_id}": "owner",
	// A registration's delta feed (issue 28): reading it is an operator's,
	// acks and quarantine actions an operator's with the write scope.
	"GET /api/databases/{database_id}/changes": "operator", "POST /api/databases/{database_id}/ack": "operator",
	"POST /api/databases/{database_id}/clear-acked": "operator", "GET /api/databases/{database_id}/deltas/summary": "operator",
	"GET /api/databases/{database_id}/quarantine": "operator", "POST /api/databases/{database_id}/quarantine/report": "operator",
	"POST /api/databases/{database_id}/quarantine/delete": "operator", "POST /api/databases/{database_id}/quarantine/redrive": "operator",
	// The entity layer (issue 28): listing is an operator's read, a
	// reinject a quarantine action; feeding records through it an
	// editor's.
	"GET /api/schemas/{schema_id}/entities": "operator", "POST /api/databases/{database_id}/quarantine/reinject": "operator",
	"POST /api/records/sync-to-database": "editor",
	// Database sync (issue 28): the credential is an editor's, its
	// revocation an owner's; its exchange is public (the token is the
	// credential); snapshots and checksums are read by operators.
	"GET /api/databases/{database_id}/credential": "editor", "POST /api/databases/{database_id}/credential": "editor",
	"DELETE /api/databases/{database_id}/credential": "owner", "POST /api/database-sync/exchange": "public",
	"GET /api/databases/{database_id}/snapshot": "operator", "GET /api/databases/{database_id}/checksum": "operator",
	// Attachments (issue 29): uploads and deletes editor, reads operator;
	// the policies per media type system administrators.
	"GET /api/attachments": "operator", "POST /api/attachments": "editor", "POST /api/attachments/base64": "editor",
	"POST /api/attachments/metadata": "operator", "POST /api/attachments/verify": "operator",
	"DELETE /api/attachments/{attachment_id}": "editor", "GET /api/attachments/{attachment_id}/download": "operator",
	"GET /api/admin/attachment-policies": "sysadmin", "PATCH /api/admin/attachment-policies/{mime_type}": "sysadmin",
	// Semantic concepts (issue 30): reads operator (probe and
	// delete-impact are POSTs: the write scope), edits editor.
	"GET /api/semantic-concepts": "operator", "POST /api/semantic-concepts": "editor",
	"GET /api/semantic-concepts/types": "operator", "POST /api/semantic-concepts/probe": "operator",
	"GET /api/semantic-concepts/review": "operator", "GET /api/semantic-concepts/duplicates": "operator",
	"POST /api/semantic-concepts/delete": "editor", "POST /api/semantic-concepts/delete-impact": "operator",
	"GET /api/semantic-concepts/{concept_id}": "operator", "DELETE /api/semantic-concepts/{concept_id}": "editor",
	"GET /api/semantic-concepts/{concept_id}/neighbors":              "operator",
	"DELETE /api/semantic-concepts/{semantic_id}/aliases/{alias_id}": "editor",
	"PUT /api/semantic-concepts/{semantic_id}/canonical/{alias_id}":  "editor",
	// Semantic concepts (issue 30): a merge's impact is an operator's
	// read, the merge the owner's.
	"POST /api/semantic-concepts/merge-impact": "operator", "POST /api/semantic-concepts/merge": "owner",
	// Semantic concepts (issue 30): an import that reports is an editor's
	// (one that mints an owner's: TestConceptImportMintRoles), the export
	// an operator's.
	"POST /api/semantic-concepts/import": "editor", "GET /api/semantic-concepts/export": "operator",
	// The embedding-model migration (issue 30): status and preview
	// operator, start and cancel owner.
	"GET /api/semantic-concepts/migration/status": "operator", "POST /api/semantic-concepts/migration/preview": "operator",
	"POST /api/semantic-concepts/migration/start": "owner", "POST /api/semantic-concepts/migration/cancel": "owner",
	// The embedding-model setting (issue 30): read by operators, set by
	// owners.
	"GET /api/org-keys/embedding-model": "operator", "PUT /api/org-keys/embedding-model": "owner",
}

var rank = map[string]int{"operator": 1, "editor": 2, "owner": 4}

// TestAuthorizationMatrix calls every route as every kind of caller and
// checks the exact status of each cell.
func TestAuthorizationMatrix(t *testing.T) {
	// A provider that takes keys, for the provider-key routes.
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-matrix-valid-key"))
	cfg := testConfig("")
	cfg.Providers = []llm.ProviderConfig{{Name: "paid", Type: "openai", BaseURL: fake.URL(), Models: []string{"m"}}}
	// The organization's own provider of the matrix points at the same fake,
	// whose loopback port the test lets through the SSRF guard.
	cfg.OrgProviderAllowLoopbackPorts = []uint16{loopbackPort(t, fake.URL())}
	cfg.EmbeddingModel = "builtin::ngram-384"
	s := start(t, cfg)
	ctx := context.Background()
	home := s.register("home@example.com")
	other := s.register("other@example.com")

	// Fixtures in the home organization.
	schemaID := s.createSchema(home.key, "Company", companySchema)
	jobID := s.startJob(home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}})
	done := s.follow(home.key, jobID, "")
	recordID, _ := last(done).Data["record_id"].(string)
	altDone := s.follow(home.key, s.startJob(home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::alt"}}), "")
	altRecordID, _ := last(altDone).Data["record_id"].(string)
	var k struct{ ID string }
	s.call("POST", "/api/auth/api-keys", home.token, obj{"name": "target", "role": "operator"}, &k)
	targetKeyID := k.ID
	var invitation struct{ ID string }
	if st := s.call("POST", "/api/invitations", home.token, obj{"role": "editor"}, &invitation); st != 201 {
		t.Fatalf("invitation: %d", st)
	}
	var member struct{ ID string }
	s.call("POST", "/api/users", home.token, obj{"email": "target@example.com", "password": "long enough pw", "role": "operator"}, &member)

	newKey := func(body obj) string {
		var out struct{ Key string }
		if st := s.call("POST", "/api/auth/api-keys", home.token, body, &out); st != 201 {
			t.Fatalf("key %v: %d", body, st)
		}
		return out.Key
	}
	revoked := newKey(obj{"name": "revoked", "role": "owner"})
	var ks struct {
		APIKeys []struct{ ID, Prefix string } `json:"api_keys"`
	}
	s.call("GET", "/api/auth/api-keys", home.token, nil, &ks)
	for _, kk := range ks.APIKeys {
		if kk.Prefix == revoked[:12] {
			s.call("DELETE", "/api/auth/api-keys/"+kk.ID, home.token, nil, nil)
		}
	}
	// An expired key cannot be created through the API, so store one.
	expired, _ := access.NewKey()
	prefix, hash, _ := access.ParseKey(expired)
	past := time.Now().UTC().Add(-time.Hour)
	if err := s.srv.Stores.Keys.CreateKey(ctx, &access.APIKey{ID: "expired-key", OrgID: home.orgID, Name: "expired", Role: access.Owner,
		Scopes: access.DefaultScopes(), Prefix: prefix, Hash: hash, ExpiresAt: &past, CreatedAt: past.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	// A member's legacy key, then the member is deactivated.
	var ms struct{ ID string }
	s.call("POST", "/api/users", home.token, obj{"email": "leaver@example.com", "password": "long enough pw", "role": "editor"}, &ms)
	var leaver struct {
		AccessToken string `json:"access_token"`
	}
	s.call("POST", "/api/auth/login", "", obj{"email": "leaver@example.com", "password": "long enough pw"}, &leaver)
	var lk struct{ Key string }
	if st := s.call("POST", "/api/auth/api-keys", leaver.AccessToken, obj{"name": "legacy", "role": nil}, &lk); st != 201 {
		t.Fatalf("legacy key: %d", st)
	}
	if st := s.call("PATCH", "/api/users/"+ms.ID, home.token, obj{"status": "deactivated"}, nil); st != 200 {
		t.Fatalf("deactivate: %d", st)
	}
	// The system administrator is an operator member of the home organization.
	s.call("POST", "/api/users", home.token, obj{"email": "admin@example.com", "password": "long enough pw", "role": "operator"}, nil)
	var adm struct {
		AccessToken string `json:"access_token"`
	}
	s.call("POST", "/api/auth/login", "", obj{"email": "admin@example.com", "password": "long enough pw"}, &adm)
	providerKey := func(path, cred string) string {
		var pk struct{ ID string }
		if st := s.call("POST", path, cred, obj{"provider": "paid", "api_key": "sk-matrix-valid-key"}, &pk); st != 201 {
			t.Fatalf("provider key %s: %d", path, st)
		}
		return pk.ID
	}
	orgKeyID := providerKey("/api/org-keys", home.key)
	globalKeyID := providerKey("/api/global-keys", adm.AccessToken)

	// Schema lifecycle fixtures: one to trash and restore, one linked to
	// publish, one to purge; permanent deletes take a fresh schema per call.
	trashID := s.createSchema(home.key, "Trash me", companySchema)
	publishID := s.createSchema(home.key, "Publish me", companySchema)
	purgeID := s.createSchema(home.key, "Purge me", companySchema)
	if _, err := s.srv.Schemas.Link(ctx, &access.Principal{OrgID: home.orgID, Role: access.Owner, Scopes: access.DefaultScopes()}, publishID); err != nil {
		t.Fatal(err)
	}
	// An organization provider of the home organization, on the fake.
	providers := 0
	orgProvider := func() string {
		providers++
		var p struct{ ID string }
		if st := s.call("POST", "/api/providers", home.key, obj{"name": fmt.Sprintf("own%d", providers), "base_url": fake.URL(),
			"api_key": "sk-matrix-valid-key", "models": []obj{{"name": "m"}}}, &p); st != 201 {
			t.Fatalf("org provider: %d", st)
		}
		return p.ID
	}
	orgProviderID := orgProvider()
	// A model of that provider (one per call for the deletions).
	orgModel := func() string {
		providers++
		var m struct{ ID string }
		if st := s.call("POST", "/api/providers/"+orgProviderID+"/models", home.key, obj{"name": fmt.Sprintf("mm%d", providers)}, &m); st != 201 {
			t.Fatalf("org provider model: %d", st)
		}
		return m.ID
	}
	orgModelID := orgModel()
	// A registration of the home organization with a delivered delta.
	feedDB := "/api/databases/" + newFeedSeed(t, s, "").register(home.orgID, 100, 1, 1)
	if st := s.call("GET", feedDB+"/changes?claim=true&limit=1", home.key, nil, nil); st != 200 {
		t.Fatalf("claim: %d", st)
	}

	// Database registrations: one on dbSchemaID, and fresh ones for the
	// deletes and links.
	dbSchemaID := s.createSchema(home.key, "Warehouse", companySchema)
	newDatabase := func(schemaID string) string {
		var d struct{ Database struct{ ID string } }
		if st := s.call("POST", "/api/schemas/"+schemaID+"/databases", home.key, obj{"name": "wh"}, &d); st != 201 {
			t.Fatalf("database: %d", st)
		}
		return d.Database.ID
	}
	databaseID := newDatabase(dbSchemaID)
	// A database registration of the home organization.
	dbID := s.registration(home.orgID).ID

	// Attachments of the home organization: one to download, fresh ones
	// (bytes of their own, so no dedup) to delete.
	uploads := 0
	upload := func() string {
		uploads++
		var a struct{ ID string }
		if st := s.call("POST", "/api/attachments/base64", home.key, obj{"filename": "note.txt",
			"content_base64": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "note %d", uploads))}, &a); st != 200 {
			t.Fatalf("upload: %d", st)
		}
		return a.ID
	}
	attachmentID := upload()

	// Semantic concepts of the home organization: one to read, fresh ones
	// (texts of their own) to create, delete and edit.
	concepts := 0
	newConcept := func() (string, string) {
		concepts++
		var c struct {
			ID      string
			Aliases []struct{ ID string }
		}
		if st := s.call("POST", "/api/semantic-concepts", home.key, obj{"text": fmt.Sprintf("Concept %d", concepts), "concept_type": "matrix"}, &c); st != 201 {
			t.Fatalf("concept: %d", st)
		}
		if st := s.call("POST", "/api/semantic-concepts", home.key, obj{"text": fmt.Sprintf("Alias %d", concepts), "alias_of": c.ID}, &c); st != 201 {
			t.Fatalf("alias: %d", st)
		}
		return c.ID, c.Aliases[1].ID
	}
	conceptID, conceptAliasID := newConcept()

	// fresh gives routes that use their object up a new path for every call.
	fresh := map[string]func() string{
		"DELETE /api/attachments/{attachment_id}": func() string { return "/api/attachments/" + upload() },
		"DELETE /api/semantic-concepts/{concept_id}": func() string {
			id, _ := newConcept()
			return "/api/semantic-concepts/" + id
		},
		"DELETE /api/semantic-concepts/{semantic_id}/aliases/{alias_id}": func() string {
			id, alias := newConcept()
			return "/api/semantic-concepts/" + id + "/aliases/" + alias
		},
		"DELETE /api/databases/{database_id}": func() string { return "/api/databases/" + newDatabase(dbSchemaID) },
		"POST /api/databases/{database_id}/schemas/{schema_id}": func() string {
			return "/api/databases/" + databaseID + "/schemas/" + s.createSchema(home.key, "Linked", companySchema)
		},
		"DELETE /api/databases/{database_id}/schemas/{schema_id}": func() string {
			id, other := newDatabase(dbSchemaID), s.createSchema(home.key, "Unlinked", companySchema)
			if st := s.call("POST", "/api/databases/"+id+"/schemas/"+other, home.key, nil, nil); st != 201 {
				t.Fatalf("link: %d", st)
			}
			return "/api/databases/" + id + "/schemas/" + other
		},
		"DELETE /api/org-keys/{key_id}":           func() string { return "/api/org-keys/" + providerKey("/api/org-keys", home.key) },
		"DELETE /api/global-keys/{key_id}":        func() string { return "/api/global-keys/" + providerKey("/api/global-keys", adm.AccessToken) },
		"DELETE /api/providers/{provider_id}":     func() string { return "/api/providers/" + orgProvider() },
		"DELETE /api/providers/models/{model_id}": func() string { return "/api/providers/models/" + orgModel() },
		"DELETE /api/schema/saved/{id}/permanent": func() string {
			return "/api/schema/saved/" + s.createSchema(home.key, "Gone", companySchema) + "/permanent"
		},
	}

	principals := []principal{
		{name: "none"},
		{name: "invalid key", cred: "ent_" + strings.Repeat("x", 43)},
		{name: "revoked key", cred: revoked},
		{name: "expired key", cred: expired},
		{name: "read-only key", cred: newKey(obj{"name": "ro", "role": "owner", "scopes": []string{"read"}}), valid: true, role: "owner", orgKey: true},
		{name: "operator", cred: newKey(obj{"name": "op", "role": "operator"}), valid: true, role: "operator", write: true, orgKey: true},
		{name: "editor", cred: newKey(obj{"name": "ed", "role": "editor"}), valid: true, role: "editor", write: true, orgKey: true},
		{name: "owner", cred: home.key, valid: true, role: "owner", write: true, orgKey: true},
		{name: "sysadmin", cred: adm.AccessToken, valid: true, role: "operator", write: true, admin: true},
		{name: "other org owner", cred: other.token, valid: true, role: "owner", write: true, other: true},
		{name: "deactivated user's legacy key", cred: lk.Key},
	}

	n := 0
	// conceptPair stores two concepts of one type in the home
	// organization (a merge uses its loser up).
	conceptPair := func() any {
		n++
		ids := [2]string{}
		for i, text := range []string{"Winner", "Loser"} {
			ids[i] = fmt.Sprintf("matrix-concept-%d-%d", n, i)
			if _, err := s.srv.Stores.Concepts.CreateConcept(ctx, ports.NewConcept{ID: ids[i], OrgID: home.orgID, Type: "company",
				AliasID: ids[i] + "-a", Text: fmt.Sprintf("%s %d", text, n), Origin: concept.OriginManual, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		return obj{"winner_id": ids[0], "loser_id": ids[1]}
	}
	routes := []struct {
		method, tmpl, path string
		body               func() any
		ok                 int  // status when allowed
		owned              bool // names an object of the home organization
		public             int  // status of a public route, whoever calls
	}{
		{"GET", "/healthz", "/healthz", nil, 200, false, 200},
		{"GET", "/readyz", "/readyz", nil, 200, false, 200},
		{"GET", "/metrics", "/metrics", nil, 200, false, 200},
		{"POST", "/api/auth/register", "/api/auth/register", func() any {
			return obj{"email": "home@example.com", "password": "long enough pw", "organization": "x"}
		}, 0, false, 409},
		{"POST", "/api/auth/login", "/api/auth/login", func() any {
			n++ // a fresh account each time, so that throttling stays out of the way
			return obj{"email": fmt.Sprintf("nobody%d@example.com", n), "password": "wrong password"}
		}, 0, false, 401},
		{"POST", "/api/auth/refresh", "/api/auth/refresh", func() any { return obj{"refresh_token": "rt_nope"} }, 0, false, 401},
		{"POST", "/api/auth/logout", "/api/auth/logout", func() any { return obj{"refresh_token": "rt_nope"} }, 0, false, 401},
		{"GET", "/api/auth/me", "/api/auth/me", nil, 200, false, 0},
		{"POST", "/api/auth/api-keys", "/api/auth/api-keys", func() any { return obj{"name": "m", "role": "operator"} }, 201, false, 0},
		{"GET", "/api/auth/api-keys", "/api/auth/api-keys", nil, 200, false, 0},
		{"PATCH", "/api/auth/api-keys/{id}", "/api/auth/api-keys/" + targetKeyID, func() any { return obj{"role": "operator"} }, 200, true, 0},
		{"DELETE", "/api/auth/api-keys/{id}", "/api/auth/api-keys/" + targetKeyID, nil, 204, true, 0},
		{"GET", "/api/users", "/api/users", nil, 200, false, 0},
		{"POST", "/api/users", "/api/users", func() any {
			n++
			return obj{"email": fmt.Sprintf("m%d@example.com", n), "password": "long enough pw", "role": "operator"}
		}, 201, false, 0},
		{"PATCH", "/api/users/{id}", "/api/users/" + member.ID, func() any { return obj{"role": "editor"} }, 200, true, 0},
		{"POST", "/api/invitations", "/api/invitations", func() any { return obj{"role": "operator"} }, 201, false, 0},
		{"GET", "/api/invitations", "/api/invitations", nil, 200, false, 0},
		{"DELETE", "/api/invitations/{id}", "/api/invitations/" + invitation.ID, nil, 204, true, 0},
		{"GET", "/api/openapi.json", "/api/openapi.json", nil, 200, false, 0},
		{"GET", "/api/docs", "/api/docs", nil, 200, false, 0},
		{"GET", "/api/docs/{asset}", "/api/docs/", nil, 200, false, 0},
		{"GET", "/api/schema/saved", "/api/schema/saved", nil, 200, false, 0},
		{"GET", "/api/schema/saved/{id}", "/api/schema/saved/" + schemaID, nil, 200, true, 0},
		{"POST", "/api/schema/saved", "/api/schema/saved", func() any {
			return obj{"name": "m", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}
		}, 201, false, 0},
		{"POST", "/api/schema/generate/stream", "/api/schema/generate/stream", func() any {
			return obj{"entity_samples": []obj{{"name": "Acme"}}, "model": "sandbox::echo", "save_schema": false}
		}, 200, false, 0},
		{"POST", "/api/schema/generate/sync", "/api/schema/generate/sync", func() any {
			return obj{"entity_samples": []obj{{"name": "Acme"}}, "model": "sandbox::echo"}
		}, 200, false, 0},
		{"POST", "/api/schema/samples/conformance", "/api/schema/samples/conformance", func() any {
			return obj{"entity_samples": []obj{{"name": "Acme"}, {"name": "Globex"}}}
		}, 200, false, 0},
		{"POST", "/api/schema/saved/{id}/prompt/stream", "/api/schema/saved/" + schemaID + "/prompt/stream", func() any {
			return obj{"prompt": "add a field matrix_stream", "model": "sandbox::echo"}
		}, 200, true, 0},
		{"POST", "/api/schema/saved/{id}/prompt", "/api/schema/saved/" + schemaID + "/prompt", func() any {
			return obj{"prompt": "add a field matrix_sync", "model": "sandbox::echo"}
		}, 200, true, 0},
		{"GET", "/api/records", "/api/records", nil, 200, false, 0},
		{"GET", "/api/records/{id}", "/api/records/" + recordID, nil, 200, true, 0},
		{"GET", "/api/enrichment/options", "/api/enrichment/options", nil, 200, false, 0},
		{"POST", "/api/single/enrich/stream", "/api/single/enrich/stream", func() any {
			return obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}}
		}, 200, true, 0},
		{"POST", "/api/single/enrich/sync", "/api/single/enrich/sync", func() any {
			return obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"sandbox::echo"}}
		}, 200, true, 0},
		{"POST", "/api/batch/start", "/api/batch/start", func() any {
			return obj{"entities": []obj{{"name": "Acme"}, {"name": "Globex"}}, "schema_id": schemaID, "models": []string{"sandbox::echo"}}
		}, 200, true, 0},
		{"POST", "/api/schema/sample/generate/stream", "/api/schema/sample/generate/stream", func() any {
			return obj{"entity_type": "company", "auto_answer": true, "model": "sandbox::echo"}
		}, 200, false, 0},
		{"POST", "/api/schema/sample/generate/sync", "/api/schema/sample/generate/sync", func() any {
			return obj{"entity_type": "company", "model": "sandbox::echo"}
		}, 200, false, 0},
		{"POST", "/api/fusion/merge", "/api/fusion/merge", func() any { return obj{"result_ids": []string{recordID, altRecordID}} }, 200, true, 0},
		{"POST", "/api/fusion/merge/stream", "/api/fusion/merge/stream", func() any { return obj{"result_ids": []string{recordID, altRecordID}} }, 200, true, 0},
		{"GET", "/api/llm/stream/{job_id}", "/api/llm/stream/" + jobID, nil, 200, true, 0},
		{"POST", "/api/llm/cancel/{job_id}", "/api/llm/cancel/" + jobID, nil, 409, true, 0},     // the job is completed
		{"POST", "/api/llm/continue/{job_id}", "/api/llm/continue/" + jobID, nil, 409, true, 0}, // and not paused
		{"GET", "/api/org-keys", "/api/org-keys", nil, 200, false, 0},
		{"POST", "/api/org-keys", "/api/org-keys", func() any { return obj{"provider": "paid", "api_key": "sk-matrix-other-key"} }, 201, false, 0},
		{"PATCH", "/api/org-keys/{key_id}", "/api/org-keys/" + orgKeyID, func() any { return obj{"name": "renamed"} }, 200, true, 0},
		// Another organization's key is a 404, like every other route's objects (a fresh key per call).
		{"DELETE", "/api/org-keys/{key_id}", "", nil, 204, true, 0},
		{"POST", "/api/org-keys/{key_id}/enable", "/api/org-keys/" + orgKeyID + "/enable", nil, 200, true, 0},
		{"POST", "/api/org-keys/{key_id}/health-check", "/api/org-keys/" + orgKeyID + "/health-check", nil, 200, true, 0},
		{"GET", "/api/global-keys", "/api/global-keys", nil, 200, false, 0},
		{"POST", "/api/global-keys", "/api/global-keys", func() any { return obj{"provider": "paid", "api_key": "sk-matrix-other-key"} }, 201, false, 0},
		{"PATCH", "/api/global-keys/{key_id}", "/api/global-keys/" + globalKeyID, func() any { return obj{"name": "renamed"} }, 200, false, 0},
		{"DELETE", "/api/global-keys/{key_id}", "", nil, 204, false, 0}, // a fresh key per call (fresh)
		{"POST", "/api/global-keys/{key_id}/enable", "/api/global-keys/" + globalKeyID + "/enable", nil, 200, false, 0},
		{"POST", "/api/global-keys/{key_id}/health-check", "/api/global-keys/" + globalKeyID + "/health-check", nil, 200, false, 0},
		{"POST", "/api/global-keys/test-all", "/api/global-keys/test-all", nil, 200, false, 0},
		{"GET", "/api/organization/model-defaults", "/api/organization/model-defaults", nil, 200, false, 0},
		{"PUT", "/api/organization/model-defaults", "/api/organization/model-defaults", func() any { return obj{"enrichment": "sandbox::echo"} }, 200, false, 0},
		{"PATCH", "/api/organization/model-defaults", "/api/organization/model-defaults", func() any { return obj{"enrichment": nil} }, 200, false, 0},
		{"GET", "/api/costs/summary", "/api/costs/summary", nil, 200, false, 0},
		{"GET", "/api/costs/stats", "/api/costs/stats?group_by=week", nil, 200, false, 0},
		{"GET", "/api/costs/by-model", "/api/costs/by-model", nil, 200, false, 0},
		{"GET", "/api/costs/presets/{preset}", "/api/costs/presets/30d", nil, 200, false, 0},
		{"GET", "/api/costs/performance", "/api/costs/performance", nil, 200, false, 0},
		{"GET", "/api/costs/performance/presets/{preset}", "/api/costs/performance/presets/all", nil, 200, false, 0},
		{"POST", "/api/schema/analyze-sample", "/api/schema/analyze-sample", func() any {
			return obj{"sample_json": obj{"size": "large"}, "model": "sandbox::echo"}
		}, 200, false, 0},
		{"POST", "/api/schema/saved/{id}/analyze", "/api/schema/saved/" + schemaID + "/analyze?force=true&model=sandbox::echo", nil, 200, true, 0},
		{"POST", "/api/schema/scoping-split", "/api/schema/scoping-split", func() any {
			return obj{"path": "board", "entity_fields": []string{"name"}, "entity_name": "Person",
				"entity_samples": []obj{{"board": []obj{{"name": "Ann", "role": "chair"}}}}}
		}, 200, false, 0},
		{"GET", "/api/schema/saved/deleted", "/api/schema/saved/deleted", nil, 200, false, 0},
		{"PATCH", "/api/schema/saved/{id}", "/api/schema/saved/" + schemaID, func() any { return obj{"tags": []string{"m"}} }, 200, true, 0},
		// Deleting and restoring are idempotent: 200 for every allowed caller.
		{"DELETE", "/api/schema/saved/{id}", "/api/schema/saved/" + trashID, nil, 200, true, 0},
		{"POST", "/api/schema/saved/{id}/restore", "/api/schema/saved/" + trashID + "/restore", nil, 200, true, 0},
		{"DELETE", "/api/schema/saved/{id}/permanent", "", nil, 200, true, 0}, // a fresh schema per call (fresh)
		{"POST", "/api/schema/saved/{id}/duplicate", "/api/schema/saved/" + schemaID + "/duplicate", nil, 201, true, 0},
		{"POST", "/api/schema/saved/{id}/publish", "/api/schema/saved/" + publishID + "/publish", nil, 200, true, 0},
		{"POST", "/api/schema/saved/{id}/publish/validate", "/api/schema/saved/" + publishID + "/publish/validate", nil, 200, true, 0},
		{"DELETE", "/api/schema/saved/{id}/enrichment-data", "/api/schema/saved/" + purgeID + "/enrichment-data", nil, 200, true, 0},
		// Database registrations (deletes: owner).
		{"GET", "/api/databases", "/api/databases", nil, 200, false, 0},
		{"POST", "/api/databases", "/api/databases", func() any { return obj{"name": "m", "saved_schema_id": dbSchemaID} }, 201, true, 0},
		{"GET", "/api/schemas/{schema_id}/databases", "/api/schemas/" + dbSchemaID + "/databases", nil, 200, true, 0},
		{"POST", "/api/schemas/{schema_id}/databases", "/api/schemas/" + dbSchemaID + "/databases", func() any { return obj{"name": "m"} }, 201, true, 0},
		{"POST", "/api/schemas/{schema_id}/databases/validate", "/api/schemas/" + dbSchemaID + "/databases/validate", nil, 200, true, 0},
		{"GET", "/api/schemas/{schema_id}/relational-map", "/api/schemas/" + dbSchemaID + "/relational-map", nil, 200, true, 0},
		{"GET", "/api/databases/{database_id}", "/api/databases/" + databaseID, nil, 200, true, 0},
		{"PATCH", "/api/databases/{database_id}", "/api/databases/" + databaseID, func() any { return obj{"page_limit": 50} }, 200, true, 0},
		{"DELETE", "/api/databases/{database_id}", "", nil, 204, true, 0}, // a fresh registration per call (fresh)
		{"GET", "/api/databases/{database_id}/relational-map", "/api/databases/" + databaseID + "/relational-map", nil, 200, true, 0},
		{"POST", "/api/databases/{database_id}/schemas/{schema_id}", "", nil, 201, true, 0},   // a fresh schema per call (fresh)
		{"DELETE", "/api/databases/{database_id}/schemas/{schema_id}", "", nil, 204, true, 0}, // a fresh link per call (fresh)
		{"PATCH", "/api/databases/{database_id}/schemas/{schema_id}", "/api/databases/" + databaseID + "/schemas/" + dbSchemaID,
			func() any { return obj{"enrichment_enabled": true} }, 200, true, 0},
		{"POST", "/api/databases/{database_id}/schemas/{schema_id}/validate", "/api/databases/" + databaseID + "/schemas/" + schemaID + "/validate", nil, 200, true, 0},
		// Subscriptions to a public address literal (nothing resolves; no
		// schema of them is enriched, so nothing is sent), and the link
		// webhook detached (null), so nothing is sent either.
		{"GET", "/api/schemas/{schema_id}/subscriptions", "/api/schemas/" + dbSchemaID + "/subscriptions", nil, 200, true, 0},
		{"POST", "/api/schemas/{schema_id}/subscriptions", "/api/schemas/" + dbSchemaID + "/subscriptions",
			func() any { return obj{"url": "https://93.184.216.34/hook", "source": "n8n"} }, 201, true, 0},
		{"DELETE", "/api/schemas/{schema_id}/subscriptions", "/api/schemas/" + dbSchemaID + "/subscriptions?url=https://93.184.216.34/hook",
			nil, 204, true, 0},
		{"PUT", "/api/databases/{database_id}/schemas/{saved_schema_id}/webhook", "/api/databases/" + databaseID + "/schemas/" + dbSchemaID + "/webhook",
			func() any { return obj{"webhook_url": nil} }, 200, true, 0},
		{"GET", "/api/databases/{database_id}/webhook-secret", "/api/databases/" + databaseID + "/webhook-secret?saved_schema_id=" + dbSchemaID,
			nil, 200, true, 0},
		// Soft-deleting an unknown id is 200 (reported not found) for every
		// allowed caller.
		{"POST", "/api/records/batch-delete", "/api/records/batch-delete", func() any { return obj{"ids": []string{"no-such-record"}} }, 200, false, 0},
		// A loopback URL is refused (400) before anything is sent.
		{"POST", "/api/batch/fetch", "/api/batch/fetch", func() any { return obj{"url": "http://127.0.0.1:9/"} }, 400, false, 0},
		// An organization's own providers.
		{"GET", "/api/providers", "/api/providers", nil, 200, false, 0},
		{"POST", "/api/providers", "/api/providers", func() any {
			n++
			return obj{"name": fmt.Sprintf("matrix%d", n), "base_url": "https://llm.example.com/v1"}
		}, 201, false, 0},
		{"GET", "/api/providers/{provider_id}", "/api/providers/" + orgProviderID, nil, 200, true, 0},
		{"PATCH", "/api/providers/{provider_id}", "/api/providers/" + orgProviderID, func() any { return obj{"is_enabled": true} }, 200, true, 0},
		{"DELETE", "/api/providers/{provider_id}", "", nil, 204, true, 0}, // a fresh provider per call (fresh)
		{"POST", "/api/providers/{provider_id}/models", "/api/providers/" + orgProviderID + "/models", func() any {
			n++
			return obj{"name": fmt.Sprintf("model%d", n)}
		}, 201, true, 0},
		{"POST", "/api/providers/{provider_id}/test-connection", "/api/providers/" + orgProviderID + "/test-connection", nil, 200, true, 0},
		{"POST", "/api/providers/{provider_id}/discover-models", "/api/providers/" + orgProviderID + "/discover-models", nil, 200, true, 0},
		{"GET", "/api/providers/models/{model_id}", "/api/providers/models/" + orgModelID, nil, 200, true, 0},
		{"PATCH", "/api/providers/models/{model_id}", "/api/providers/models/" + orgModelID, func() any { return obj{"input_price": 0.25} }, 200, true, 0},
		{"DELETE", "/api/providers/models/{model_id}", "", nil, 204, true, 0}, // a fresh model per call (fresh)
		// The feed: a read, a repeated ack, a report of the delivered delta
		// (then reported again), quarantine actions on nothing.
		{"GET", "/api/databases/{database_id}/changes", feedDB + "/changes", nil, 200, true, 0},
		{"POST", "/api/databases/{database_id}/ack", feedDB + "/ack", func() any { return obj{"up_to_id": 0} }, 200, true, 0},
		{"POST", "/api/databases/{database_id}/clear-acked", feedDB + "/clear-acked", nil, 200, true, 0},
		{"GET", "/api/databases/{database_id}/deltas/summary", feedDB + "/deltas/summary", nil, 200, true, 0},
		{"GET", "/api/databases/{database_id}/quarantine", feedDB + "/quarantine", nil, 200, true, 0},
		{"POST", "/api/databases/{database_id}/quarantine/report", feedDB + "/quarantine/report", func() any {
			return obj{"delta_id": 1, "error": "refused"}
		}, 200, true, 0},
		{"POST", "/api/databases/{database_id}/quarantine/delete", feedDB + "/quarantine/delete", func() any { return obj{"delta_ids": []int{999}} }, 200, true, 0},
		{"POST", "/api/databases/{database_id}/quarantine/redrive", feedDB + "/quarantine/redrive", func() any { return obj{"delta_ids": []int{999}} }, 200, true, 0},
		{"POST", "/api/databases/{database_id}/quarantine/reinject", feedDB + "/quarantine/reinject", func() any { return obj{"delta_ids": []int{999}} }, 200, true, 0},
		{"GET", "/api/schemas/{schema_id}/entities", "/api/schemas/" + dbSchemaID + "/entities?limit=5", nil, 200, true, 0},
		// The record's schema is not linked: skipped, nothing written.
		{"POST", "/api/records/sync-to-database", "/api/records/sync-to-database", func() any { return obj{"items": []obj{{"record_id": recordID}}} }, 200, true, 0},
		{"GET", "/api/databases/{database_id}/credential", "/api/databases/" + dbID + "/credential", nil, 200, true, 0},
		{"POST", "/api/databases/{database_id}/credential", "/api/databases/" + dbID + "/credential", nil, 201, true, 0},
		// Revoking is idempotent: 204 for every allowed caller.
		{"DELETE", "/api/databases/{database_id}/credential", "/api/databases/" + dbID + "/credential", nil, 204, true, 0},
		{"POST", "/api/database-sync/exchange", "/api/database-sync/exchange", func() any { return obj{"refresh_token": "eesr_nope"} }, 0, false, 401},
		{"GET", "/api/databases/{database_id}/snapshot", "/api/databases/" + dbID + "/snapshot", nil, 200, true, 0},
		{"GET", "/api/databases/{database_id}/checksum", "/api/databases/" + dbID + "/checksum", nil, 200, true, 0},
		// Attachments. The matrix sends JSON, which the multipart upload
		// refuses (415) once the caller is allowed; the base64 upload
		// sends new bytes each time.
		{"GET", "/api/attachments", "/api/attachments?page_size=5", nil, 200, false, 0},
		{"POST", "/api/attachments", "/api/attachments", func() any { return obj{} }, 415, false, 0},
		{"POST", "/api/attachments/base64", "/api/attachments/base64", func() any {
			n++
			return obj{"filename": "m.txt", "content_base64": base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "matrix %d", n))}
		}, 200, false, 0},
		{"POST", "/api/attachments/metadata", "/api/attachments/metadata", func() any { return obj{"attachment_ids": []string{attachmentID}} }, 200, false, 0},
		{"POST", "/api/attachments/verify", "/api/attachments/verify", func() any { return obj{"attachment_ids": []string{attachmentID}} }, 200, false, 0},
		{"DELETE", "/api/attachments/{attachment_id}", "", nil, 200, true, 0}, // a fresh attachment per call (fresh)
		{"GET", "/api/attachments/{attachment_id}/download", "/api/attachments/" + attachmentID + "/download", nil, 200, true, 0},
		{"GET", "/api/admin/attachment-policies", "/api/admin/attachment-policies", nil, 200, false, 0},
		{"POST", "/api/semantic-concepts/merge-impact", "/api/semantic-concepts/merge-impact", conceptPair, 200, true, 0},
		{"POST", "/api/semantic-concepts/merge", "/api/semantic-concepts/merge", conceptPair, 200, true, 0},
		{"PATCH", "/api/admin/attachment-policies/{mime_type}", "/api/admin/attachment-policies/application%2Fpdf",
			func() any { return obj{"label": "PDF document"} }, 200, false, 0},
		{"GET", "/api/semantic-concepts", "/api/semantic-concepts?limit=5", nil, 200, false, 0},
		{"POST", "/api/semantic-concepts", "/api/semantic-concepts", func() any {
			n++
			return obj{"text": fmt.Sprintf("Matrix entity %d", n), "concept_type": fmt.Sprintf("matrix%d", n)}
		}, 201, false, 0},
		{"GET", "/api/semantic-concepts/types", "/api/semantic-concepts/types", nil, 200, false, 0},
		{"POST", "/api/semantic-concepts/probe", "/api/semantic-concepts/probe", func() any { return obj{"text": "Concept 1", "concept_type": "matrix"} }, 200, false, 0},
		{"GET", "/api/semantic-concepts/review", "/api/semantic-concepts/review", nil, 200, false, 0},
		{"GET", "/api/semantic-concepts/duplicates", "/api/semantic-concepts/duplicates", nil, 200, false, 0},
		{"POST", "/api/semantic-concepts/delete", "/api/semantic-concepts/delete", func() any { return obj{"ids": []string{"gone"}} }, 200, false, 0},
		{"POST", "/api/semantic-concepts/delete-impact", "/api/semantic-concepts/delete-impact", func() any { return obj{"ids": []string{conceptID}} }, 200, false, 0},
		{"GET", "/api/semantic-concepts/{concept_id}", "/api/semantic-concepts/" + conceptID, nil, 200, true, 0},
		{"DELETE", "/api/semantic-concepts/{concept_id}", "", nil, 200, true, 0}, // a fresh concept per call (fresh)
		{"GET", "/api/semantic-concepts/{concept_id}/neighbors", "/api/semantic-concepts/" + conceptID + "/neighbors", nil, 200, true, 0},
		{"DELETE", "/api/semantic-concepts/{semantic_id}/aliases/{alias_id}", "", nil, 204, true, 0}, // fresh
		{"PUT", "/api/semantic-concepts/{semantic_id}/canonical/{alias_id}", "/api/semantic-concepts/" + conceptID + "/canonical/" + conceptAliasID, nil, 204, true, 0},
		{"POST", "/api/semantic-concepts/import", "/api/semantic-concepts/import", func() any {
			return obj{"concept_type": "company", "texts": []string{"Acme"}}
		}, 200, false, 0},
		{"GET", "/api/semantic-concepts/export", "/api/semantic-concepts/export?concept_types=company", nil, 200, false, 0},
		// The migration. Allowed callers get past authorization to the
		// request's own refusals: the target is the model the concepts are
		// in already (400), and nothing runs to cancel (409).
		{"GET", "/api/semantic-concepts/migration/status", "/api/semantic-concepts/migration/status", nil, 200, false, 0},
		{"POST", "/api/semantic-concepts/migration/preview", "/api/semantic-concepts/migration/preview",
			func() any { return obj{"target_model": "builtin::ngram-384"} }, 400, false, 0},
		{"POST", "/api/semantic-concepts/migration/start", "/api/semantic-concepts/migration/start",
			func() any { return obj{"target_model": "builtin::ngram-384"} }, 400, false, 0},
		{"POST", "/api/semantic-concepts/migration/cancel", "/api/semantic-concepts/migration/cancel", nil, 409, false, 0},
		// The setting. Clearing is allowed whatever concepts exist; the
		// last route, so no row after it runs with semantic ids off.
		{"GET", "/api/org-keys/embedding-model", "/api/org-keys/embedding-model", nil, 200, false, 0},
		{"PUT", "/api/org-keys/embedding-model", "/api/org-keys/embedding-model",
			func() any { return obj{"embedding_model": nil} }, 200, false, 0},
	}

	// The matrix covers exactly the routes the server has.
	var covered, policy []string
	for _, r := range routes {
		covered = append(covered, r.method+" "+r.tmpl)
		if _, ok := minimum[r.method+" "+r.tmpl]; !ok {
			t.Fatalf("no expected minimum for %s %s", r.method, r.tmpl)
		}
	}
	for _, r := range httpapi.PolicyRoutes() {
		policy = append(policy, r.Method+" "+r.Path)
	}
	sort.Strings(covered)
	sort.Strings(policy)
	if fmt.Sprint(covered) != fmt.Sprint(policy) {
		t.Fatalf("matrix routes %v\n!= server routes %v", covered, policy)
	}

	cells := 0
	for _, r := range routes {
		for _, p := range principals {
			want := expect(minimum[r.method+" "+r.tmpl], r.method, p, r.ok, r.owned, r.public)
			if r.method == "POST" && r.tmpl == "/api/auth/api-keys" && p.valid && p.write && rank[p.role] < rank["owner"] && !p.admin {
				want = 403 // organization keys need the owner role (SPEC rule 2)
			}
			var body any
			if r.body != nil {
				body = r.body()
			}
			path := r.path
			if f := fresh[r.method+" "+r.tmpl]; f != nil {
				path = f()
			}
			got := s.call(r.method, path, p.cred, body, nil)
			cells++
			if got != want {
				t.Errorf("%s %s as %s: got %d, want %d", r.method, r.tmpl, p.name, got, want)
			}
		}
	}
	t.Logf("authorization matrix: %d routes x %d callers = %d cells", len(routes), len(principals), cells)
	if cells != len(routes)*len(principals) {
		t.Fatal("cells missing")
	}
}

// expect is the status a caller should get from a route by SPEC.md's rules:
// public routes ignore credentials; otherwise invalid credentials are 401,
// too low a role or a missing write scope 403, another organization's
// object 404, else the route's own status.
func expect(min, method string, p principal, ok int, owned bool, public int) int {
	if min == "public" {
		return public
	}
	if !p.valid {
		return 401
	}
	if method != "GET" && method != "HEAD" && !p.write {
		return 403
	}
	switch {
	case min == "sysadmin" && !p.admin:
		return 403
	case min != "any" && min != "sysadmin" && !p.admin && rank[p.role] < rank[min]:
		return 403
	}
	if owned && p.other {
		return 404
	}
	return ok
}
