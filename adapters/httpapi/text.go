package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/text"
)

// checkText refuses a request whose path variables, query parameters or JSON
// body hold text that no store keeps as sent (domain/text: NUL, a lone
// surrogate escape, bytes that are not UTF-8): 400 invalid_request naming
// the field, before validation and before any handler, so nothing of it is
// stored and no job starts. It runs after authentication, so a caller
// without credentials learns nothing from it.
func (s *Server) checkText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := urlText(r); !ok {
			s.Error(w, r, app.Invalid(f.Path, "%s", f.Detail()))
			return
		}
		if jsonBody(r) {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
					s.fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "", "request body too large")
					return
				}
				s.fail(w, r, http.StatusBadRequest, "invalid_request", "", "request body could not be read")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(data))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
			r.ContentLength = int64(len(data))
			if f, ok := text.CheckJSON(data); !ok {
				s.Error(w, r, app.Invalid(f.Path, "%s", f.Detail()))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// urlText checks the route's path variables, then the query parameters'
// names and values, each in name order. A fault is named by the variable or
// parameter.
func urlText(r *http.Request) (text.Fault, bool) {
	vars := mux.Vars(r)
	for _, name := range sortedNames(vars) {
		if reason, ok := text.CheckString(vars[name]); !ok {
			return text.Fault{Path: name, Reason: reason}, false
		}
	}
	q := r.URL.Query()
	for _, name := range sortedNames(q) {
		if reason, ok := text.CheckString(name); !ok {
			return text.Fault{Path: text.Escape(name), Key: true, Reason: reason}, false
		}
		for _, v := range q[name] {
			if reason, ok := text.CheckString(v); !ok {
				return text.Fault{Path: name, Reason: reason}, false
			}
		}
	}
	return text.Fault{}, true
}

// jsonBody reports whether r carries a body that is JSON or says nothing of
// its type (the validator treats that as JSON). Other types are refused by
// the validator where a route takes JSON.
func jsonBody(r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return false
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
