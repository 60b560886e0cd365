package httpapi_test

import (
	"io"
	"log/slog"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/jobcodec"
)

// TestRouterMatchesOpenAPI: the router serves exactly the operations the
// OpenAPI document describes, so the two cannot drift.
func TestRouterMatchesOpenAPI(t *testing.T) {
	is := is.New(t)
	s, err := httpapi.NewServer(httpapi.Config{}, httpapi.Services{}, jobcodec.Events{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	is.NoErr(err)
	var served []httpapi.SpecRoute
	err = s.Router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return err
		}
		for _, m := range methods {
			served = append(served, httpapi.SpecRoute{Method: m, Path: plain(path)})
		}
		return nil
	})
	is.NoErr(err)
	doc, err := httpapi.LoadSpec()
	is.NoErr(err)
	documented := httpapi.SpecRoutes(doc)
	key := func(rs []httpapi.SpecRoute) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Method + " " + r.Path
		}
		sort.Strings(out)
		return out
	}
	is.Equal(key(served), key(documented))
}

// plain drops mux's variable patterns: {asset:.*} -> {asset}.
func plain(t string) string {
	for {
		i, j := strings.Index(t, ":"), strings.Index(t, "}")
		if i < 0 || j < i {
			return t
		}
		t = t[:i] + t[j:]
	}
}
