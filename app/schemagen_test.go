package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// seqLLM answers the calls in order with answers (the last one again when
// they run out), or fails with err.
type seqLLM struct {
	mu      sync.Mutex
	reqs    []ports.LLMRequest
	answers []string
	err     error
}

func (l *seqLLM) Generate(_ context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
	a := l.answers[min(len(l.reqs), len(l.answers))-1]
	return ports.LLMResponse{Text: a, InputTokens: 100, OutputTokens: 10}, l.err
}

func newSchemaGen(t *testing.T, llm ports.LLM) (*app.SchemaGenerator, ports.SchemaStore) {
	t.Helper()
	store := memory.NewSchemaStore()
	c := jsonschema.New(schema.Limits{})
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := model.Info{Key: model.Key{Provider: "p", Model: "m"}, Price: model.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}}
	enr := testEnricher(store, nil, llm, oneModel{m}, nil, lg)
	return &app.SchemaGenerator{Models: enr.Models, Calls: enr.Calls, Requests: enr.Requests, Schemas: store, Saved: &app.SchemaService{Schemas: store, Compiler: c, Clock: system.Clock{}, IDs: system.IDs{}},
		Compiler: c, Clock: system.Clock{}, IDs: system.IDs{}, Log: lg, RetryBackoff: 1}, store
}

func runSchemaJob(t *testing.T, svc *app.SchemaGenerator, typ job.Type, req any) (ports.Outcome, []job.Payload) {
	t.Helper()
	var body []byte
	switch r := req.(type) {
	case app.GenerateRequest:
		body, _ = jobcodec.New().EncodeGenerate(r)
	case app.EditRequest:
		body, _ = jobcodec.New().EncodeEdit(r)
	default:
		t.Fatalf("not a schema request: %T", req)
	}
	var mu sync.Mutex
	var evs []job.Payload
	out := svc.Run(context.Background(), &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: typ, Request: body},
		Publish: func(p job.Payload) { mu.Lock(); evs = append(evs, p); mu.Unlock() }})
	return out, evs
}

const goodAnswer = `{"schema":{"type":"object","title":"Company","properties":{"name":{"type":"string","identifying":true},"founded":{"type":"integer"}}},"suggestions":["ok"]}`

// TestSchemaGenerationLoop: an answer that breaks a rule is fed back and
// the next one repaired; the result is post-processed, saved once per
// content, recorded, and every call is a usage entry. A job prepared again
// (as after a takeover) runs the same.
func TestSchemaGenerationLoop(t *testing.T) {
	is := is.New(t)
	bad := `{"schema":{"type":"object","title":"Co\u0000","properties":{"name":{"type":"string"}}}}`
	llm := &seqLLM{answers: []string{bad, `{"schema":{"type":"object","properties":{"name":{"type":"text"}}}}`, goodAnswer}}
	svc, store := newSchemaGen(t, llm)
	req := app.GenerateRequest{EntitySamples: json.RawMessage(`[{"name":"Acme","founded":1947},{"name":"Globex"}]`)}
	out, evs := runSchemaJob(t, svc, job.TypeSchemaGeneration, req)
	is.True(out.Failure == nil)
	is.Equal(len(llm.reqs), 3)
	for _, r := range llm.reqs {
		is.Equal(r.Task, ports.TaskSchemaGeneration)
	}
	last := llm.reqs[2].Messages
	is.True(strings.Contains(last[len(last)-1].Content, "does not compile as JSON Schema"))
	is.True(strings.Contains(llm.reqs[1].Messages[len(llm.reqs[1].Messages)-1].Content, "cannot be stored"))
	var attempts []job.Attempt
	for _, p := range evs {
		if a, ok := p.(job.Attempt); ok {
			attempts = append(attempts, a)
		}
	}
	is.Equal(len(attempts), 3)
	is.Equal(attempts[2].MaxAttempts, app.DefaultSchemaAttempts)
	is.True(strings.HasPrefix(attempts[2].Reason, "model_output_invalid"))
	is.Equal(len(out.Usage), 3)
	is.Equal(len(out.Records), 1)
	rec := out.Records[0]
	is.Equal(rec.Type, enrichment.RecordSchemaGeneration)
	is.Equal(rec.InputTokens, 300)
	var doc map[string]any
	is.NoErr(json.Unmarshal(rec.StructuredOutput, &doc))
	founded := doc["properties"].(map[string]any)["founded"].(map[string]any)
	is.Equal(founded["type"], []any{"integer", "null"})
	is.Equal(founded["examples"], []any{1947.0})
	sc, err := store.GetSchema(context.Background(), "org", rec.SchemaID)
	is.NoErr(err)
	is.Equal(sc.Name, "Company")
	is.Equal(out.Completed.Result["schema_created"], true)

	// The same result again: the saved schema is reused.
	llm2 := &seqLLM{answers: []string{goodAnswer}}
	svc.Calls.LLM = llm2
	out, _ = runSchemaJob(t, svc, job.TypeSchemaGeneration, req)
	is.Equal(out.Records[0].SchemaID, rec.SchemaID)
	is.Equal(out.Completed.Result["schema_created"], false)
}

func TestSchemaGenerationFailures(t *testing.T) {
	req := app.GenerateRequest{EntitySamples: json.RawMessage(`{"name":"Acme"}`), SaveSchema: new(false)}
	t.Run("never valid", func(t *testing.T) {
		is := is.New(t)
		llm := &seqLLM{answers: []string{`{"schema":{"type":"object","properties":{}}}`}}
		svc, _ := newSchemaGen(t, llm)
		out, _ := runSchemaJob(t, svc, job.TypeSchemaGeneration, req)
		is.Equal(out.Failure.Code, job.CodeOutputInvalid)
		is.True(strings.HasPrefix(out.Failure.Msg, "6 attempts failed"))
		is.Equal(len(llm.reqs), 6)
	})
	t.Run("provider words stay out", func(t *testing.T) {
		is := is.New(t)
		llm := &seqLLM{answers: []string{""}, err: errors.Join(errors.New("key sk-SECRET refused"), ports.ErrContextLength)}
		svc, _ := newSchemaGen(t, llm)
		out, evs := runSchemaJob(t, svc, job.TypeSchemaGeneration, req)
		is.Equal(out.Failure.Code, job.CodeContextLength)
		is.Equal(len(llm.reqs), 1) // not retried
		b, _ := json.Marshal(out.Failure)
		for _, p := range evs {
			f, _ := jobcodec.Events{}.AppendJSON(nil, job.Event{Type: p.EventType(), Payload: p})
			b = append(b, f...)
		}
		is.True(!strings.Contains(string(b), "SECRET"))
	})
	t.Run("mixed samples never reach the model", func(t *testing.T) {
		is := is.New(t)
		llm := &seqLLM{answers: []string{goodAnswer}}
		svc, _ := newSchemaGen(t, llm)
		out, _ := runSchemaJob(t, svc, job.TypeSchemaGeneration, app.GenerateRequest{EntitySamples: json.RawMessage(`[{"a":1},{"x":1,"y":2,"z":3}]`)})
		is.True(out.Failure != nil)
		is.Equal(len(llm.reqs), 0)
	})
}

func TestSchemaEditLoop(t *testing.T) {
	is := is.New(t)
	llm := &seqLLM{answers: []string{goodAnswer}}
	svc, store := newSchemaGen(t, llm)
	sc := &schema.Schema{ID: "s1", OrgID: "org", Name: "Company", Content: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}
	is.NoErr(store.CreateSchema(context.Background(), sc))
	out, _ := runSchemaJob(t, svc, job.TypeSchemaEdit, app.EditRequest{SchemaID: "s1", Prompt: "add founded"})
	is.True(out.Failure == nil)
	is.Equal(llm.reqs[0].Task, ports.TaskSchemaEdit)
	is.True(strings.Contains(llm.reqs[0].Messages[1].Content, schema.InstructionMarker+" add founded"))
	got, err := store.GetSchema(context.Background(), "org", "s1")
	is.NoErr(err)
	is.True(strings.Contains(string(got.Content), `"founded"`))
	is.Equal(out.Records[0].Type, enrichment.RecordSchemaEdit)
	is.Equal(out.Records[0].SchemaID, "s1")

	// A schema gone before the job ran fails it as schema_invalid.
	out, _ = runSchemaJob(t, svc, job.TypeSchemaEdit, app.EditRequest{SchemaID: "gone", Prompt: "add x"})
	is.Equal(out.Failure.Code, job.CodeSchemaInvalid)
}
