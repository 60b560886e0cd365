package httpapi

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

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

// errorBody gathers an error response; it is written as the document's
// Error ({"detail", "code", "field"}, plus "retryable" where the reference
// product sets it), empty members left out.
type errorBody struct {
	Detail    string
	Code      string
	Field     string
	Retryable bool
	// Paths are the offending paths of the request's data
	// (input_contract_unsatisfied).
	Paths []string
	// Classification is the pre-flight classification that refused a
	// blocking run (the reference's ClassificationContext).
	Classification map[string]any
	// Limit is the schema limit passed (schema_too_complex).
	Limit *schema.TooComplexError
}

// wire is the generated Error: an empty member is absent.
func (b errorBody) wire() api.Error {
	out := api.Error{Detail: b.Detail, Code: nilIfEmpty(b.Code), Field: nilIfEmpty(b.Field)}
	if b.Retryable {
		out.Retryable = &b.Retryable
	}
	if len(b.Paths) > 0 {
		out.Paths = &b.Paths
	}
	if len(b.Classification) > 0 {
		out.Classification = &b.Classification
	}
	if b.Limit != nil {
		out.Limit = &api.SchemaLimit{Name: api.SchemaLimitName(b.Limit.Limit), Max: b.Limit.Max, Setting: b.Limit.Limit.Setting()}
	}
	return out
}

// statusClientClosed is the reference product's answer to a blocking run
// whose job was cancelled.
const statusClientClosed = 499

// errorRule is one row of the error table: a sentinel (matched with
// errors.Is) or a failed job's code, the status and code it answers with,
// and a fixed public detail.
type errorRule struct {
	err        error  // a sentinel; or nil for a job code's row
	job        string // a failed job's error code, or app.CodeCancelled
	status     int
	code       string // the wire code (a job row answers with the job's code)
	detail     string
	retryAfter int // seconds
	retryable  bool
}

// errorTable is the one table from errors to HTTP answers, first match wins.
// A bare sentinel answers with the row's fixed detail, never with the
// error's text (which may come from an adapter: a driver, a provider). An
// *app.Error answers with its Detail, which the app composes for clients,
// and its Code when set. A blocking run's failed job answers with its
// code's row and the job's message, which the app builds from fixed texts
// (job.ErrorCode.Message) and the validator's account of a model's output.
var errorTable = []errorRule{
	// An outage first: whatever else went wrong, retrying may help.
	{err: ports.ErrUnavailable, status: http.StatusServiceUnavailable, code: "unavailable", detail: "the service cannot reach its storage right now; try again shortly", retryAfter: 2},
	{err: access.ErrUnauthenticated, status: http.StatusUnauthorized, code: "unauthenticated", detail: "missing or invalid credentials"},
	{err: access.ErrForbidden, status: http.StatusForbidden, code: "forbidden", detail: "the credential's role or scopes do not allow this"},
	{err: ports.ErrNotFound, status: http.StatusNotFound, code: "not_found", detail: "not found"},
	{err: app.ErrNotSupported, status: http.StatusBadRequest, code: "not_supported_yet", detail: "a requested capability is not supported yet"},
	{err: page.ErrBadCursor, status: http.StatusBadRequest, code: "invalid_request", detail: "cursor is not one this server issued"},
	{err: model.ErrInvalidKey, status: http.StatusBadRequest, code: "invalid_model", detail: "a model key is not <provider>::<model>"},
	{err: ports.ErrUnknownModel, status: http.StatusBadRequest, code: "invalid_model", detail: "unknown model; GET /api/enrichment/options lists them"},
	{err: schema.ErrSampleCommonality, status: http.StatusBadRequest, code: "sample_commonality_failed", detail: "the samples do not describe one entity type"},
	{err: schema.ErrSampleConformance, status: http.StatusBadRequest, code: "sample_field_conformance_failed", detail: "array items of the samples share no field"},
	{err: schema.ErrTooComplex, status: http.StatusBadRequest, code: app.CodeSchemaTooComplex, detail: "the schema is past a schema limit"},
	{err: schema.ErrInvalid, status: http.StatusBadRequest, code: "invalid_request", detail: "the schema is invalid"},
	{err: schema.ErrContractUnsatisfied, status: http.StatusBadRequest, code: app.CodeInputContract, detail: "entity_data does not satisfy the schema's input contract"},
	// An upload's refusals by size and by media type (the app's error
	// names the file and says which limit or type).
	{err: attachment.ErrTooLarge, status: http.StatusRequestEntityTooLarge, code: app.CodeAttachmentTooLarge, detail: "the file is larger than the limit"},
	{err: attachment.ErrDisabled, status: http.StatusUnsupportedMediaType, code: app.CodeTypeUnsupported, detail: "this type of file is not accepted"},
	{err: ports.ErrInvalid, status: http.StatusBadRequest, code: "invalid_request", detail: "the request is invalid"},
	{err: errTooLarge, status: http.StatusRequestEntityTooLarge, code: "body_too_large", detail: "request body too large"},
	// The saved-schema lifecycle's refusals (docs/contract.md, "Schemas").
	{err: schema.ErrInUse, status: http.StatusConflict, code: app.CodeSchemaInUse, detail: "the schema is in use (a linked database); delete with cascade=true"},
	{err: schema.ErrRestoreExpired, status: http.StatusConflict, code: app.CodeRestoreExpired, detail: "the schema can no longer be restored; its restore window has passed"},
	{err: schema.ErrNotLinked, status: http.StatusConflict, code: app.CodeSchemaNotLinked, detail: "the schema is not linked to a database; only linked schemas are published"},
	{err: schema.ErrLinked, status: http.StatusConflict, code: app.CodeSchemaLinked, detail: "the schema is linked to a database; unlink it first"},
	{err: schema.ErrConfirmTransforms, status: http.StatusConflict, code: app.CodeConfirmTransforms, detail: "the publish migrates data; publish with confirm_transforms=true"},
	{err: schema.ErrKeyLanguageRequired, status: http.StatusConflict, code: app.CodeKeyLanguageRequired, detail: "the schema's database key is multilingual; publish with key_language"},
	{err: schema.ErrKeyLanguageLocked, status: http.StatusConflict, code: app.CodeKeyLanguageLocked, detail: "the key language is locked to another language"},
	{err: ports.ErrConflict, status: http.StatusConflict, code: "conflict", detail: "the change conflicts with the resource's state"},
	{err: job.ErrTransition, status: http.StatusConflict, code: "conflict", detail: "the job's state does not allow this"},
	{err: ports.ErrCapacity, status: http.StatusServiceUnavailable, code: "capacity", detail: "the server has no capacity for the job, try again shortly"},
	{err: app.ErrTooManyAttempts, status: http.StatusTooManyRequests, code: "too_many_attempts", detail: "too many failed attempts; try again later"},
	// An operator's quota used up: the app's error names the quota in its
	// code (quota_calls_per_day_exceeded, ...) and sets Retry-After.
	{err: app.ErrQuotaExceeded, status: http.StatusTooManyRequests, code: "quota_exceeded", detail: "the organization's daily quota through the operator's provider keys is used up"},
	// A blocking run whose pre-flight classification warned (the job is
	// cancelled): 422 with the classification; the code says which verdict.
	{err: app.ErrClassification, status: http.StatusUnprocessableEntity, code: app.CodeClassificationWarning, detail: "the pre-flight classification says the entity may not be what the schema describes; the job was cancelled (stream it to continue past the warning)"},
	{err: app.ErrSyncTimeout, status: http.StatusGatewayTimeout, code: "timeout", detail: "the job did not finish within timeout_seconds and was cancelled"},
	// LLM failures that reach a caller without a job (the reference's sync
	// statuses).
	{err: ports.ErrRateLimited, status: http.StatusTooManyRequests, code: string(job.CodeRateLimited), detail: job.CodeRateLimited.Message()},
	{err: ports.ErrLLMTimeout, status: http.StatusGatewayTimeout, code: string(job.CodeProviderTimeout), detail: job.CodeProviderTimeout.Message()},
	{err: ports.ErrContextLength, status: http.StatusUnprocessableEntity, code: string(job.CodeContextLength), detail: job.CodeContextLength.Message()},
	{err: ports.ErrModelRetired, status: http.StatusUnprocessableEntity, code: string(job.CodeModelRetired), detail: job.CodeModelRetired.Message()},
	{err: ports.ErrLLMUnavailable, status: http.StatusBadGateway, code: string(job.CodeLLMUnavailable), detail: job.CodeLLMUnavailable.Message()},
	{err: ports.ErrLLMAuth, status: http.StatusBadGateway, code: string(job.CodeNoUsableKey), detail: "the model's provider refused the key"},
	{err: rotation.ErrNoUsableKey, status: http.StatusBadRequest, code: string(job.CodeNoUsableKey), detail: "the model's provider has no usable key for the organization"},
	{err: context.DeadlineExceeded, status: http.StatusGatewayTimeout, code: "timeout", detail: "the request did not finish in time"},
	// The client went away (its request's context ended): the work stopped,
	// and the answer, which nobody reads, is the blocking runs' 499.
	{err: context.Canceled, status: statusClientClosed, code: "cancelled", detail: "the request was cancelled: the client went away"},
	// Fetching a batch from a URL: the URL's fault is the caller's (400),
	// the server's failure a bad gateway.
	{err: ports.ErrFetchRefused, status: http.StatusBadRequest, code: app.CodeURLRefused, detail: "url refused: the address is not allowed"},
	{err: ports.ErrFetchTooLarge, status: http.StatusBadRequest, code: app.CodeFetchTooLarge, detail: "the document at url is too large"},
	{err: ports.ErrFetchFailed, status: http.StatusBadGateway, code: app.CodeFetchFailed, detail: "fetching the URL failed"},
	{err: ports.ErrFetchTimeout, status: http.StatusGatewayTimeout, code: app.CodeFetchTimeout, detail: "fetching the URL timed out"},

	// A blocking run's job that ended without completing (REFERENCE.md §3:
	// 422 model_retired and context_length_exceeded, 429 rate_limited, 504
	// provider_timeout, 502 model_output_invalid (retryable) and the other
	// provider failures, 499 cancelled). Our own failures are not the
	// provider's: storage_error and internal_error are 500 (SPEC.md's
	// internal failure), shutdown and interrupted 503 (another try may run),
	// schema_invalid 422 (the schema, not the model, is at fault),
	// no_usable_provider_key 502 without retryable (the keys must change first).
	{job: string(job.CodeOutputInvalid), status: http.StatusBadGateway, retryable: true},
	{job: string(job.CodeLLMUnavailable), status: http.StatusBadGateway, retryable: true},
	{job: string(job.CodeProviderTimeout), status: http.StatusGatewayTimeout, retryable: true},
	{job: string(job.CodeRateLimited), status: http.StatusTooManyRequests, retryable: true},
	{job: string(job.CodeContextLength), status: http.StatusUnprocessableEntity},
	{job: string(job.CodeModelRetired), status: http.StatusUnprocessableEntity},
	{job: string(job.CodeNoUsableKey), status: http.StatusBadGateway},
	{job: string(job.CodeSchemaInvalid), status: http.StatusUnprocessableEntity},
	{job: string(job.CodeInterrupted), status: http.StatusServiceUnavailable, retryAfter: 2},
	{job: string(job.CodeShutdown), status: http.StatusServiceUnavailable, retryAfter: 2},
	{job: string(job.CodeStorage), status: http.StatusInternalServerError},
	// The job's limits (docs/security.md): the call cap is the request's
	// size (422, as a schema at fault); a quota used up mid-run is 429,
	// not retryable before the next UTC day.
	{job: string(job.CodeTooManyCalls), status: http.StatusUnprocessableEntity},
	{job: string(job.CodeQuotaCalls), status: http.StatusTooManyRequests},
	{job: string(job.CodeQuotaTokens), status: http.StatusTooManyRequests},
	// The job's attachments: one lost its bytes before the job read them
	// (as at submit, 400), or they describe unrelated things (422).
	{job: string(job.CodeAttachmentNotFound), status: http.StatusBadRequest},
	{job: string(job.CodeIncoherentAttachments), status: http.StatusUnprocessableEntity},
	{job: string(job.CodeInternal), status: http.StatusInternalServerError},
	{job: app.CodeCancelled, status: statusClientClosed, code: "cancelled"},
}

// internalRule answers everything the table does not know.
var internalRule = errorRule{status: http.StatusInternalServerError, code: "internal_error", detail: "internal error"}

// ruleFor finds err's row and the detail to show.
func ruleFor(err error) (errorRule, string) {
	var ended *app.JobEnded
	if errors.As(err, &ended) {
		for _, r := range errorTable {
			if r.err == nil && r.job == ended.Code() {
				if r.code == "" {
					r.code = r.job
				}
				return r, ended.Error()
			}
		}
		return internalRule, internalRule.detail
	}
	for _, r := range errorTable {
		if r.err != nil && errors.Is(err, r.err) {
			if e, ok := app.AsError(err); ok {
				return r, e.Detail
			}
			return r, r.detail
		}
	}
	return internalRule, internalRule.detail
}

// Error writes err as a JSON error response. Unknown errors are logged with
// the request id and shown as "internal error".
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) {
	rule, detail := ruleFor(err)
	if rule.err == context.Canceled && r.Context().Err() == nil {
		// Cancelled, but not by the client: ours to explain.
		rule, detail = internalRule, internalRule.detail
	}
	body := errorBody{Detail: detail, Code: rule.code, Retryable: rule.retryable}
	if rule.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(rule.retryAfter))
	}
	if e, ok := app.AsError(err); ok {
		body.Field = e.Field
		body.Paths = e.Paths
		body.Limit = e.Limit
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
	if errors.Is(err, app.ErrSyncTimeout) {
		body.Field = "timeout_seconds"
	}
	var refused *app.ClassificationRefused
	if errors.As(err, &refused) {
		body.Code, body.Classification = refused.Code(), refused.Context
	}
	switch {
	case rule.status == statusClientClosed:
		s.log.InfoContext(r.Context(), "client went away; request cancelled", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
	case rule.status >= http.StatusInternalServerError && !errors.Is(err, ports.ErrUnavailable):
		s.log.ErrorContext(r.Context(), "request failed", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "status", rule.status, "err", err)
	case errors.Is(err, ports.ErrUnavailable):
		s.log.WarnContext(r.Context(), "storage unavailable", "request_id", requestID(r), "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.writeError(w, r, rule.status, body)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, body errorBody) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="enrich"`)
	}
	writeJSON(w, status, body.wire())
}

// fail writes an error with an explicit status and code.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code, field, detail string) {
	s.writeError(w, r, status, errorBody{Detail: detail, Code: code, Field: field})
}
