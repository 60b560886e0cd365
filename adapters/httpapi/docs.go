package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	"github.com/swaggest/swgui"
	"github.com/swaggest/swgui/v5emb"
)

// docsCookie carries a browser's credential to the documentation page's own
// requests (its assets and /api/openapi.json), which cannot set headers.
const docsCookie = "enrich_docs"

// registerDocsRoutes serves Swagger UI from assets embedded in the binary
// (no CDN). The policy makes every docs route sysadmin-only.
func (s *Server) registerDocsRoutes(r *mux.Router) {
	ui := v5emb.NewHandlerWithConfig(swgui.Config{Title: "enrich API", SwaggerJSON: "/api/openapi.json", BasePath: "/api/docs/"})
	serve := func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("token"); tok != "" {
			// Keep the credential for the page's follow-up requests.
			http.SetCookie(w, &http.Cookie{Name: docsCookie, Value: tok, Path: "/api", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
		}
		if r.URL.Path == "/api/docs" {
			r.URL.Path = "/api/docs/"
		}
		ui.ServeHTTP(w, r)
	}
	r.HandleFunc("/api/docs", serve).Methods(http.MethodGet)
	r.HandleFunc("/api/docs/{asset:.*}", serve).Methods(http.MethodGet)
}

// docsRoute reports whether a route belongs to the documentation page, where
// ?token= and the docs cookie are accepted as credentials.
func docsRoute(tmpl string) bool {
	return tmpl == "/api/docs" || strings.HasPrefix(tmpl, "/api/docs/") || tmpl == "/api/openapi.json"
}
