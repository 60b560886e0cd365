package app_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// searchingLLM answers every call with a valid company and, when the call
// asks for web search, reports searches searches.
type searchingLLM struct {
	mu       sync.Mutex
	searches int
	calls    int
}

func (l *searchingLLM) Generate(_ context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	resp := ports.LLMResponse{Text: `{"name":"Acme","n":10}`, InputTokens: 10, OutputTokens: 5}
	if req.WebSearch {
		resp.Searches = l.searches
	}
	return resp, nil
}

// TestRecordCountsWebSearches: the record counts its calls' web searches,
// which each expertise_completed carries; a worker that takes the job over
// after the calls gets them back from those events without calling again.
func TestRecordCountsWebSearches(t *testing.T) {
	is := is.New(t)
	llm := &searchingLLM{searches: 2}
	svc := fusionService(t, llm)
	price := model.Price{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000, PerSearch: 10_000}
	svc.Models.Catalog = catalog{{Key: model.Key{Provider: "p", Model: "a"}, Price: price, WebSearch: true, WebSearchTool: true}}
	req := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a"},
		EnableWebSearch: true, Strategy: "single_pass"}
	first, evs := runWork(t, svc, req, nil)
	is.True(first.Failure == nil)
	is.Equal(len(first.Records), 1)
	calls := llm.calls
	is.True(calls > 0)
	var prior []job.Event
	searches := 0
	for i, p := range evs {
		if p.EventType() == job.EventModelCompleted {
			break
		}
		if d, ok := p.(job.ExpertiseCompleted); ok {
			is.Equal(d.WebSearchCalls, 2)
			searches += d.WebSearchCalls
		}
		prior = append(prior, stored(int64(i+1), p))
	}
	is.Equal(searches, 2*calls)
	is.Equal(first.Records[0].WebSearchCalls, searches)
	is.Equal(len(first.Usage), calls)
	for _, u := range first.Usage {
		is.Equal(u.WebSearchCalls, 2) // each call's usage row counts its searches
		is.Equal(u.Cost, price.CallCost(u.InputTokens, u.OutputTokens, 2))
	}

	second, _ := runWork(t, svc, req, prior)
	is.True(second.Failure == nil)
	is.Equal(llm.calls, calls) // nothing called again
	is.Equal(len(second.Records), 1)
	is.Equal(second.Records[0].WebSearchCalls, searches)
	is.Equal(second.Records[0].Cost, first.Records[0].Cost)

	// Without web search the record made none.
	req.EnableWebSearch = false
	out, _ := runWork(t, svc, req, nil)
	is.True(out.Failure == nil)
	is.Equal(out.Records[0].WebSearchCalls, 0)
}

// TestResumedBatchKeepsWebSearches: a worker that takes a batch over after
// an entity completed stores that entity's record from its entity_completed
// event, web searches included.
func TestResumedBatchKeepsWebSearches(t *testing.T) {
	is := is.New(t)
	llm := &searchingLLM{searches: 2}
	svc := fusionService(t, llm)
	svc.Models.Catalog = catalog{{Key: model.Key{Provider: "p", Model: "a"}, Price: model.Price{InputPerMTok: 1_000_000, PerSearch: 10_000},
		WebSearch: true, WebSearchTool: true}}
	req := app.BatchRequest{EnrichRequest: app.EnrichRequest{SchemaID: "sch", Models: []string{"p::a"}, EnableWebSearch: true,
		Strategy: "single_pass"}, Entities: []json.RawMessage{json.RawMessage(`{"name":"Acme"}`)}}
	body, err := jobcodec.New().EncodeBatch(req)
	is.NoErr(err)
	run := func(prior []job.Event) (ports.Outcome, []job.Payload) {
		var mu sync.Mutex
		var evs []job.Payload
		out := svc.BatchRunner().Run(context.Background(), &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: job.TypeBatchEnrichment,
			Request: body}, Prior: prior, Publish: func(p job.Payload) { mu.Lock(); evs = append(evs, p); mu.Unlock() }})
		return out, evs
	}
	first, evs := run(nil)
	is.Equal(len(first.Records), 1)
	is.Equal(first.Records[0].WebSearchCalls, 2*llm.calls)
	calls := llm.calls
	var prior []job.Event
	for i, p := range evs {
		prior = append(prior, stored(int64(i+1), p))
		if p.EventType() == job.EventEntityCompleted {
			break
		}
	}
	second, _ := run(prior)
	is.Equal(llm.calls, calls) // the entity is not enriched again
	is.Equal(len(second.Records), 1)
	is.Equal(second.Records[0].WebSearchCalls, first.Records[0].WebSearchCalls)
}
