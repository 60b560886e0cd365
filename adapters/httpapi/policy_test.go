package httpapi

import (
	"errors"
	"strings"
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

// TestProviderReadsAreProviderInfo: SPEC.md's "provider info" is the
// operator's, so the reads of an organization's own providers are
// operators'; every change stays the owners'.
func TestProviderReadsAreProviderInfo(t *testing.T) {
	operator := &access.Principal{OrgID: "o", Role: access.Operator, Scopes: access.DefaultScopes()}
	owner := &access.Principal{OrgID: "o", Role: access.Owner, Scopes: access.DefaultScopes()}
	for _, r := range PolicyRoutes() {
		if r.Path != "/api/providers" && !strings.HasPrefix(r.Path, "/api/providers/") {
			continue
		}
		t.Run(r.Method+" "+r.Path, func(t *testing.T) {
			is := is.New(t)
			is.NoErr(authorizeRoute(owner, r.Method, r.Path))
			err := authorizeRoute(operator, r.Method, r.Path)
			if r.Method == "GET" {
				is.NoErr(err) // a read is provider info
			} else {
				is.True(errors.Is(err, access.ErrForbidden)) // a change is the owners'
			}
		})
	}
}
