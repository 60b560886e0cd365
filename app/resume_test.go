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
	"github.com/entityenrich/enrich/ports"
)

// resumedRun is one worker's run of a job taken over after prior, as the
// job runtime makes it: its tracker has seen prior, and stamps what the run
// publishes.
type resumedRun struct {
	mu      sync.Mutex
	tracker *job.Tracker
	evs     []job.Payload
}

func newResumedRun(t job.Type, prior []job.Event) *resumedRun {
	r := &resumedRun{tracker: job.NewTracker(t)}
	for _, ev := range prior {
		r.tracker.Observe(ev.Type, ev.Fields())
	}
	return r
}

func (r *resumedRun) work(t job.Type, body []byte, prior []job.Event) *ports.Work {
	return &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: t, Request: body, Attempt: 2}, Prior: prior, Tracker: r.tracker,
		Publish: func(p job.Payload) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.evs = append(r.evs, p)
			r.tracker.Stamp(job.NewDraft(p))
		}}
}

// end is the common block of the job's terminal event, as the runtime
// stamps it.
func (r *resumedRun) end() *job.Common {
	return r.tracker.Stamp(job.NewDraft(job.JobCompleted{})).Common
}

func (r *resumedRun) count(t job.EventType) int {
	n := 0
	for _, p := range r.evs {
		if p.EventType() == t {
			n++
		}
	}
	return n
}

// upTo is the first run's events as stored, up to and including the last
// one of type last (none: all of them).
func upTo(evs []job.Payload, last job.EventType) []job.Event {
	end := len(evs)
	for i, p := range evs {
		if p.EventType() == last {
			end = i + 1
		}
	}
	var prior []job.Event
	for i, p := range evs[:end] {
		prior = append(prior, stored(int64(i+1), p))
	}
	return prior
}

// TestResumedEnrichmentAnnouncesEachModelOnce: a worker that takes over a
// job whose models all completed (model_completed written, the job's end
// not) neither calls nor announces them again, a failed one included, and
// the progress counters stay true.
func TestResumedEnrichmentAnnouncesEachModelOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers map[string]string
		failed  int
	}{
		{"both models succeeded", map[string]string{"p::a": `{"name":"Acme","n":10}`, "p::b": `{"name":"Acme","n":10}`}, 0},
		{"one model failed", map[string]string{"p::a": `not json`, "p::b": `{"name":"Acme","n":10}`}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			llm := &byModelLLM{answers: tc.answers}
			svc := fusionService(t, llm)
			req := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch", Models: []string{"p::a", "p::b"},
				Strategy: "single_pass"}
			first, evs := runWork(t, svc, req, nil)
			is.True(first.Failure == nil)
			calls := llm.enrich

			// The first worker died after both model_completed events.
			prior := upTo(evs, job.EventModelCompleted)
			body, _ := jobcodec.New().EncodeEnrich(req)
			run := newResumedRun(job.TypeEnrichment, prior)
			second := svc.Run(context.Background(), run.work(job.TypeEnrichment, body, prior))
			is.True(second.Failure == nil)
			is.Equal(llm.enrich, calls)                             // no model is called again
			is.Equal(run.count(job.EventModelCompleted), 0)         // nor announced again
			is.Equal(len(second.Completed.FailedModels), tc.failed) // the failure stands
			is.Equal(run.end().CompletedModels, 2)                  // completed_models
			is.Equal(run.end().TotalModels, 2)                      // of total_models
			is.Equal(len(second.Records), len(first.Records))
		})
	}
}

// TestResumedBatchAnnouncesEachModelOnce: the same for an entity of a batch
// whose model completed before the takeover, its entity_completed not yet
// written.
func TestResumedBatchAnnouncesEachModelOnce(t *testing.T) {
	is := is.New(t)
	llm := &byModelLLM{answers: map[string]string{"p::a": `{"name":"Acme","n":10}`}}
	svc := fusionService(t, llm)
	req := app.BatchRequest{EnrichRequest: app.EnrichRequest{SchemaID: "sch", Models: []string{"p::a"}, Strategy: "single_pass"},
		Entities: []json.RawMessage{json.RawMessage(`{"name":"Acme"}`), json.RawMessage(`{"name":"Beta"}`)}}
	body, err := jobcodec.New().EncodeBatch(req)
	is.NoErr(err)
	first := newResumedRun(job.TypeBatchEnrichment, nil)
	out := svc.BatchRunner().Run(context.Background(), first.work(job.TypeBatchEnrichment, body, nil))
	is.True(out.Failure == nil)
	calls := llm.enrich

	// The first worker died after the models completed, before any
	// entity_completed.
	var prior []job.Event
	for _, p := range first.evs {
		if p.EventType() == job.EventEntityCompleted || p.EventType() == job.EventBatchCompleted {
			continue
		}
		prior = append(prior, stored(int64(len(prior)+1), p))
	}
	is.Equal(first.count(job.EventModelCompleted), 2)
	run := newResumedRun(job.TypeBatchEnrichment, prior)
	second := svc.BatchRunner().Run(context.Background(), run.work(job.TypeBatchEnrichment, body, prior))
	is.True(second.Failure == nil)
	is.Equal(llm.enrich, calls)                     // no entity's model is called again
	is.Equal(run.count(job.EventModelCompleted), 0) // nor announced again
	is.Equal(run.count(job.EventEntityCompleted), 2)
	is.Equal(run.end().CompletedModels, 2)
	is.Equal(run.end().TotalModels, 2)
	is.Equal(len(second.Records), 2)
}

// TestResumedSchemaJobAnnouncesItsModelOnce: a schema job taken over after
// its model_completed reuses that answer: no call, no second
// model_started or model_completed, the same schema.
func TestResumedSchemaJobAnnouncesItsModelOnce(t *testing.T) {
	is := is.New(t)
	llm := &seqLLM{answers: []string{goodAnswer}}
	svc, _ := newSchemaGen(t, llm)
	req := app.GenerateRequest{EntitySamples: json.RawMessage(`[{"name":"Acme","founded":1947},{"name":"Globex"}]`)}
	first, evs := runSchemaJob(t, svc, job.TypeSchemaGeneration, req)
	is.True(first.Failure == nil)
	is.Equal(len(llm.reqs), 1)

	prior := upTo(evs, job.EventModelCompleted)
	body, _ := jobcodec.New().EncodeGenerate(req)
	run := newResumedRun(job.TypeSchemaGeneration, prior)
	second := svc.Run(context.Background(), run.work(job.TypeSchemaGeneration, body, prior))
	is.True(second.Failure == nil)
	is.Equal(len(llm.reqs), 1) // the model is not called again
	is.Equal(run.count(job.EventModelCompleted), 0)
	is.Equal(run.count(job.EventModelStarted), 0)
	is.Equal(run.end().CompletedModels, 1)
	is.Equal(second.Completed.Result["schema"], first.Completed.Result["schema"])
	is.Equal(second.Records[0].ID, first.Records[0].ID)
}
