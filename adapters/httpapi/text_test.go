package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/mux"
	"github.com/matryer/is"
)

// TestCheckText: hostile text in a path variable, a query parameter or a
// JSON body is refused with 400 invalid_request naming the field, and the
// handler never runs; other requests pass with their body intact.
func TestCheckText(t *testing.T) {
	s := &Server{cfg: Config{MaxBodyBytes: 64}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	r := mux.NewRouter()
	r.Use(s.checkText)
	var reached string
	h := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reached = string(b)
		w.WriteHeader(http.StatusNoContent)
	}
	r.HandleFunc("/things/{id}", h)
	r.HandleFunc("/things", h)
	tests := []struct {
		name, method, target, ctype, body string
		status                            int
		field                             string
	}{
		{"clean", "POST", "/things?a=b", "application/json", `{"a":"\ud83d\ude00"}`, 204, ""},
		{"clean get", "GET", "/things/abc?page_size=5", "", "", 204, ""},
		{"NUL in path variable", "GET", "/things/a%00b", "", "", 400, "id"},
		{"invalid UTF-8 in path variable", "GET", "/things/%ff", "", "", 400, "id"},
		{"NUL in query value", "GET", "/things?schema_id=%00", "", "", 400, "schema_id"},
		{"invalid UTF-8 in query value", "GET", "/things?type=ok&type=%C3", "", "", 400, "type"},
		{"NUL in query name", "GET", "/things?a%00=1", "", "", 400, `a\u0000`},
		{"NUL escape in body", "POST", "/things", "application/json", `{"name":"\u0000"}`, 400, "name"},
		{"NUL escape in body, no content type", "POST", "/things", "", `{"x":{"\u0000":1}}`, 400, `x.\u0000`},
		{"lone surrogate in body", "POST", "/things", "application/json; charset=utf-8", `{"a":["\udc00"]}`, 400, "a.0"},
		{"raw invalid byte in body", "POST", "/things", "application/json", "{\"a\":\"\xff\"}", 400, "a"},
		{"raw NUL in body", "POST", "/things", "application/json", "{\"a\":\"\x00\"}", 400, "a"},
		{"not JSON is not scanned", "POST", "/things", "text/plain", `{"a":"\u0000"}`, 204, ""},
		{"too large", "POST", "/things", "application/json", `{"a":"` + strings.Repeat("x", 100) + `"}`, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			reached = "-"
			req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.body == "" {
				req.Body = http.NoBody
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			req.Body = http.MaxBytesReader(httptest.NewRecorder(), req.Body, s.cfg.MaxBodyBytes)
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			is.Equal(rec.Code, tt.status)
			if tt.status == 204 {
				is.Equal(reached, tt.body) // the handler reads the body as sent
				return
			}
			is.Equal(reached, "-")
			e, err := readErrorBody(rec.Body.Bytes())
			is.NoErr(err)
			is.Equal(e.Field, tt.field)
			if tt.status == 400 {
				is.Equal(e.Code, "invalid_request")
				is.True(strings.Contains(e.Detail, "not accepted in text"))
			}
		})
	}
}
