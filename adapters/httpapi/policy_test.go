package httpapi

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/access"
)

// TestEveryRouteHasAnAction: every route performs a known action whose
// scope is its method's (reads read, the rest write), so that the early
// refusal of the middleware and the use case's own check agree.
func TestEveryRouteHasAnAction(t *testing.T) {
	for _, r := range PolicyRoutes() {
		a, ok := actionOf(r.Method, r.Path)
		if !ok || !a.Valid() {
			t.Errorf("%s %s: action %q is not known", r.Method, r.Path, a)
			continue
		}
		if a.Scope() != scopeOf(r.Method) {
			t.Errorf("%s %s: action %s needs %s, the method %s", r.Method, r.Path, a, a.Scope(), scopeOf(r.Method))
		}
	}
}

func TestUnknownRouteIsForSysAdmins(t *testing.T) {
	is := is.New(t)
	_, ok := actionOf("GET", "/api/unknown")
	is.True(!ok)
	is.True(!public("GET", "/api/unknown"))
	owner := &access.Principal{OrgID: "o", Role: access.Owner, Scopes: access.DefaultScopes()}
	admin := &access.Principal{OrgID: "o", Role: access.Operator, Scopes: access.DefaultScopes(), SysAdmin: true}
	is.True(errors.Is(authorizeRoute(owner, "GET", "/api/unknown"), access.ErrForbidden))
	is.NoErr(authorizeRoute(admin, "GET", "/api/unknown"))
	is.True(errors.Is(authorizeRoute(nil, "GET", "/api/unknown"), access.ErrUnauthenticated))
	is.True(public("POST", "/api/auth/login"))
	is.NoErr(authorizeRoute(nil, "POST", "/api/auth/login"))
}
