package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// errorBody is every error response: {"detail", "code", "field"}.
type errorBody struct {
	Detail string `json:"detail"`
	Code   string `json:"code,omitempty"`
	Field  string `json:"field,omitempty"`
}

// statuses maps sentinel errors to HTTP statuses, first match wins. A row
// with a detail shows that fixed text instead of the error's (whose text
// comes from an adapter), and one with retryAfter sets Retry-After.
var statuses = []struct {
	err        error
	status     int
	code       string
	detail     string
	retryAfter int // seconds
}{
	// An outage first: whatever else went wrong, retrying may help.
	{ports.ErrUnavailable, http.StatusServiceUnavailable, "unavailable", "the service cannot reach its storage right now; try again shortly", 2},
	{access.ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated", "", 0},
	{access.ErrForbidden, http.StatusForbidden, "forbidden", "", 0},
	{ports.ErrNotFound, http.StatusNotFound, "not_found", "", 0},
	{ports.ErrInvalid, http.StatusBadRequest, "invalid_request", "", 0},
	{page.ErrBadCursor, http.StatusBadRequest, "invalid_request", "", 0},
	{ports.ErrConflict, http.StatusConflict, "conflict", "", 0},
	{job.ErrTransition, http.StatusConflict, "conflict", "", 0},
	{ports.ErrCapacity, http.StatusServiceUnavailable, "capacity", "", 0},
	{app.ErrTooManyAttempts, http.StatusTooManyRequests, "too_many_attempts", "", 0},
}

// Error writes err as a JSON error response. Unknown errors are logged with
// the request id and shown as "internal error".
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	status, body := http.StatusInternalServerError, errorBody{Detail: "internal error", Code: "internal_error"}
	for _, m := range statuses {
		if errors.Is(err, m.err) {
			status, body = m.status, errorBody{Detail: err.Error(), Code: m.code}
			if m.detail != "" {
				body.Detail = m.detail
			}
			if m.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(m.retryAfter))
			}
			break
		}
	}
	if e, ok := app.AsError(err); ok {
		body.Detail, body.Field = e.Detail, e.Field
		if e.Code != "" {
			body.Code = e.Code
		}
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
		}
	}
	if errors.Is(err, page.ErrBadCursor) {
		body.Field = "cursor"
	}
	switch {
	case status == http.StatusInternalServerError:
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
	case errors.Is(err, ports.ErrUnavailable):
		s.log.WarnContext(r.Context(), "storage unavailable", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.writeError(w, r, status, body)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, body errorBody) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="enrich"`)
	}
	writeJSON(w, status, body)
}

// fail writes an error with an explicit status and code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, field, detail string) {
	s.writeError(w, r, status, errorBody{Detail: detail, Code: code, Field: field})
}
