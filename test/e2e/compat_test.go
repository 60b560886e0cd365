package e2e_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// The compatibility suite drives every route that exists with request
// bodies in the reference product's shape (../shared/WIRE.md) and checks
// each answer against the reference's fields and JSON types. A documented
// reference field refused as an unknown field fails it.

// shape is the fields a JSON object must carry: name -> JSON type (string,
// number, boolean, object, array), with "?" when null is allowed. Every
// field listed must be present, nullable ones too (they are null when
// empty, never left out).
type shape map[string]string

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// conforms checks m against want and says where it does not.
func conforms(t *testing.T, where string, m map[string]any, want shape) {
	t.Helper()
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		typ := want[k]
		v, ok := m[k]
		if !ok {
			t.Errorf("%s: field %q is missing", where, k)
			continue
		}
		nullable := strings.HasSuffix(typ, "?")
		got := jsonType(v)
		if got == "null" && nullable {
			continue
		}
		if got != strings.TrimSuffix(typ, "?") {
			t.Errorf("%s: field %q is %s, want %s", where, k, got, typ)
		}
	}
}

// compat is a client that refuses to see a reference field called unknown.
type compat struct {
	*service
	t *testing.T
}

func (c compat) do(method, path, cred string, body any, out any) int {
	c.t.Helper()
	var raw json.RawMessage
	st := c.call(method, path, cred, body, &raw)
	var e struct{ Detail, Code, Field string }
	if st == 400 && json.Unmarshal(raw, &e) == nil && strings.Contains(e.Detail, "unknown field") {
		c.t.Fatalf("%s %s: a reference field was refused: %s (field %q)", method, path, e.Detail, e.Field)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
	return st
}

// WIRE.md's response shapes, as far as this service answers them.
var (
	wireSchemaListItem = shape{"id": "string", "name": "string", "tags": "array", "is_pinned": "boolean",
		"property_count": "number", "publish_state": "string", "created_at": "string", "updated_at": "string"}
	wireSchema = shape{"id": "string", "name": "string", "schema_content": "object", "tags": "array", "is_pinned": "boolean",
		"publish_state": "string", "created_at": "string", "updated_at": "string"}
	wireModel   = shape{"key": "string", "is_available": "boolean", "display_name": "string?", "input_price": "number?", "output_price": "number?"}
	wireDefault = shape{"key": "string", "display_name": "string?", "overall": "number?", "pinned": "boolean",
		"scenario_count": "number", "scenario_names": "array", "source": "string?"}
	wireOptions = shape{"languages": "object", "models": "array", "strategies": "array", "default_models": "object?",
		"default_models_web_search": "object?", "organization_name": "string?", "api_key_name": "string?",
		"api_key_role": "string?", "profile_limits": "object?", "total_companies": "number"}
	wireEvent = shape{"event": "string", "job_id": "string", "job_type": "string", "status": "string", "is_paused": "boolean",
		"total_models": "number", "completed_models": "number", "running_models": "array", "current_model": "string?",
		"current_attempt": "number", "max_attempts": "number", "last_error_summary": "string?", "total_entities": "number?",
		"completed_entities": "number", "failed_entities": "number", "skipped_entities": "number"}
	wireModelCompleted = shape{"model": "string", "success": "boolean", "partial_success": "boolean", "cancelled": "boolean",
		"result": "object?", "record_id": "string?", "cost_usd": "number?", "input_tokens": "number?", "output_tokens": "number?",
		"processing_time_ms": "number?", "expertise_breakdown": "array?"}
	wireModelResult = shape{"model": "string", "success": "boolean", "partial_success": "boolean", "cancelled": "boolean",
		"result": "object?", "record_id": "string?", "cost_usd": "number?", "input_tokens": "number?", "output_tokens": "number?",
		"processing_time_ms": "number?", "error_code": "string?", "error_message": "string?", "database": "object?"}
	wireSync = shape{"success": "boolean", "is_fused": "boolean", "job_id": "string", "model": "string?", "record_id": "string?",
		"result": "object?", "cost_usd": "number?", "input_tokens": "number?", "output_tokens": "number?",
		"processing_time_ms": "number?", "failed_models": "array?", "source_models": "array?", "fusion": "object?",
		"database": "object?", "per_model_results": "array?", "profile_limits": "object?"}
	wireRecordList = shape{"page": "number", "page_size": "number", "records": "array", "total": "number", "total_pages": "number"}
	wireRecord     = shape{"id": "string", "type": "string", "created_at": "string", "entity_id": "string?",
		"model_composite_key": "string", "model_name": "string", "success": "boolean", "cost_usd": "number?",
		"saved_schema_id": "string?", "job_id": "string?", "input_tokens": "number?", "output_tokens": "number?",
		"strategy": "string?", "strategy_requested": "string?", "is_deleted": "boolean", "cancelled": "boolean",
		"web_search_calls": "number?"}
	wireRecordDetail = shape{"structured_output": "object", "entity_input_data": "object?", "validation_errors": "array"}
	wireKeyCreated   = shape{"created_at": "string", "expires_at": "string?", "id": "string", "key": "string",
		"key_prefix": "string", "name": "string", "role": "string?", "scopes": "array"}
	wireKey = shape{"created_at": "string", "expires_at": "string?", "id": "string", "is_active": "boolean",
		"key_prefix": "string", "last_used_at": "string?", "name": "string", "role": "string?", "scopes": "array",
		"use_count": "number"}
	wireError = shape{"detail": "string"}
)

// referenceEnrich is the body the reference's client sends (WIRE.md §1.1).
func referenceEnrich(schemaID string, extra obj) obj {
	b := obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "models": []string{"auto"}, "strategy": "auto",
		"languages": []string{"en"}, "enable_web_search": false, "enable_response_schema": true,
		"enable_strict_structured_output": false, "database_sync": true, "classification_model": nil,
		"arbitration_model": nil, "attachment_ids": nil, "target_schema": nil}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestCompat(t *testing.T) {
	for _, b := range backends[:2] { // memory and native PostgreSQL
		t.Run(b.name, func(t *testing.T) { runCompat(t, start(t, testConfig(b.dsn(t)))) })
	}
}

func runCompat(t *testing.T, s *service) {
	c := compat{s, t}
	ten := s.register("compat@example.com")

	// Access keys (WIRE.md §9.1): expires_in_days, the key once, then the
	// listing with every nullable field present.
	var created obj
	if st := c.do("POST", "/api/auth/api-keys", ten.token, obj{"name": "n8n", "role": "operator", "scopes": []string{"read", "write"}, "expires_in_days": 30}, &created); st != 200 && st != 201 {
		t.Fatalf("create key: %d", st)
	}
	conforms(t, "POST /api/auth/api-keys", created, wireKeyCreated)
	key := created["key"].(string)
	var keys struct {
		APIKeys []obj `json:"api_keys"`
	}
	is.New(t).Equal(c.do("GET", "/api/auth/api-keys", ten.token, nil, &keys), 200)
	for _, k := range keys.APIKeys {
		conforms(t, "GET /api/auth/api-keys item", k, wireKey)
	}
	var patched obj
	is.New(t).Equal(c.do("PATCH", "/api/auth/api-keys/"+created["id"].(string), ten.token, obj{"role": "editor"}, &patched), 200)
	conforms(t, "PATCH /api/auth/api-keys/{id}", patched, wireKey)

	// Options (§3), also the reference client's credential test.
	var opts obj
	is.New(t).Equal(c.do("GET", "/api/enrichment/options", key, nil, &opts), 200)
	conforms(t, "options", opts, wireOptions)
	for _, m := range opts["models"].([]any) {
		conforms(t, "options.models[]", m.(obj), wireModel)
	}
	for _, st := range opts["strategies"].([]any) {
		conforms(t, "options.strategies[]", st.(obj), shape{"name": "string", "description": "string"})
	}
	for task, d := range opts["default_models"].(obj) {
		conforms(t, "options.default_models."+task, d.(obj), wireDefault)
	}
	is.New(t).Equal(opts["api_key_name"], "n8n")
	is.New(t).Equal(opts["api_key_role"], "editor")

	// Saved schemas (§4): created from schema_content with the reference's
	// fields, listed and read back.
	var sc obj
	body := obj{"name": "Company", "schema_content": json.RawMessage(companySchema), "tags": []string{}, "is_pinned": false,
		"ambiguity_check_enabled": true, "entity_samples": nil, "form_values": nil, "generation_params": nil}
	if st := c.do("POST", "/api/schema/saved", key, body, &sc); st != 200 && st != 201 {
		t.Fatalf("create schema: %d", st)
	}
	conforms(t, "POST /api/schema/saved", sc, wireSchema)
	id := sc["id"].(string)
	var list obj
	is.New(t).Equal(c.do("GET", "/api/schema/saved", key, nil, &list), 200)
	conforms(t, "GET /api/schema/saved", list, shape{"schemas": "array", "total": "number"})
	for _, it := range list["schemas"].([]any) {
		conforms(t, "GET /api/schema/saved item", it.(obj), wireSchemaListItem)
	}
	is.New(t).Equal(c.do("GET", "/api/schema/saved/"+id, key, nil, &sc), 200)
	conforms(t, "GET /api/schema/saved/{id}", sc, wireSchema)

	// Enrichment (§1): stream then SSE, every event with the common block.
	var started obj
	is.New(t).Equal(c.do("POST", "/api/single/enrich/stream", key, referenceEnrich(id, nil), &started), 200)
	conforms(t, "POST /api/single/enrich/stream", started, shape{"job_id": "string", "message": "string"})
	evs := s.follow(key, started["job_id"].(string), "")
	is.New(t).Equal(last(evs).Name, "completed")
	for _, e := range evs {
		conforms(t, "event "+e.Name, e.Data, wireEvent)
	}
	for _, e := range find(evs, "model_completed") {
		conforms(t, "event model_completed", e.Data, wireModelCompleted)
	}

	// The blocking variant with its sync-only fields.
	var res obj
	is.New(t).Equal(c.do("POST", "/api/single/enrich/sync", key, referenceEnrich(id, obj{"timeout_seconds": 60,
		"include_per_model_results": true, "include_profile_limits": true, "languages": []string{"en", "fr"}}), &res), 200)
	conforms(t, "POST /api/single/enrich/sync", res, wireSync)
	for _, r := range res["per_model_results"].([]any) {
		conforms(t, "sync per_model_results[]", r.(obj), wireModelResult)
	}

	// Fields whose capability is still to come: validated, then refused with
	// a code naming them; never unknown.
	for _, tt := range []struct {
		name, code, field string
		extra             obj
	}{
		{"unknown arbitration model", "invalid_model", "arbitration_model", obj{"arbitration_model": "openai::nope"}},
		{"attachment_ids", "attachment_not_found", "attachment_ids.0", obj{"attachment_ids": []string{"3f1c9a56-0000-4000-8000-000000000000"}}},
		{"target_schema", "not_supported_yet", "target_schema", obj{"target_schema": json.RawMessage(companySchema), "schema_id": nil}},
		{"unknown classification model", "invalid_model", "classification_model", obj{"classification_model": "openai::nope"}},
		{"unknown language", "invalid_language", "languages.1", obj{"languages": []string{"en", "xx"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var e obj
			is.Equal(c.do("POST", "/api/single/enrich/stream", key, referenceEnrich(id, tt.extra), &e), 400)
			conforms(t, tt.name, e, wireError)
			is.Equal(e["code"], tt.code)
			is.Equal(e["field"], tt.field)
		})
	}

	// Records (§5): the reference's filters and paging, and its detail.
	var recs obj
	is.New(t).Equal(c.do("GET", "/api/records?type=enrichment&success=true&page=1&page_size=10&limit=5", key, nil, &recs), 200)
	conforms(t, "GET /api/records", recs, wireRecordList)
	items := recs["records"].([]any)
	is.New(t).Equal(len(items), 2)
	is.New(t).Equal(recs["total"], 2.0)
	for _, r := range items {
		conforms(t, "GET /api/records item", r.(obj), wireRecord)
	}
	for _, q := range []string{"type=schema_generation", "type=playground", "success=false", "limit=1&page=3"} {
		var empty obj
		is.New(t).Equal(c.do("GET", "/api/records?"+q, key, nil, &empty), 200)
		conforms(t, "GET /api/records?"+q, empty, wireRecordList)
		is.New(t).Equal(len(empty["records"].([]any)), 0)
	}
	var rec obj
	is.New(t).Equal(c.do("GET", "/api/records/"+items[0].(obj)["id"].(string), key, nil, &rec), 200)
	conforms(t, "GET /api/records/{id}", rec, wireRecord)
	conforms(t, "GET /api/records/{id}", rec, wireRecordDetail)

	// Job control on an ended job: a clear error, in the error shape.
	for _, path := range []string{"/api/llm/cancel/", "/api/llm/continue/"} {
		var e obj
		is.New(t).Equal(c.do("POST", path+started["job_id"].(string), key, nil, &e), 409)
		conforms(t, path, e, wireError)
	}
	var gone obj
	is.New(t).Equal(c.do("DELETE", "/api/auth/api-keys/"+created["id"].(string), ten.token, nil, &gone), 204)
}

// TestMultilingual: a property flagged multilingual is answered per
// requested language ({"en": …, "fr": …}), validated against the schema so
// localized; the record keeps that shape.
func TestMultilingual(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("ml@example.com")
	id := s.createSchema(ten.key, "Product", `{"type":"object","required":["name","summary"],"properties":{
		"name":{"type":"string"},"summary":{"type":"string","multilingual":true}}}`)
	var out struct {
		Result   obj    `json:"result"`
		RecordID string `json:"record_id"`
	}
	is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Widget"}, "schema_id": id,
		"models": []string{"sandbox::echo"}, "languages": []string{"en", "fr"}}, &out), 200)
	summary, ok := out.Result["summary"].(obj)
	is.True(ok) // a language map, not a string
	is.Equal(len(summary), 2)
	is.True(summary["en"] != nil && summary["fr"] != nil)
	_, plain := out.Result["name"].(string)
	is.True(plain) // other properties stay as they are

	// Without languages, the default ["en"] applies.
	is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, obj{"entity_data": obj{"name": "Widget"}, "schema_id": id,
		"models": []string{"sandbox::echo"}}, &out), 200)
	summary, _ = out.Result["summary"].(obj)
	is.Equal(len(summary), 1)
	is.True(summary["en"] != nil)
}
