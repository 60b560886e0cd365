package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// adapterText stands for what a driver or a provider says: it must never
// reach a client.
const adapterText = "postgres: dial tcp 10.0.0.7:5432: user=enrich password=hunter2 sk-live-SECRET"

// readErrorBody decodes an error answer through the generated Error (the
// document's shape) into the errorBody it was written from.
func readErrorBody(b []byte) (errorBody, error) {
	var e api.Error
	err := json.Unmarshal(b, &e)
	return errorBody{Detail: e.Detail, Code: deref(e.Code), Field: deref(e.Field), Retryable: deref(e.Retryable),
		Paths: deref(e.Paths), Classification: deref(e.Classification)}, err
}

func errorFor(t *testing.T, err error) (int, errorBody, string) {
	t.Helper()
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rec := httptest.NewRecorder()
	s.Error(rec, httptest.NewRequest("GET", "/api/records/x", nil), err)
	e, err := readErrorBody(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return rec.Code, e, rec.Header().Get("Retry-After")
}

// TestErrorTableSentinels: every port, app and domain sentinel that can
// reach a handler maps to its status and code, and answers with the table's
// fixed detail, never with the text an adapter wrapped around it.
func TestErrorTableSentinels(t *testing.T) {
	tests := []struct {
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{ports.ErrUnavailable, 503, "unavailable", "2"},
		{access.ErrUnauthenticated, 401, "unauthenticated", ""},
		{access.ErrForbidden, 403, "forbidden", ""},
		{ports.ErrNotFound, 404, "not_found", ""},
		{app.ErrNotSupported, 400, "not_supported_yet", ""},
		{page.ErrBadCursor, 400, "invalid_request", ""},
		{model.ErrInvalidKey, 400, "invalid_model", ""},
		{ports.ErrUnknownModel, 400, "invalid_model", ""},
		{schema.ErrSampleCommonality, 400, "sample_commonality_failed", ""},
		{schema.ErrSampleConformance, 400, "sample_field_conformance_failed", ""},
		{schema.ErrTooComplex, 400, "schema_too_complex", ""},
		{schema.ErrInvalid, 400, "invalid_request", ""},
		{schema.ErrContractUnsatisfied, 400, "input_contract_unsatisfied", ""},
		{schema.ErrInUse, 409, "schema_in_use", ""},
		{schema.ErrRestoreExpired, 409, "restore_window_expired", ""},
		{schema.ErrNotLinked, 409, "schema_not_linked", ""},
		{schema.ErrLinked, 409, "schema_linked", ""},
		{schema.ErrConfirmTransforms, 409, "confirm_transforms_required", ""},
		{schema.ErrKeyLanguageRequired, 409, "key_language_required", ""},
		{schema.ErrKeyLanguageLocked, 409, "key_language_locked", ""},
		{ports.ErrInvalid, 400, "invalid_request", ""},
		{errTooLarge, 413, "body_too_large", ""},
		{ports.ErrConflict, 409, "conflict", ""},
		{job.ErrTransition, 409, "conflict", ""},
		{ports.ErrCapacity, 503, "capacity", ""},
		{app.ErrClassification, 422, "classification_warning", ""},
		{app.ErrTooManyAttempts, 429, "too_many_attempts", ""},
		{app.ErrQuotaExceeded, 429, "quota_exceeded", ""},
		{app.ErrSyncTimeout, 504, "timeout", ""},
		{ports.ErrRateLimited, 429, "rate_limited", ""},
		{ports.ErrLLMTimeout, 504, "provider_timeout", ""},
		{ports.ErrContextLength, 422, "context_length_exceeded", ""},
		{ports.ErrModelRetired, 422, "model_retired", ""},
		{ports.ErrLLMUnavailable, 502, "llm_unavailable", ""},
		{ports.ErrLLMAuth, 502, "no_usable_provider_key", ""},
		{rotation.ErrNoUsableKey, 400, "no_usable_provider_key", ""},
		{context.DeadlineExceeded, 504, "timeout", ""},
		{context.Canceled, 500, "internal_error", ""}, // the request goes on: not the client's doing
		{ports.ErrFetchRefused, 400, "url_refused", ""},
		{ports.ErrFetchTooLarge, 400, "fetch_too_large", ""},
		{ports.ErrFetchFailed, 502, "fetch_failed", ""},
		{ports.ErrFetchTimeout, 504, "fetch_timeout", ""},
		{ports.ErrFenced, 500, "internal_error", ""},
		{attachment.ErrTooLarge, 413, "attachment_too_large", ""},
		{attachment.ErrDisabled, 415, "attachment_type_unsupported", ""},
		{errors.New("anything else"), 500, "internal_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			is := is.New(t)
			status, e, ra := errorFor(t, fmt.Errorf("%s: %w", adapterText, tt.err))
			is.Equal(status, tt.status)
			is.Equal(e.Code, tt.code)
			is.Equal(ra, tt.retryAfter)
			is.True(e.Detail != "")
			is.True(!strings.Contains(e.Detail, "postgres")) // the adapter's text stays out
			is.True(!strings.Contains(e.Detail, "SECRET"))
		})
	}
	// Every sentinel row of the table is exercised above.
	for _, r := range errorTable {
		if r.err == nil {
			continue
		}
		found := false
		for _, tt := range tests {
			found = found || tt.err == r.err
		}
		if !found {
			t.Errorf("row %v is not tested", r.err)
		}
	}
}

// TestErrorTableJobCodes: every failed job's code maps, with the
// reference's sync statuses, and the job's own (app-built) message.
func TestErrorTableJobCodes(t *testing.T) {
	want := map[string]int{
		"model_output_invalid": 502, "llm_unavailable": 502, "provider_timeout": 504, "rate_limited": 429,
		"context_length_exceeded": 422, "model_retired": 422, "no_usable_provider_key": 502, "schema_invalid": 422, "interrupted": 503,
		"shutdown": 503, "storage_error": 500, "internal_error": 500,
		"too_many_calls": 422, "quota_calls_per_day_exceeded": 429, "quota_tokens_per_day_exceeded": 429,
		"attachment_not_found": 400, "incoherent_attachments": 422,
	}
	for _, c := range job.Codes() {
		t.Run(string(c), func(t *testing.T) {
			is := is.New(t)
			status, e, _ := errorFor(t, &app.JobEnded{Job: &job.Job{State: job.Failed, ErrorCode: c, Error: "expertise general: " + c.Message()}})
			is.Equal(status, want[string(c)])
			is.Equal(e.Code, string(c))
			is.Equal(e.Detail, "expertise general: "+c.Message())
			quota := c == job.CodeQuotaCalls || c == job.CodeQuotaTokens
			is.Equal(e.Retryable, (status == 502 || status == 504 || status == 429) && c != job.CodeNoUsableKey && !quota)
		})
	}
	is := is.New(t)
	status, e, _ := errorFor(t, &app.JobEnded{Job: &job.Job{State: job.Cancelled, Error: "cancelled by client"}})
	is.Equal(status, 499)
	is.Equal(e.Code, "cancelled")
	is.Equal(len(want), len(job.Codes()))
}

// TestErrorQuota: an operator's quota answers 429 with its own code and
// the seconds until its window frees.
func TestErrorQuota(t *testing.T) {
	is := is.New(t)
	status, e, retry := errorFor(t, &app.Error{Kind: app.ErrQuotaExceeded, Code: "quota_tokens_per_day_exceeded",
		Detail: "daily quota used up", RetryAfter: 3600500 * time.Millisecond})
	is.Equal(status, 429)
	is.Equal(e.Code, "quota_tokens_per_day_exceeded")
	is.Equal(e.Detail, "daily quota used up")
	is.Equal(retry, "3601")
}

// TestErrorAppDetail: an app error answers with its own detail, code and
// field; a wrapped timeout of a blocking run names timeout_seconds.
func TestErrorAppDetail(t *testing.T) {
	is := is.New(t)
	status, e, _ := errorFor(t, app.Invalid("name", "bad name"))
	is.Equal(status, 400)
	is.Equal(e, errorBody{Detail: "bad name", Code: "invalid_request", Field: "name"})
	status, e, _ = errorFor(t, fmt.Errorf("%w: %w", app.ErrSyncTimeout, context.DeadlineExceeded))
	is.Equal(status, 504)
	is.Equal(e.Field, "timeout_seconds")
	status, e, _ = errorFor(t, errors.Join(fmt.Errorf("a: %w", ports.ErrConflict), fmt.Errorf("b: %w", ports.ErrUnavailable)))
	is.Equal(status, 503) // an outage wins: retrying may help
	is.Equal(e.Code, "unavailable")
}

// TestErrorClientGone: a request whose client went away (its context
// ended) and whose work stopped with context.Canceled answers 499
// cancelled, logged at info: never 500 and an error log.
func TestErrorClientGone(t *testing.T) {
	is := is.New(t)
	var logs strings.Builder
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	s.Error(rec, httptest.NewRequest("POST", "/api/schema/saved", nil).WithContext(ctx), fmt.Errorf("compile: %w", context.Canceled))
	is.Equal(rec.Code, 499)
	e, err := readErrorBody(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(e.Code, "cancelled")
	is.True(strings.Contains(logs.String(), "level=INFO"))   // logged at info
	is.True(!strings.Contains(logs.String(), "level=ERROR")) // not as a failure
}

// TestErrorSchemaLimit: schema_too_complex names the limit in the body.
func TestErrorSchemaLimit(t *testing.T) {
	is := is.New(t)
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rec := httptest.NewRecorder()
	tc := &schema.TooComplexError{Limit: schema.LimitDepth, Max: 32}
	s.Error(rec, httptest.NewRequest("POST", "/api/schema/saved", nil),
		&app.Error{Kind: schema.ErrTooComplex, Code: app.CodeSchemaTooComplex, Field: "schema", Detail: "schema: " + tc.Error(), Limit: tc})
	is.Equal(rec.Code, 400)
	var e api.Error
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &e))
	is.Equal(*e.Code, "schema_too_complex")
	is.Equal(*e.Field, "schema")
	is.Equal(e.Detail, "schema: schema nesting depth exceeds 32 (ENRICH_SCHEMA_MAX_DEPTH)")
	is.Equal(*e.Limit, api.SchemaLimit{Name: api.MaxDepth, Max: 32, Setting: "ENRICH_SCHEMA_MAX_DEPTH"})
}
