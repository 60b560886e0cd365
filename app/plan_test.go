package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// scriptLLM answers every call with answer (or fails with err) and
// remembers the requests.
type scriptLLM struct {
	mu     sync.Mutex
	reqs   []ports.LLMRequest
	answer string
	err    error
}

func (l *scriptLLM) Generate(_ context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
	return ports.LLMResponse{Text: l.answer}, l.err
}

type oneModel struct{ m model.Info }

func (c oneModel) Models() []model.Info { return []model.Info{c.m} }
func (c oneModel) Model(k model.Key) (model.Info, error) {
	if k == c.m.Key {
		return c.m, nil
	}
	return model.Info{}, ports.ErrUnknownModel
}

func newEnrichment(t *testing.T, llm ports.LLM) (*app.Enricher, string) {
	t.Helper()
	store := memory.NewSchemaStore()
	sc := &schema.Schema{ID: "sch", OrgID: "org", Name: "Company",
		Content: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)}
	if err := store.CreateSchema(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	return testEnricher(store, nil, llm, oneModel{model.Info{Key: model.Key{Provider: "p", Model: "m"}}}, nil, nil), sc.ID
}

func run(t *testing.T, svc *app.Enricher, req app.EnrichRequest) (ports.Outcome, []job.Payload) {
	t.Helper()
	body, _ := jobcodec.New().EncodeEnrich(req)
	var mu sync.Mutex
	var evs []job.Payload
	out := svc.Run(context.Background(), &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: job.TypeEnrichment, Request: body},
		Publish: func(p job.Payload) { mu.Lock(); evs = append(evs, p); mu.Unlock() }})
	return out, evs
}

// TestStructuredOutputFlagsReachTheLLMPort: enable_response_schema
// (default true) and enable_strict_structured_output (default false) are
// carried to every call's request, for the adapter to use.
func TestStructuredOutputFlagsReachTheLLMPort(t *testing.T) {
	off, on := false, true
	tests := []struct {
		name           string
		responseSchema *bool
		strict         bool
		wantRS         bool
	}{
		{"defaults", nil, false, true},
		{"both on", &on, true, true},
		{"response schema off", &off, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			llm := &scriptLLM{answer: `{"name":"Acme"}`}
			svc, id := newEnrichment(t, llm)
			out, _ := run(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: id,
				Models: []string{"p::m"}, EnableResponseSchema: tt.responseSchema, EnableStrictStructuredOutput: tt.strict})
			is.True(out.Failure == nil)
			is.True(len(llm.reqs) > 0)
			for _, r := range llm.reqs {
				is.Equal(r.ResponseSchema, tt.wantRS)
				is.Equal(r.Strict, tt.strict)
			}
		})
	}
}

// TestRetriesAndSafeMessages: an invalid answer is tried MaxAttempts times;
// a provider's failure is described by its code's fixed text, never its
// own words; a failure another try cannot mend is not retried.
func TestRetriesAndSafeMessages(t *testing.T) {
	t.Run("invalid output uses every attempt", func(t *testing.T) {
		is := is.New(t)
		llm := &scriptLLM{answer: `{"name": 42}`}
		svc, id := newEnrichment(t, llm)
		out, _ := run(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: id, Models: []string{"p::m"}})
		is.Equal(out.Failure.Code, job.CodeOutputInvalid)
		is.Equal(len(llm.reqs), 5) // the reference's 5 attempts by default
	})
	t.Run("configured attempts", func(t *testing.T) {
		is := is.New(t)
		llm := &scriptLLM{answer: `not json`}
		svc, id := newEnrichment(t, llm)
		svc.MaxAttempts = 2
		out, _ := run(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: id, Models: []string{"p::m"}})
		is.Equal(out.Failure.Code, job.CodeOutputInvalid)
		is.Equal(len(llm.reqs), 2)
	})
	for _, tt := range []struct {
		sentinel error
		code     job.ErrorCode
		calls    int
	}{
		{ports.ErrLLMUnavailable, job.CodeLLMUnavailable, 5},
		{ports.ErrRateLimited, job.CodeRateLimited, 5},
		{ports.ErrLLMTimeout, job.CodeProviderTimeout, 5},
		{ports.ErrContextLength, job.CodeContextLength, 1},
		{ports.ErrModelRetired, job.CodeModelRetired, 1},
	} {
		t.Run(string(tt.code), func(t *testing.T) {
			is := is.New(t)
			llm := &scriptLLM{err: errors.Join(errors.New("provider said: key sk-SECRET at 10.1.2.3"), tt.sentinel)}
			svc, id := newEnrichment(t, llm)
			out, evs := run(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: id, Models: []string{"p::m"}})
			is.Equal(out.Failure.Code, tt.code)
			is.Equal(len(llm.reqs), tt.calls)
			b, _ := json.Marshal(out.Failure)
			for _, p := range evs {
				f, _ := jobcodec.Events{}.AppendJSON(nil, job.Event{Type: p.EventType(), Payload: p})
				b = append(b, f...)
			}
			is.True(!contains(string(b), "SECRET"))
			is.True(!contains(string(b), "10.1.2.3"))
		})
	}
}

// TestUnsupportedFieldsAreRefusedByName: fields whose capability is still
// to come are validated, then refused naming them.
func TestUnsupportedFieldsAreRefusedByName(t *testing.T) {
	svc, id := newEnrichment(t, &scriptLLM{answer: `{"name":"Acme"}`})
	unknown := "p::nope"
	base := func() app.EnrichRequest {
		return app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: id, Models: []string{"p::m"}}
	}
	tests := []struct {
		name        string
		edit        func(*app.EnrichRequest)
		code, field string
	}{
		{"pause timeout", func(r *app.EnrichRequest) { zero := 0; r.PauseTimeoutSeconds = &zero }, "invalid_request", "pause_timeout_seconds"},
		{"unknown classification model", func(r *app.EnrichRequest) { r.ClassificationModel = &unknown }, "invalid_model", "classification_model"},
		{"unknown arbitration model", func(r *app.EnrichRequest) { r.ArbitrationModel = &unknown }, "invalid_model", "arbitration_model"},
		{"attachments", func(r *app.EnrichRequest) { r.AttachmentIDs = []string{"a1"} }, "not_supported_yet", "attachment_ids"},
		{"empty attachment id", func(r *app.EnrichRequest) { r.AttachmentIDs = []string{" "} }, "invalid_request", "attachment_ids.0"},
		{"inline schema", func(r *app.EnrichRequest) { r.TargetSchema = json.RawMessage(`{"type":"object"}`) }, "not_supported_yet", "target_schema"},
		{"unknown language", func(r *app.EnrichRequest) { r.Languages = []string{"en", "xx"} }, "invalid_language", "languages.1"},
		{"language twice", func(r *app.EnrichRequest) { r.Languages = []string{"en", "en"} }, "invalid_request", "languages.1"},
	}
	p := &access.Principal{OrgID: "org", UserID: "u", Role: access.Owner, Scopes: access.DefaultScopes()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req := base()
			tt.edit(&req)
			_, err := (&app.EnrichmentService{Enricher: svc, Requests: svc.Requests}).Start(context.Background(), p, req)
			e, ok := app.AsError(err)
			is.True(ok)
			is.Equal(e.Code, tt.code)
			is.Equal(e.Field, tt.field)
		})
	}
	// Null and empty values of those fields are fine.
	is := is.New(t)
	empty := ""
	req := base()
	req.ClassificationModel, req.AttachmentIDs, req.TargetSchema, req.Languages = &empty, []string{}, json.RawMessage("null"), []string{"en", "fr"}
	out, _ := run(t, svc, req)
	is.True(out.Failure == nil)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
