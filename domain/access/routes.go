package access

// Route names an HTTP route by method and path template.
type Route struct {
	Method string
	Path   string
}

// routes maps every route to its category of SPEC.md's minimum-role table.
// A route missing here is refused (see CategoryOf), so that a new route
// cannot be reachable without someone deciding who may call it.
var routes = map[Route]Category{
	{"GET", "/healthz"}:                    CatPublic,
	{"GET", "/readyz"}:                     CatPublic,
	{"POST", "/api/auth/register"}:         CatPublic,
	{"POST", "/api/auth/login"}:            CatPublic,
	{"POST", "/api/auth/refresh"}:          CatPublic,
	{"GET", "/api/auth/me"}:                CatAuthenticated,
	{"GET", "/api/openapi.json"}:           CatSysAdmin, // SPEC rule 5
	{"GET", "/api/docs"}:                   CatSysAdmin,
	{"GET", "/api/docs/{asset}"}:           CatSysAdmin,
	{"POST", "/api/auth/logout"}:           CatPublic, // the refresh token is the credential
	{"GET", "/api/users"}:                  CatUsers,
	{"POST", "/api/users"}:                 CatUsers,
	{"PATCH", "/api/users/{id}"}:           CatUsers,
	{"POST", "/api/auth/api-keys"}:         CatAuthenticated, // org keys need owner: checked by the key rules
	{"GET", "/api/auth/api-keys"}:          CatAPIKeys,
	{"PATCH", "/api/auth/api-keys/{id}"}:   CatAPIKeys,
	{"DELETE", "/api/auth/api-keys/{id}"}:  CatAPIKeys,
	{"GET", "/api/schema/saved"}:           CatSchemaRead,
	{"GET", "/api/schema/saved/{id}"}:      CatSchemaRead,
	{"POST", "/api/schema/saved"}:          CatSchemaWrite,
	{"GET", "/api/records"}:                CatRecords,
	{"GET", "/api/records/{id}"}:           CatRecords,
	{"GET", "/api/enrichment/options"}:     CatEnrichment,
	{"POST", "/api/single/enrich/stream"}:  CatEnrichment,
	{"POST", "/api/single/enrich/sync"}:    CatEnrichment,
	{"GET", "/api/llm/stream/{job_id}"}:    CatEnrichment,
	{"POST", "/api/llm/cancel/{job_id}"}:   CatEnrichment,
	{"POST", "/api/llm/continue/{job_id}"}: CatEnrichment,
}

// CategoryOf returns a route's category; unknown routes are sysadmin-only.
func CategoryOf(method, path string) (Category, bool) {
	c, ok := routes[Route{method, path}]
	if !ok {
		return CatSysAdmin, false
	}
	return c, true
}

// PolicyRoutes lists every route the policy knows.
func PolicyRoutes() []Route {
	out := make([]Route, 0, len(routes))
	for r := range routes {
		out = append(out, r)
	}
	return out
}
