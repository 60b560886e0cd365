package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/ports"
)

// TestErrorMapping: sentinels become their status and code; an outage is
// 503 with Retry-After and a fixed detail that shows no adapter text.
func TestErrorMapping(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter string
		detail     string
	}{
		{"outage", fmt.Errorf("postgres: get record x: %w: dial tcp 127.0.0.1:5432: connect: connection refused", ports.ErrUnavailable), 503, "unavailable", "2", "the service cannot reach its storage right now; try again shortly"},
		{"outage joined with a conflict", errors.Join(fmt.Errorf("a: %w", ports.ErrConflict), fmt.Errorf("b: %w", ports.ErrUnavailable)), 503, "unavailable", "2", ""},
		{"capacity", ports.ErrCapacity, 503, "capacity", "", ""},
		{"not found", fmt.Errorf("x: %w", ports.ErrNotFound), 404, "not_found", "", ""},
		{"invalid", app.Invalid("name", "bad name"), 400, "invalid_request", "", "bad name"},
		{"unknown", errors.New("postgres: syntax error at or near"), 500, "internal_error", "", "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			rec := httptest.NewRecorder()
			s.Error(rec, httptest.NewRequest("GET", "/api/records/x", nil), tt.err)
			is.Equal(rec.Code, tt.status)
			is.Equal(rec.Header().Get("Retry-After"), tt.retryAfter)
			var e errorBody
			is.NoErr(json.Unmarshal(rec.Body.Bytes(), &e))
			is.Equal(e.Code, tt.code)
			if tt.detail != "" {
				is.Equal(e.Detail, tt.detail)
			}
			is.True(!strings.Contains(e.Detail, "postgres"))
		})
	}
}
