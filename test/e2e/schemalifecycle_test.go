package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

// savedSchema is the part of a saved schema these tests read.
type savedSchema struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	Tags             []string        `json:"tags"`
	IsPinned         bool            `json:"is_pinned"`
	Linked           bool            `json:"linked"`
	PublishState     string          `json:"publish_state"`
	PropertyCount    int             `json:"property_count"`
	ContentHash      string          `json:"content_hash"`
	SchemaContent    json.RawMessage `json:"schema_content"`
	PublishedContent json.RawMessage `json:"published_content"`
	PublishedAt      *time.Time      `json:"published_at"`
	KeyLanguage      *string         `json:"key_language"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

type apiError struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Field  string `json:"field"`
}

// lifecycle drives one organization's schemas over HTTP.
type lifecycle struct {
	t   *testing.T
	s   *service
	ten tenant
}

func (l lifecycle) create(body obj) savedSchema {
	l.t.Helper()
	var out savedSchema
	if st := l.s.call("POST", "/api/schema/saved", l.ten.key, body, &out); st != 201 {
		l.t.Fatalf("create %v: %d", body["name"], st)
	}
	return out
}

func (l lifecycle) get(id string) (savedSchema, int) {
	l.t.Helper()
	var out savedSchema
	st := l.s.call("GET", "/api/schema/saved/"+id, l.ten.key, nil, &out)
	return out, st
}

// fails calls a route expecting an error status and code.
func (l lifecycle) fails(method, path, cred string, body any, status int, code string) apiError {
	l.t.Helper()
	var e apiError
	if st := l.s.call(method, path, cred, body, &e); st != status || (code != "" && e.Code != code) {
		l.t.Fatalf("%s %s: got %d %q (%s), want %d %q", method, path, st, e.Code, e.Detail, status, code)
	}
	return e
}

func (l lifecycle) ok(method, path string, body any, out any) {
	l.t.Helper()
	if st := l.s.call(method, path, l.ten.key, body, out); st != 200 && st != 201 {
		l.t.Fatalf("%s %s: %d", method, path, st)
	}
}

func (l lifecycle) list() []savedSchema {
	l.t.Helper()
	var out struct {
		Schemas []savedSchema `json:"schemas"`
		Total   int           `json:"total"`
	}
	l.ok("GET", "/api/schema/saved", nil, &out)
	if out.Total != len(out.Schemas) {
		l.t.Fatalf("total %d for %d schemas", out.Total, len(out.Schemas))
	}
	return out.Schemas
}

type trashItem struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	Restorable        bool   `json:"restorable"`
	HasLinkedDatabase bool   `json:"has_linked_database"`
}

func (l lifecycle) trash() []trashItem {
	l.t.Helper()
	var out struct {
		Schemas []trashItem `json:"schemas"`
	}
	l.ok("GET", "/api/schema/saved/deleted", nil, &out)
	return out.Schemas
}

func (l lifecycle) principal() *access.Principal {
	return &access.Principal{OrgID: l.ten.orgID, Role: access.Owner, Scopes: access.DefaultScopes()}
}

func (l lifecycle) link(id string, linked bool) {
	l.t.Helper()
	var err error
	if linked {
		_, err = l.s.srv.Schemas.Link(context.Background(), l.principal(), id)
	} else {
		_, err = l.s.srv.Schemas.Unlink(context.Background(), l.principal(), id)
	}
	if err != nil {
		l.t.Fatalf("link %s %v: %v", id, linked, err)
	}
}

// enrich runs a blocking enrichment with the sandbox and returns its result.
func (l lifecycle) enrich(id string, entity obj) map[string]any {
	l.t.Helper()
	var out struct {
		Result   map[string]any `json:"result"`
		RecordID string         `json:"record_id"`
	}
	if st := l.s.call("POST", "/api/single/enrich/sync", l.ten.key, obj{"entity_data": entity, "schema_id": id,
		"models": []string{"sandbox::echo"}, "strategy": "single_pass"}, &out); st != 200 {
		l.t.Fatalf("enrich %s: %d", id, st)
	}
	return out.Result
}

func names2(scs []savedSchema) []string {
	out := make([]string, len(scs))
	for i, sc := range scs {
		out[i] = sc.Name
	}
	return out
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string","identifying":true},"founded":{"type":"integer"}}}`

// TestSchemaLifecycle drives every lifecycle route over HTTP: create with
// tags and pin, unique names, the list order, patch, duplicate, the trash
// with restore inside and after the window, permanent delete, and the
// in-use rule with cascade.
func TestSchemaLifecycle(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig(b.dsn(t))
			const window = 1500 * time.Millisecond
			cfg.SchemaRestoreWindow = window
			s := start(t, cfg)
			l := lifecycle{t: t, s: s, ten: s.register("lifecycle@example.com")}
			editor := s.newKey(l.ten.token, "editor")
			operator := s.newKey(l.ten.token, "operator")

			// Create keeps tags and pin; a taken name gets a suffix.
			a := l.create(obj{"name": "Company", "schema": json.RawMessage(companySchema), "tags": []string{"crm", " b2b ", "crm"}, "is_pinned": true})
			is.Equal(a.Tags, []string{"crm", "b2b"})
			is.True(a.IsPinned)
			is.Equal(a.PublishState, "draft")
			is.Equal(len(a.ContentHash), 64)
			b2 := l.create(obj{"name": "Company", "schema": json.RawMessage(personSchema)})
			is.Equal(b2.Name, "Company (2)")
			c := l.create(obj{"name": "Person", "schema": json.RawMessage(personSchema)})
			l.fails("POST", "/api/schema/saved", l.ten.key, obj{"name": "x", "schema": json.RawMessage(personSchema), "tags": []string{""}}, 400, "invalid_request")

			// Pinned first, then most recently updated; an edit moves a schema up.
			is.Equal(names2(l.list()), []string{"Company", "Person", "Company (2)"})
			clockPast(b2.UpdatedAt)
			var patched savedSchema
			l.ok("PATCH", "/api/schema/saved/"+b2.ID, obj{"tags": []string{"later"}}, &patched)
			is.True(patched.UpdatedAt.After(b2.UpdatedAt)) // every change moves updated_at
			list := l.list()
			is.Equal(names2(list), []string{"Company", "Company (2)", "Person"})
			is.Equal(list[0].PropertyCount, 7)
			is.Equal(list[1].PublishState, "draft")
			// Paging by cursor follows the same order.
			var p1 struct {
				Schemas    []savedSchema `json:"schemas"`
				NextCursor *string       `json:"next_cursor"`
			}
			l.ok("GET", "/api/schema/saved?page_size=2", nil, &p1)
			is.Equal(names2(p1.Schemas), []string{"Company", "Company (2)"})
			is.True(p1.NextCursor != nil)
			var p2 struct {
				Schemas    []savedSchema `json:"schemas"`
				NextCursor *string       `json:"next_cursor"`
			}
			l.ok("GET", "/api/schema/saved?page_size=2&cursor="+url.QueryEscape(*p1.NextCursor), nil, &p2)
			is.Equal(names2(p2.Schemas), []string{"Person"})
			is.True(p2.NextCursor == nil)
			var numbered struct {
				Schemas []savedSchema `json:"schemas"`
			}
			l.ok("GET", "/api/schema/saved?page_size=2&page=2", nil, &numbered)
			is.Equal(names2(numbered.Schemas), []string{"Person"})

			// Patch: rename (uniquified), retag, unpin, edit the content; 400s name the field.
			l.ok("PATCH", "/api/schema/saved/"+c.ID, obj{"name": "Company", "is_pinned": true}, &patched)
			is.Equal(patched.Name, "Company (3)")
			is.True(patched.IsPinned)
			l.ok("PATCH", "/api/schema/saved/"+c.ID, obj{"name": "Company (3)"}, &patched)
			is.Equal(patched.Name, "Company (3)") // its own name is no clash
			edited := strings.Replace(personSchema, `"founded":{"type":"integer"}`, `"founded":{"type":"integer"},"ceo":{"type":"string"}`, 1)
			l.ok("PATCH", "/api/schema/saved/"+c.ID, obj{"schema_content": json.RawMessage(edited), "is_pinned": false, "tags": []string{}}, &patched)
			is.Equal(patched.PropertyCount, 3)
			is.True(patched.ContentHash != c.ContentHash)
			is.Equal(patched.Tags, []string{})
			for _, tc := range []struct {
				body  obj
				field string
			}{
				{obj{"name": " "}, "name"},
				{obj{"name": strings.Repeat("n", 201)}, "name"},
				{obj{"tags": []string{"ok", ""}}, "tags.1"},
				{obj{"schema": obj{"type": "object"}}, "schema"},
				{obj{"schema_content": obj{"type": "object", "properties": obj{"a": obj{"type": 7}}}}, "schema_content"},
				{obj{"key_language": "xx"}, "key_language"},
				{obj{"colour": "red"}, "colour"},
				{obj{"description": "nul\u0000"}, "description"},
			} {
				e := l.fails("PATCH", "/api/schema/saved/"+c.ID, l.ten.key, tc.body, 400, "")
				is.Equal(e.Field, tc.field)
			}
			l.fails("PATCH", "/api/schema/saved/"+c.ID, operator, obj{"name": "x"}, 403, "forbidden")

			// Duplicate: the source's name made unique, or new_name.
			var dup savedSchema
			l.ok("POST", "/api/schema/saved/"+a.ID+"/duplicate", nil, &dup)
			is.Equal(dup.Name, "Company (4)")
			is.Equal(dup.Tags, a.Tags)
			is.True(!dup.IsPinned)
			is.Equal(dup.ContentHash, a.ContentHash)
			l.ok("POST", "/api/schema/saved/"+a.ID+"/duplicate?new_name=Copy", nil, &dup)
			is.Equal(dup.Name, "Copy")

			// The trash: soft delete, restore within the window, idempotent repeats.
			var del struct {
				Deleted         bool       `json:"deleted"`
				RestorableUntil *time.Time `json:"restorable_until"`
			}
			if st := s.call("DELETE", "/api/schema/saved/"+dup.ID, editor, nil, &del); st != 200 || !del.Deleted || del.RestorableUntil == nil {
				t.Fatalf("delete: %d %+v", st, del)
			}
			_, st := l.get(dup.ID)
			is.Equal(st, 404) // a trashed schema reads as gone
			for _, sc := range l.list() {
				is.True(sc.ID != dup.ID)
			}
			is.Equal(len(l.trash()), 1)
			is.True(l.trash()[0].Restorable)
			l.fails("POST", "/api/single/enrich/sync", l.ten.key, obj{"entity_data": obj{"name": "Ada"}, "schema_id": dup.ID,
				"models": []string{"sandbox::echo"}}, 404, "not_found") // nor does enrichment find it
			l.ok("DELETE", "/api/schema/saved/"+dup.ID, nil, nil) // again: fine
			l.fails("PATCH", "/api/schema/saved/"+dup.ID, l.ten.key, obj{"name": "x"}, 404, "not_found")
			var restored savedSchema
			if st := s.call("POST", "/api/schema/saved/"+dup.ID+"/restore", editor, nil, &restored); st != 200 || restored.Name != "Copy" {
				t.Fatalf("restore: %d %+v", st, restored)
			}
			l.ok("POST", "/api/schema/saved/"+dup.ID+"/restore", nil, nil) // a live schema: nothing to do
			_, st = l.get(dup.ID)
			is.Equal(st, 200)
			is.Equal(len(l.trash()), 0)

			// After the window: a clear refusal, and the schema stays in the trash.
			l.ok("DELETE", "/api/schema/saved/"+dup.ID, nil, nil)
			l.create(obj{"name": "Copy", "schema": json.RawMessage(personSchema)}) // takes the name meanwhile
			for deadline := time.Now().Add(window + 10*time.Second); ; time.Sleep(50 * time.Millisecond) {
				if tr := l.trash(); len(tr) == 1 && !tr[0].Restorable {
					break // the window has passed
				}
				if time.Now().After(deadline) {
					t.Fatalf("the schema was still restorable 10 s after its window")
				}
			}
			e := l.fails("POST", "/api/schema/saved/"+dup.ID+"/restore", l.ten.key, nil, 409, "restore_window_expired")
			is.True(strings.Contains(e.Detail, "restorable"))
			tr := l.trash()
			is.Equal(len(tr), 1)
			is.True(!tr[0].Restorable)
			// Permanent delete empties it; a repeat is 404.
			var perm struct {
				Permanent bool `json:"permanent"`
			}
			l.ok("DELETE", "/api/schema/saved/"+dup.ID+"/permanent", nil, &perm)
			is.True(perm.Permanent)
			is.Equal(len(l.trash()), 0)
			l.fails("DELETE", "/api/schema/saved/"+dup.ID+"/permanent", l.ten.key, nil, 404, "not_found")
			l.fails("POST", "/api/schema/saved/"+dup.ID+"/restore", l.ten.key, nil, 404, "not_found")

			// A restored schema whose name was taken meanwhile gets a suffix.
			l.ok("DELETE", "/api/schema/saved/"+b2.ID, nil, nil)
			l.ok("PATCH", "/api/schema/saved/"+c.ID, obj{"name": "Company (2)"}, &patched)
			is.Equal(patched.Name, "Company (2)")
			l.ok("POST", "/api/schema/saved/"+b2.ID+"/restore", nil, &restored)
			is.Equal(restored.Name, "Company (3)") // "Company (4)" is the first duplicate

			// In use: a linked schema is refused unless cascade, which unlinks it.
			l.link(b2.ID, true)
			got, _ := l.get(b2.ID)
			is.Equal(got.PublishState, "unpublished")
			e = l.fails("DELETE", "/api/schema/saved/"+b2.ID, l.ten.key, nil, 409, "schema_in_use")
			is.True(strings.Contains(e.Detail, "cascade=true"))
			l.fails("DELETE", "/api/schema/saved/"+b2.ID+"/permanent", l.ten.key, nil, 409, "schema_in_use")
			_, st = l.get(b2.ID)
			is.Equal(st, 200) // still there
			var casc struct {
				Unlinked []string `json:"unlinked"`
			}
			l.ok("DELETE", "/api/schema/saved/"+b2.ID+"?cascade=true", nil, &casc)
			is.Equal(casc.Unlinked, []string{"a linked database"})
			is.True(!l.trash()[0].HasLinkedDatabase)
			l.ok("POST", "/api/schema/saved/"+b2.ID+"/restore", nil, &restored)
			is.True(!restored.Linked)
			l.link(b2.ID, true)
			l.ok("DELETE", "/api/schema/saved/"+b2.ID+"/permanent?cascade=true", nil, nil)
			_, st = l.get(b2.ID)
			is.Equal(st, 404)
			l.fails("DELETE", "/api/schema/saved/"+a.ID+"?cascade=maybe", l.ten.key, nil, 400, "")
		})
	}
}

// TestSchemaPublish links a schema, publishes it, edits the working copy and
// shows that enrichment follows the published contract until the next
// publish; a type change needs confirm_transforms, a multilingual key a key
// language, a draft cannot be published.
func TestSchemaPublish(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			l := lifecycle{t: t, s: s, ten: s.register("publish@example.com")}
			sc := l.create(obj{"name": "Person", "schema": json.RawMessage(personSchema)})
			var e apiError

			// A draft is not published: its edits take effect at once.
			l.fails("POST", "/api/schema/saved/"+sc.ID+"/publish", l.ten.key, nil, 409, "schema_not_linked")
			var pv struct {
				CanPublish          bool     `json:"can_publish"`
				RequiresConfirm     bool     `json:"requires_confirm"`
				RequiresKeyLanguage bool     `json:"requires_key_language"`
				PublishState        string   `json:"publish_state"`
				Errors              []string `json:"errors"`
				BlockerCodes        []string `json:"blocker_codes"`
				Diff                struct {
					Classification    string   `json:"classification"`
					AddedProperties   []string `json:"added_properties"`
					ChangedProperties []struct {
						Path string `json:"path"`
					} `json:"changed_properties"`
					Transforms []struct {
						Kind string `json:"kind"`
						Path string `json:"path"`
					} `json:"transforms"`
				} `json:"diff"`
			}
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish/validate", nil, &pv)
			is.True(!pv.CanPublish)
			is.Equal(pv.BlockerCodes, []string{"schema_not_linked"})

			// Linked, never published: the working copy is the contract.
			l.link(sc.ID, true)
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish/validate", nil, &pv)
			is.True(pv.CanPublish)
			is.Equal(pv.PublishState, "unpublished")
			is.Equal(pv.Diff.Classification, "additive")
			is.Equal(pv.Diff.AddedProperties, []string{"founded", "name"})
			var pub struct {
				Published   bool        `json:"published"`
				SavedSchema savedSchema `json:"saved_schema"`
				Diff        struct {
					Classification string `json:"classification"`
				} `json:"diff"`
			}
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish", nil, &pub) // no body: an additive publish
			is.True(pub.Published)
			is.Equal(pub.SavedSchema.PublishState, "in_sync")
			is.True(pub.SavedSchema.PublishedAt != nil)
			out := l.enrich(sc.ID, obj{"name": "Ada"})
			_, hasCEO := out["ceo"]
			is.True(!hasCEO)

			// A structural edit of the working copy: dirty, and enrichment
			// still runs on the published contract.
			withCEO := strings.Replace(personSchema, `"founded":{"type":"integer"}`, `"founded":{"type":"integer"},"ceo":{"type":"string"}`, 1)
			var patched savedSchema
			l.ok("PATCH", "/api/schema/saved/"+sc.ID, obj{"schema": json.RawMessage(withCEO)}, &patched)
			is.Equal(patched.PublishState, "dirty")
			out = l.enrich(sc.ID, obj{"name": "Ada"})
			_, hasCEO = out["ceo"]
			is.True(!hasCEO) // the published contract, not the working copy
			var stored savedSchema
			stored, _ = l.get(sc.ID)
			is.True(!strings.Contains(string(stored.PublishedContent), "ceo"))
			is.True(strings.Contains(string(stored.SchemaContent), "ceo"))
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish/validate", nil, &pv)
			is.Equal(pv.Diff.Classification, "additive")
			is.Equal(pv.Diff.AddedProperties, []string{"ceo"})
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish", obj{}, &pub)
			is.Equal(pub.SavedSchema.PublishState, "in_sync")
			out = l.enrich(sc.ID, obj{"name": "Ada"})
			_, hasCEO = out["ceo"]
			is.True(hasCEO) // now it is the contract

			// A neutral edit (a description) reaches the contract at once.
			described := strings.Replace(withCEO, `"ceo":{"type":"string"}`, `"ceo":{"type":"string","description":"chief executive"}`, 1)
			l.ok("PATCH", "/api/schema/saved/"+sc.ID, obj{"schema": json.RawMessage(described)}, &patched)
			is.Equal(patched.PublishState, "in_sync")

			// A type change needs confirm_transforms.
			retyped := strings.Replace(described, `"founded":{"type":"integer"}`, `"founded":{"type":"string"}`, 1)
			l.ok("PATCH", "/api/schema/saved/"+sc.ID, obj{"schema": json.RawMessage(retyped)}, &patched)
			is.Equal(patched.PublishState, "dirty")
			out = l.enrich(sc.ID, obj{"name": "Ada"})
			_, isNumber := out["founded"].(float64)
			is.True(isNumber) // still the published integer
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish/validate", nil, &pv)
			is.True(pv.RequiresConfirm)
			is.Equal(pv.Diff.Classification, "transform")
			is.Equal(len(pv.Diff.Transforms), 1)
			is.Equal(pv.Diff.Transforms[0].Kind, "column_type")
			is.Equal(pv.Diff.Transforms[0].Path, "founded")
			is.Equal(pv.BlockerCodes, []string{"confirm_transforms_required"})
			e = l.fails("POST", "/api/schema/saved/"+sc.ID+"/publish", l.ten.key, obj{"confirm_transforms": false}, 409, "confirm_transforms_required")
			is.True(strings.Contains(e.Detail, "founded"))
			stored, _ = l.get(sc.ID)
			is.Equal(stored.PublishState, "dirty") // nothing published
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish", obj{"confirm_transforms": true}, &pub)
			is.Equal(pub.Diff.Classification, "transform")
			out = l.enrich(sc.ID, obj{"name": "Ada"})
			_, isString := out["founded"].(string)
			is.True(isString)

			// A re-key (identifying properties change) needs it too.
			rekeyed := strings.Replace(retyped, `"founded":{"type":"string"}`, `"founded":{"type":"string","identifying":true}`, 1)
			l.ok("PATCH", "/api/schema/saved/"+sc.ID, obj{"schema": json.RawMessage(rekeyed)}, &patched)
			l.fails("POST", "/api/schema/saved/"+sc.ID+"/publish", l.ten.key, nil, 409, "confirm_transforms_required")
			l.ok("POST", "/api/schema/saved/"+sc.ID+"/publish", obj{"confirm_transforms": true}, &pub)

			// A multilingual database key needs a key language, once.
			ml := l.create(obj{"name": "Place", "schema": json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","identifying":true,"multilingual":true}}}`)})
			l.link(ml.ID, true)
			l.ok("POST", "/api/schema/saved/"+ml.ID+"/publish/validate", nil, &pv)
			is.True(pv.RequiresKeyLanguage)
			is.Equal(pv.BlockerCodes, []string{"key_language_required"})
			l.fails("POST", "/api/schema/saved/"+ml.ID+"/publish", l.ten.key, nil, 409, "key_language_required")
			e = l.fails("POST", "/api/schema/saved/"+ml.ID+"/publish", l.ten.key, obj{"key_language": "zz"}, 400, "invalid_language")
			is.Equal(e.Field, "key_language")
			l.ok("POST", "/api/schema/saved/"+ml.ID+"/publish", obj{"key_language": "fr"}, &pub)
			is.Equal(*pub.SavedSchema.KeyLanguage, "fr")
			l.fails("POST", "/api/schema/saved/"+ml.ID+"/publish", l.ten.key, obj{"key_language": "de"}, 409, "key_language_locked")
			l.ok("POST", "/api/schema/saved/"+ml.ID+"/publish", nil, &pub) // locked: no language needed
			operator := s.newKey(l.ten.token, "operator")
			l.fails("POST", "/api/schema/saved/"+ml.ID+"/publish", operator, nil, 403, "forbidden")
		})
	}
}

// TestSchemaPurge removes exactly one schema's records, keeps the schema,
// refuses while linked, and is the owner's alone.
func TestSchemaPurge(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			l := lifecycle{t: t, s: s, ten: s.register("purge@example.com")}
			a := l.create(obj{"name": "A", "schema": json.RawMessage(personSchema)})
			b2 := l.create(obj{"name": "B", "schema": json.RawMessage(personSchema)})
			l.enrich(a.ID, obj{"name": "Ada"})
			l.enrich(a.ID, obj{"name": "Grace"})
			l.enrich(b2.ID, obj{"name": "Alan"})
			count := func(id string) int {
				var out struct {
					Total int `json:"total"`
				}
				l.ok("GET", "/api/records?schema_id="+id, nil, &out)
				return out.Total
			}
			is.Equal(count(a.ID), 2)

			editor := s.newKey(l.ten.token, "editor")
			l.fails("DELETE", "/api/schema/saved/"+a.ID+"/enrichment-data", editor, nil, 403, "forbidden")
			var purged struct {
				RecordsDeleted  *int `json:"records_deleted"`
				EntitiesDeleted *int `json:"entities_deleted"`
			}
			l.ok("DELETE", "/api/schema/saved/"+a.ID+"/enrichment-data", nil, &purged)
			is.Equal(*purged.RecordsDeleted, 2)
			is.Equal(*purged.EntitiesDeleted, 0)
			is.Equal(count(a.ID), 0)
			is.Equal(count(b2.ID), 1) // another schema's records stay
			_, st := l.get(a.ID)
			is.Equal(st, 200) // the schema stays
			l.ok("DELETE", "/api/schema/saved/"+a.ID+"/enrichment-data", nil, &purged)
			is.Equal(*purged.RecordsDeleted, 0) // again: nothing left

			l.link(b2.ID, true)
			l.fails("DELETE", "/api/schema/saved/"+b2.ID+"/enrichment-data", l.ten.key, nil, 409, "schema_linked")
			is.Equal(count(b2.ID), 1)
			l.link(b2.ID, false)
			l.ok("DELETE", "/api/schema/saved/"+b2.ID+"/enrichment-data", nil, &purged)
			is.Equal(*purged.RecordsDeleted, 1)
		})
	}
}

// TestSchemaLifecycleOtherOrganization: every lifecycle route answers 404
// for another organization's schema, and changes nothing.
func TestSchemaLifecycleOtherOrganization(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			l := lifecycle{t: t, s: s, ten: s.register("home@example.com")}
			other := s.register("other@example.com")
			sc := l.create(obj{"name": "Mine", "schema": json.RawMessage(personSchema)})
			trashed := l.create(obj{"name": "Trashed", "schema": json.RawMessage(personSchema)})
			l.ok("DELETE", "/api/schema/saved/"+trashed.ID, nil, nil)
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/api/schema/saved/%s", nil},
				{"PATCH", "/api/schema/saved/%s", obj{"name": "theirs"}},
				{"DELETE", "/api/schema/saved/%s", nil},
				{"DELETE", "/api/schema/saved/%s?cascade=true", nil},
				{"DELETE", "/api/schema/saved/%s/permanent", nil},
				{"POST", "/api/schema/saved/%s/restore", nil},
				{"POST", "/api/schema/saved/%s/duplicate", nil},
				{"POST", "/api/schema/saved/%s/publish", obj{"confirm_transforms": true}},
				{"POST", "/api/schema/saved/%s/publish/validate", nil},
				{"DELETE", "/api/schema/saved/%s/enrichment-data", nil},
			} {
				for _, id := range []string{sc.ID, trashed.ID} {
					path := fmt.Sprintf(r.path, id)
					l.fails(r.method, path, other.key, r.body, 404, "not_found")
				}
			}
			var tr struct {
				Schemas []trashItem `json:"schemas"`
			}
			if st := s.call("GET", "/api/schema/saved/deleted", other.key, nil, &tr); st != 200 || len(tr.Schemas) != 0 {
				t.Fatalf("other's trash: %d %v", st, tr.Schemas)
			}
			got, st := l.get(sc.ID)
			is.Equal(st, 200)
			is.Equal(got.Name, "Mine")
			is.Equal(len(l.trash()), 1)
		})
	}
}
