package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// byModelLLM answers enrichment calls by model and arbitration calls with
// arbitration (counting each kind).
type byModelLLM struct {
	mu          sync.Mutex
	answers     map[string]string
	arbitration string
	enrich, arb int
}

func (l *byModelLLM) Generate(_ context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.Task == ports.TaskArbitration {
		l.arb++
		return ports.LLMResponse{Text: l.arbitration, InputTokens: 10, OutputTokens: 5}, nil
	}
	l.enrich++
	return ports.LLMResponse{Text: l.answers[req.Model.String()], InputTokens: 10, OutputTokens: 5}, nil
}

type catalog []model.Info

func (c catalog) Models() []model.Info { return c }
func (c catalog) Model(k model.Key) (model.Info, error) {
	for _, m := range c {
		if m.Key == k {
			return m, nil
		}
	}
	return model.Info{}, ports.ErrUnknownModel
}

func fusionService(t *testing.T, llm ports.LLM) *app.Enricher {
	t.Helper()
	store := memory.NewSchemaStore()
	sc := &schema.Schema{ID: "sch", OrgID: "org", Name: "Company",
		Content: json.RawMessage(`{"type":"object","required":["name","n"],"properties":{"name":{"type":"string"},"n":{"type":"integer"}}}`)}
	if err := store.CreateSchema(context.Background(), sc); err != nil {
		t.Fatal(err)
	}
	price := model.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}
	cat := catalog{{Key: model.Key{Provider: "p", Model: "a"}, Price: price}, {Key: model.Key{Provider: "p", Model: "b"}, Price: price},
		{Key: model.Key{Provider: "q", Model: "judge"}, Price: price}}
	return testEnricher(store, nil, llm, cat, nil, nil)
}

func runWork(t *testing.T, svc *app.Enricher, req app.EnrichRequest, prior []job.Event) (ports.Outcome, []job.Payload) {
	t.Helper()
	body, _ := jobcodec.New().EncodeEnrich(req)
	var mu sync.Mutex
	var evs []job.Payload
	out := svc.Run(context.Background(), &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: job.TypeEnrichment, Request: body},
		Prior: prior, Publish: func(p job.Payload) { mu.Lock(); evs = append(evs, p); mu.Unlock() }})
	return out, evs
}

func fusedOf(t *testing.T, out ports.Outcome) *enrichment.Record {
	t.Helper()
	for _, r := range out.Records {
		if r.Type == enrichment.RecordFusion {
			return r
		}
	}
	return nil
}

// TestWildNumbersEscalate: numbers more than ten times apart call an
// automatically selected arbiter although none was requested; its one call
// is in the run's usage.
func TestWildNumbersEscalate(t *testing.T) {
	is := is.New(t)
	llm := &byModelLLM{answers: map[string]string{"p::a": `{"name":"Acme","n":10}`, "p::b": `{"name":"Acme","n":1000}`},
		arbitration: `{"decisions":[{"path":"n","value":1000}]}`}
	svc := fusionService(t, llm)
	out, evs := runWork(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a", "p::b"}}, nil)
	is.True(out.Failure == nil)
	is.Equal(llm.arb, 1)
	var started *job.ArbitrationStarted
	for _, e := range evs {
		if a, ok := e.(job.ArbitrationStarted); ok {
			started = &a
		}
	}
	is.True(started != nil)
	is.True(started.Escalated)
	is.Equal(started.Conflicts, 1)
	rec := fusedOf(t, out)
	is.True(rec != nil)
	is.Equal(rec.Fusion.Summary.Method, "llm")
	is.Equal(rec.Fusion.Provenance["n"].Models, []string{"p::b"})
	is.True(rec.Fusion.Provenance["n"].Arbitrated)
	is.True(rec.Cost > 0)
	arbUsage := 0
	for _, u := range out.Usage {
		if u.Model == started.Model {
			arbUsage++
		}
	}
	is.True(arbUsage >= 1)
	is.True(out.Completed.Fused)
	is.Equal(out.Completed.RecordID, rec.ID)
	is.Equal(out.Completed.Result["n"], 1000.0)

	// Close numbers: the median, no arbiter.
	llm.answers["p::b"] = `{"name":"Acme","n":20}`
	out, _ = runWork(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a", "p::b"}}, nil)
	is.Equal(llm.arb, 1)
	rec = fusedOf(t, out)
	is.Equal(rec.Fusion.Summary.Method, "rule_based")
	is.Equal(out.Completed.Result["n"], 15.0) // the mean of the two middles, an integer
}

// TestResumedRunStillFuses: a worker that takes a job over redoes no
// finished model and no arbitration, and still fuses.
func TestResumedRunStillFuses(t *testing.T) {
	is := is.New(t)
	llm := &byModelLLM{answers: map[string]string{"p::a": `{"name":"Acme","n":10}`, "p::b": `{"name":"Acme","n":30}`},
		arbitration: `{"decisions":[{"path":"n","value":30}]}`}
	svc := fusionService(t, llm)
	judge := "q::judge"
	req := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a", "p::b"},
		ArbitrationModel: &judge, Strategy: "single_pass"}
	first, evs := runWork(t, svc, req, nil)
	is.True(first.Failure == nil)
	is.Equal(llm.enrich, 2)
	is.Equal(llm.arb, 1)
	// The first worker died after publishing everything up to the fusion.
	var prior []job.Event
	for i, p := range evs {
		if p.EventType() == job.EventFusionCompleted {
			break
		}
		prior = append(prior, stored(int64(i+1), p))
	}
	second, _ := runWork(t, svc, req, prior)
	is.True(second.Failure == nil)
	is.Equal(llm.enrich, 2) // no model again
	is.Equal(llm.arb, 1)    // nor the arbiter
	a, b := fusedOf(t, first), fusedOf(t, second)
	is.True(b != nil)
	is.Equal(a.ID, b.ID)
	is.Equal(string(a.StructuredOutput), string(b.StructuredOutput))
	is.Equal(b.Fusion.Summary.Method, "llm")
	is.Equal(b.Fusion.Summary.ArbitrationModel, "q::judge")
	is.Equal(second.Completed.Result["n"], 30.0)
}

// TestArbitrationPromptShowsOnlyConflicts: the arbiter sees the
// conflicting fields and their candidates, nothing else.
func TestArbitrationPromptShowsOnlyConflicts(t *testing.T) {
	is := is.New(t)
	var seen []ports.LLMRequest
	llm := &recordingLLM{inner: &byModelLLM{answers: map[string]string{"p::a": `{"name":"Acme","n":10}`, "p::b": `{"name":"Acme","n":30}`},
		arbitration: `{"decisions":[]}`}, seen: &seen}
	svc := fusionService(t, llm)
	judge := "q::judge"
	out, _ := runWork(t, svc, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a", "p::b"},
		ArbitrationModel: &judge}, nil)
	is.True(out.Failure == nil)
	var arb *ports.LLMRequest
	for i := range seen {
		if seen[i].Task == ports.TaskArbitration {
			arb = &seen[i]
		}
	}
	is.True(arb != nil)
	is.Equal(arb.Model.String(), "q::judge")
	text := arb.Messages[len(arb.Messages)-1].Content
	is.True(strings.Contains(text, `"path":"n"`))
	is.True(!strings.Contains(text, `"path":"name"`))
	// No decision: the rules stand, the arbiter is still named.
	rec := fusedOf(t, out)
	is.Equal(rec.Fusion.Summary.ArbitrationModel, "q::judge")
	is.Equal(rec.Fusion.Summary.Method, "rule_based")
	is.Equal(out.Completed.Result["n"], 20.0)
}

type recordingLLM struct {
	inner ports.LLM
	mu    sync.Mutex
	seen  *[]ports.LLMRequest
}

func (l *recordingLLM) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	l.mu.Lock()
	*l.seen = append(*l.seen, req)
	l.mu.Unlock()
	return l.inner.Generate(ctx, req)
}

// TestFusionCompletedCarriesArbitrationMetadata: fusion_completed's
// merged_result carries _arbitration_metadata {method, arbitration_model}
// as the reference's clients read it; the fused record and the job's
// result stay clean.
func TestFusionCompletedCarriesArbitrationMetadata(t *testing.T) {
	judge := "q::judge"
	tests := []struct {
		name        string
		b           string // p::b's answer (p::a says n=10)
		arbiter     *string
		arbitration string
		method      string
		model       any // the metadata's arbitration_model ("auto": the escalation's pick)
	}{
		{"rules, no arbiter", `{"name":"Acme","n":20}`, nil, "", "rule_based", nil},
		{"the arbiter decides", `{"name":"Acme","n":30}`, &judge, `{"decisions":[{"path":"n","value":30}]}`, "llm", judge},
		{"the arbiter decides nothing: the rules stand, the arbiter is named", `{"name":"Acme","n":30}`, &judge,
			`{"decisions":[]}`, "rule_based", judge},
		{"wild numbers escalate to an automatic arbiter", `{"name":"Acme","n":1000}`, nil,
			`{"decisions":[{"path":"n","value":1000}]}`, "llm", "auto"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			llm := &byModelLLM{answers: map[string]string{"p::a": `{"name":"Acme","n":10}`, "p::b": tc.b}, arbitration: tc.arbitration}
			out, evs := runWork(t, fusionService(t, llm), app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`),
				SchemaID: "sch", Models: []string{"p::a", "p::b"}, ArbitrationModel: tc.arbiter, Strategy: "single_pass"}, nil)
			is.True(out.Failure == nil)
			var fc *job.FusionCompleted
			var auto string
			for _, e := range evs {
				switch p := e.(type) {
				case job.FusionCompleted:
					fc = &p
				case job.ArbitrationStarted:
					auto = p.Model
				}
			}
			is.True(fc != nil)
			want := tc.model
			if want == "auto" {
				is.True(auto != "")
				want = auto
			}
			is.Equal(fc.Merged["_arbitration_metadata"], map[string]any{"method": tc.method, "arbitration_model": want})
			rec := fusedOf(t, out)
			is.Equal(rec.Fusion.Summary.Method, tc.method)
			var stored map[string]any
			is.NoErr(json.Unmarshal(rec.StructuredOutput, &stored))
			_, inRecord := stored["_arbitration_metadata"]
			is.True(!inRecord) // the record's output is clean
			_, inResult := out.Completed.Result["_arbitration_metadata"]
			is.True(!inResult) // and so is the job's result
			delete(fc.Merged, "_arbitration_metadata")
			is.Equal(fc.Merged, stored) // otherwise the event's merged_result is the record's
		})
	}
}
