package e2e_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestBadInput: every malformed request gets a clear 4xx naming the field,
// and nothing is lost or half-created.
func TestBadInput(t *testing.T) {
	s := start(t, testConfig(""))
	ten := s.register("bad@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	other := s.register("bad-other@example.com")
	operator := s.newKey(ten.token, "operator")
	readOnly := func() string {
		var k struct{ Key string }
		s.call("POST", "/api/auth/api-keys", ten.token, obj{"name": "ro", "role": "operator", "scopes": []string{"read"}}, &k)
		return k.Key
	}()
	enrich := func(extra obj) obj {
		b := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	tests := []struct {
		name, method, path, cred string
		body                     any
		status                   int
		code, field              string
	}{
		{"no credentials", "GET", "/api/schema/saved", "", nil, 401, "", ""},
		{"malformed key", "GET", "/api/schema/saved", "ent_nope", nil, 401, "", ""},
		{"well-formed unknown key", "GET", "/api/schema/saved", "ent_" + strings.Repeat("A", 43), nil, 401, "", ""},
		{"garbage bearer", "GET", "/api/schema/saved", "not-a-jwt", nil, 401, "", ""},
		{"operator cannot create schemas", "POST", "/api/schema/saved", operator, obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, 403, "", ""},
		{"read-only key cannot enrich", "POST", "/api/single/enrich/stream", readOnly, enrich(nil), 403, "", ""},
		{"read-only key reads", "GET", "/api/schema/saved", readOnly, nil, 200, "", ""},
		{"operator cannot list keys", "GET", "/api/auth/api-keys", operator, nil, 403, "", ""},
		{"other organization's schema", "GET", "/api/schema/saved/" + id, other.key, nil, 404, "", ""},
		{"unknown schema", "GET", "/api/schema/saved/nope", ten.key, nil, 404, "", ""},
		{"unknown record", "GET", "/api/records/nope", ten.key, nil, 404, "", ""},
		{"enrich other org's schema", "POST", "/api/single/enrich/stream", other.key, enrich(nil), 404, "", ""},
		{"invalid JSON", "POST", "/api/single/enrich/stream", ten.key, `{"entity_data":`, 400, "", ""},
		{"unknown field", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"colour": "red"}), 400, "", "colour"},
		{"entity_data wrong type", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"entity_data": "Acme"}), 400, "", "entity_data"},
		{"entity_data empty", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"entity_data": obj{}}), 400, "", "entity_data"},
		{"schema_id missing", "POST", "/api/single/enrich/stream", ten.key, obj{"entity_data": obj{"a": 1}}, 400, "", "schema_id"},
		{"unknown model", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"models": []string{"openai::nope"}}), 400, "invalid_model", ""},
		{"malformed model key", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"models": []string{"gpt-4o"}}), 400, "", ""},
		{"unknown strategy", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"strategy": "fastest"}), 400, "", "strategy"},
		{"too many models", "POST", "/api/single/enrich/stream", ten.key, enrich(obj{"models": strings.Split(strings.Repeat("sandbox::echo,", 11), ",")[:11]}), 400, "", ""},
		{"schema not JSON Schema", "POST", "/api/schema/saved", ten.key, obj{"name": "bad", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "strnig"}}}}, 400, "", "schema"},
		{"schema without properties", "POST", "/api/schema/saved", ten.key, obj{"name": "bad", "schema": obj{"type": "object"}}, 400, "", "schema"},
		{"schema name missing", "POST", "/api/schema/saved", ten.key, obj{"schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, 400, "", "name"},
		{"page_size too big", "GET", "/api/records?page_size=500", ten.key, nil, 400, "", "page_size"},
		{"bad cursor", "GET", "/api/records?cursor=zzz", ten.key, nil, 400, "", "cursor"},
		{"unknown record type", "GET", "/api/records?type=benchmark", ten.key, nil, 400, "", "type"},
		{"oversized body", "POST", "/api/schema/saved", ten.key, `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "", ""},
		{"unknown route", "GET", "/api/nope", ten.key, nil, 404, "", ""},
		{"unknown job stream", "GET", "/api/llm/stream/nope", ten.key, nil, 404, "", ""},
		{"weak password", "POST", "/api/auth/register", "", obj{"email": "w@example.com", "password": "short", "organization": "W"}, 400, "", "password"},
		{"email taken", "POST", "/api/auth/register", "", obj{"email": "bad@example.com", "password": "long enough pw", "organization": "W"}, 409, "", ""},
		{"wrong password", "POST", "/api/auth/login", "", obj{"email": "bad@example.com", "password": "wrong password"}, 401, "", ""},
		{"editor cannot mint owner key", "POST", "/api/auth/api-keys", s.newKey(ten.token, "editor"), obj{"name": "x", "role": "owner"}, 403, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var e struct{ Detail, Code, Field string }
			st := s.call(tt.method, tt.path, tt.cred, tt.body, &e)
			is.Equal(st, tt.status)
			if st >= 400 {
				is.True(e.Detail != "")
			}
			if tt.code != "" {
				is.Equal(e.Code, tt.code)
			}
			if tt.field != "" {
				is.Equal(e.Field, tt.field)
			}
		})
	}
	// Nothing was created by the rejected requests.
	var list struct {
		Schemas []any `json:"schemas"`
	}
	s.call("GET", "/api/schema/saved", ten.key, nil, &list)
	is.New(t).Equal(len(list.Schemas), 1)
}

func TestKeysAndMe(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("keys@example.com")
	var me struct {
		Kind   string   `json:"kind"`
		Role   string   `json:"role"`
		Scopes []string `json:"scopes"`
	}
	is.Equal(s.call("GET", "/api/auth/me", ten.key, nil, &me), 200)
	is.Equal(me.Kind, "api_key")
	is.Equal(me.Role, "owner")

	// A legacy user key inherits its user's role.
	legacy := s.newKey(ten.token, "")
	is.Equal(s.call("GET", "/api/auth/me", legacy, nil, &me), 200)
	is.Equal(me.Role, "owner")

	var keys struct {
		APIKeys []struct {
			ID       string  `json:"id"`
			Prefix   string  `json:"prefix"`
			Key      string  `json:"key"`
			Role     *string `json:"role"`
			UseCount int     `json:"use_count"`
			IsActive bool    `json:"is_active"`
		} `json:"api_keys"`
	}
	is.Equal(s.call("GET", "/api/auth/api-keys", ten.token, nil, &keys), 200)
	is.Equal(len(keys.APIKeys), 2)
	for _, k := range keys.APIKeys {
		is.Equal(k.Key, "") // never shown again
		is.Equal(len(k.Prefix), 12)
	}
	// Revocation takes effect on the next request and is idempotent.
	var orgKeyID string
	for _, k := range keys.APIKeys {
		if k.Role != nil {
			orgKeyID = k.ID
		}
	}
	is.Equal(s.call("DELETE", "/api/auth/api-keys/"+orgKeyID, ten.token, nil, nil), 204)
	is.Equal(s.call("GET", "/api/auth/me", ten.key, nil, nil), 401)
	is.Equal(s.call("DELETE", "/api/auth/api-keys/"+orgKeyID, ten.token, nil, nil), 204)

	// Role change in place: the same key, the new role.
	k := s.newKey(ten.token, "operator")
	is.Equal(s.call("POST", "/api/schema/saved", k, obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, nil), 403)
	s.call("GET", "/api/auth/api-keys", ten.token, nil, &keys)
	var id string
	for _, kk := range keys.APIKeys {
		if kk.Prefix == k[:12] {
			id = kk.ID
		}
	}
	is.Equal(s.call("PATCH", "/api/auth/api-keys/"+id, ten.token, obj{"role": "editor"}, nil), 200)
	is.Equal(s.call("POST", "/api/schema/saved", k, obj{"name": "x", "schema": obj{"type": "object", "properties": obj{"a": obj{"type": "string"}}}}, nil), 201)

	// Login and refresh give working sessions.
	var sess struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int    `json:"expires_in"`
	}
	is.Equal(s.call("POST", "/api/auth/login", "", obj{"email": "KEYS@example.com", "password": "correct horse battery"}, &sess), 200)
	is.Equal(sess.ExpiresIn, 900)
	is.Equal(s.call("GET", "/api/auth/me", sess.AccessToken, nil, &me), 200)
	is.Equal(me.Kind, "user")
	is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": sess.RefreshToken}, &sess), 200)
	is.Equal(s.call("GET", "/api/auth/me", sess.RefreshToken, nil, nil), 401) // a refresh token is no access token
	is.Equal(s.call("POST", "/api/auth/refresh", "", obj{"refresh_token": sess.AccessToken}, nil), 401)
}
