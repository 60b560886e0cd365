package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
)

// TestEmbeddedRefusesLikeHTTP calls the member, key, schema and record
// methods of the embedded library (the app services of enrich.NewEmbedded,
// which the server wraps) and the matching HTTP routes as each kind of
// caller. Both surfaces must give the same answer: allowed, 401 /
// access.ErrUnauthenticated, or 403 / access.ErrForbidden. An operator
// cannot add an owner, nor manage keys or members, nor write schemas,
// however it calls; an owner can do all of it.
func TestEmbeddedRefusesLikeHTTP(t *testing.T) {
	s := start(t, testConfig(""))
	ctx := context.Background()
	e := s.srv.Embedded
	home := s.register("embedded@example.com")
	schemaID := s.createSchema(home.key, "Company", companySchema)

	n := 0
	fresh := func(prefix string) string {
		n++
		return fmt.Sprintf("%s%d@example.com", prefix, n)
	}
	// newMember and newKey make a fresh target for each call, as the owner,
	// so that one call's change does not decide the next one's answer.
	newMember := func() string {
		var m struct{ ID string }
		if st := s.call("POST", "/api/users", home.token, obj{"email": fresh("target"), "password": "long enough pw", "role": "operator"}, &m); st != 201 {
			t.Fatalf("add target member: %d", st)
		}
		return m.ID
	}
	newKey := func() string {
		var k struct{ ID string }
		if st := s.call("POST", "/api/auth/api-keys", home.token, obj{"name": "target", "role": "operator"}, &k); st != 201 {
			t.Fatalf("create target key: %d", st)
		}
		return k.ID
	}
	schemaDoc := json.RawMessage(`{"type": "object", "properties": {"a": {"type": "string"}}}`)

	type op struct {
		name string
		min  string // any, operator, editor, owner
		read bool
		lib  func(p *access.Principal) error
		http func(cred string) int
	}
	ops := []op{
		{"Me", "any", true,
			func(p *access.Principal) error { _, _, err := e.Access.Me(ctx, p); return err },
			func(c string) int { return s.call("GET", "/api/auth/me", c, nil, nil) }},
		{"ListMembers", "owner", true,
			func(p *access.Principal) error { _, err := e.Access.ListMembers(ctx, p); return err },
			func(c string) int { return s.call("GET", "/api/users", c, nil, nil) }},
		{"AddMember (an owner)", "owner", false,
			func(p *access.Principal) error {
				_, err := e.Access.AddMember(ctx, p, app.NewMemberInput{Email: fresh("lib"), Password: "long enough pw", Role: access.Owner})
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/users", c, obj{"email": fresh("http"), "password": "long enough pw", "role": "owner"}, nil)
			}},
		{"UpdateMember", "owner", false,
			func(p *access.Principal) error {
				role := access.Owner
				_, err := e.Access.UpdateMember(ctx, p, newMember(), access.MemberChange{Role: &role})
				return err
			},
			func(c string) int { return s.call("PATCH", "/api/users/"+newMember(), c, obj{"role": "owner"}, nil) }},
		{"CreateKey (an organization key)", "owner", false,
			func(p *access.Principal) error {
				role := access.Operator
				_, _, err := e.Access.CreateKey(ctx, p, app.NewKeyInput{Name: "lib", Role: &role})
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/auth/api-keys", c, obj{"name": "http", "role": "operator"}, nil)
			}},
		{"ListKeys", "owner", true,
			func(p *access.Principal) error { _, err := e.Access.ListKeys(ctx, p); return err },
			func(c string) int { return s.call("GET", "/api/auth/api-keys", c, nil, nil) }},
		{"SetKeyRole", "owner", false,
			func(p *access.Principal) error {
				_, err := e.Access.SetKeyRole(ctx, p, newKey(), access.Owner)
				return err
			},
			func(c string) int {
				return s.call("PATCH", "/api/auth/api-keys/"+newKey(), c, obj{"role": "owner"}, nil)
			}},
		{"RevokeKey", "owner", false,
			func(p *access.Principal) error { return e.Access.RevokeKey(ctx, p, newKey()) },
			func(c string) int { return s.call("DELETE", "/api/auth/api-keys/"+newKey(), c, nil, nil) }},
		{"CreateSchema", "editor", false,
			func(p *access.Principal) error {
				_, err := e.Schemas.Create(ctx, p, app.NewSchemaInput{Name: "lib", Schema: schemaDoc})
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/schema/saved", c, obj{"name": "http", "schema": schemaDoc}, nil)
			}},
		{"ListSchemas", "operator", true,
			func(p *access.Principal) error { _, err := e.Schemas.List(ctx, p, page.Request{}); return err },
			func(c string) int { return s.call("GET", "/api/schema/saved", c, nil, nil) }},
		{"GetSchema", "operator", true,
			func(p *access.Principal) error { _, err := e.Schemas.Get(ctx, p, schemaID); return err },
			func(c string) int { return s.call("GET", "/api/schema/saved/"+schemaID, c, nil, nil) }},
		{"ListRecords", "operator", true,
			func(p *access.Principal) error {
				_, err := e.Records.List(ctx, p, app.RecordQuery{}, page.Request{})
				return err
			},
			func(c string) int { return s.call("GET", "/api/records", c, nil, nil) }},
		{"BatchDeleteRecords", "operator", false,
			func(p *access.Principal) error {
				_, err := e.Records.BatchDelete(ctx, p, "ids", []string{"no-such-record"}, false)
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/records/batch-delete", c, obj{"ids": []string{"no-such-record"}}, nil)
			}},
		{"GetRecordAcross (all_orgs)", "sysadmin", true,
			func(p *access.Principal) error { _, err := e.Records.GetAcross(ctx, p, "no-such-record"); return err },
			func(c string) int { return s.call("GET", "/api/records/no-such-record?all_orgs=true", c, nil, nil) }},
		{"BatchDeleteAcross (all_orgs)", "sysadmin", false,
			func(p *access.Principal) error {
				_, err := e.Records.BatchDeleteAcross(ctx, p, "ids", []string{"no-such-record"}, false)
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/records/batch-delete?all_orgs=true", c, obj{"ids": []string{"no-such-record"}}, nil)
			}},
		{"HardDeleteRecords", "owner", false,
			func(p *access.Principal) error {
				_, err := e.Records.BatchDelete(ctx, p, "ids", []string{"no-such-record"}, true)
				return err
			},
			func(c string) int {
				return s.call("POST", "/api/records/batch-delete", c, obj{"ids": []string{"no-such-record"}, "hard_delete": true}, nil)
			}},
	}

	principal := func(cred string) *access.Principal {
		p, err := e.Access.AuthenticateKey(ctx, cred)
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		return p
	}
	keyWith := func(body obj) string {
		var k struct{ Key string }
		if st := s.call("POST", "/api/auth/api-keys", home.token, body, &k); st != 201 {
			t.Fatalf("create key %v: %d", body, st)
		}
		return k.Key
	}
	ownerSession, err := e.Access.AuthenticateToken(ctx, home.token)
	if err != nil {
		t.Fatal(err)
	}
	operator := keyWith(obj{"name": "op", "role": "operator"})
	editor := keyWith(obj{"name": "ed", "role": "editor"})
	readOnly := keyWith(obj{"name": "ro", "role": "owner", "scopes": []string{"read"}})
	callers := []struct {
		name  string
		cred  string
		p     *access.Principal
		role  string
		write bool
	}{
		{"no credential", "", nil, "", false},
		{"operator key", operator, principal(operator), "operator", true},
		{"editor key", editor, principal(editor), "editor", true},
		{"read-only owner key", readOnly, principal(readOnly), "owner", false},
		{"owner key", home.key, principal(home.key), "owner", true},
		{"owner session", home.token, ownerSession, "owner", true},
	}

	for _, o := range ops {
		for _, c := range callers {
			want := "allowed"
			switch {
			case c.p == nil:
				want = "401"
			case !o.read && !c.write:
				want = "403"
			case o.min == "sysadmin", o.min != "any" && rank[c.role] < rank[o.min]:
				want = "403" // no caller here is a system administrator
			}
			lib := outcome(o.lib(c.p))
			web := status(o.http(c.cred))
			if lib != want || web != want {
				t.Errorf("%s as %s: embedded %s, HTTP %s, want %s", o.name, c.name, lib, web, want)
			}
		}
	}
}

// outcome classifies an app error the way HTTP does for authorization.
func outcome(err error) string {
	switch {
	case err == nil:
		return "allowed"
	case errors.Is(err, access.ErrUnauthenticated):
		return "401"
	case errors.Is(err, access.ErrForbidden):
		return "403"
	}
	return "error: " + err.Error()
}

func status(code int) string {
	switch {
	case code >= 200 && code < 300:
		return "allowed"
	case code == 401, code == 403:
		return fmt.Sprint(code)
	}
	return fmt.Sprintf("status %d", code)
}
