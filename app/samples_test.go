package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/sample"
	"github.com/entityenrich/enrich/ports"
)

const sampleAnswer = `{"sample": {"name": "x", "n": 1}, "questions": [{"id": "q1", "text": "which?", "default_option_id": "a",
  "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]}]}`

func runSamples(t *testing.T, llm ports.LLM, req app.SampleRequest, prior []job.Event) (ports.Outcome, []job.Payload) {
	t.Helper()
	enr, _ := newEnrichment(t, llm)
	svc := app.NewSampleGenerator(enr.Requests, enr.Models, enr.Calls, enr.Clock, system.IDs{}, enr.Log, nil)
	body, _ := jobcodec.New().EncodeSample(req)
	var mu sync.Mutex
	var evs []job.Payload
	w := &ports.Work{Job: &job.Job{ID: "j", OrgID: "org", Type: job.TypeSampleGeneration, Request: body}, Prior: prior,
		Publish: func(p job.Payload) { mu.Lock(); evs = append(evs, p); mu.Unlock() }}
	w.Answers, w.Continued = job.LastContinue(prior)
	return svc.Run(context.Background(), w), evs
}

// stored is an event of payload p as read back from a log.
func stored(seq int64, p job.Payload) job.Event {
	codec := jobcodec.Events{}
	e := job.Event{JobID: "j", Seq: seq, Type: p.EventType(), Payload: p}
	b, _ := codec.Encode(e)
	e.Payload, e.Common, _ = codec.Decode(e.Type, b)
	return e
}

func count(n int) *int { return &n }

// TestSampleRunPausesOnQuestions: questions without auto_answer pause the
// job with them and the request's timeout; with auto_answer the defaults
// are taken and every sample is made, each call naming its task.
func TestSampleRunPausesOnQuestions(t *testing.T) {
	is := is.New(t)
	llm := &scriptLLM{answer: sampleAnswer}
	secs := 42
	out, evs := runSamples(t, llm, app.SampleRequest{EntityType: "thing", SampleCount: count(3), PauseTimeoutSeconds: &secs}, nil)
	is.True(out.Pause != nil)
	is.Equal(out.Pause.Timeout, 42*time.Second)
	p, ok := out.Pause.Event.(job.SampleClarificationPause)
	is.True(ok)
	is.Equal(p.Questions[0].ID, "q1")
	is.Equal(p.TimeoutSeconds, 42)
	is.Equal(len(out.Usage), 1) // the call before the pause is paid for
	is.Equal(evs[len(evs)-1].EventType(), job.EventSampleInstanceRoster)

	yes := true
	llm = &scriptLLM{answer: sampleAnswer}
	out, evs = runSamples(t, llm, app.SampleRequest{EntityType: "thing", SampleCount: count(3), AutoAnswer: &yes}, nil)
	is.True(out.Pause == nil && out.Failure == nil)
	is.Equal(len(llm.reqs), 3)
	for _, r := range llm.reqs {
		is.Equal(r.Task, ports.TaskSampleGeneration)
	}
	var res map[string]any
	is.NoErr(json.Unmarshal(out.Result, &res))
	is.Equal(len(res["samples"].([]any)), 3)
	is.Equal(res["clarifications"], map[string]any{"q1": map[string]any{"option_ids": []any{"a"}, "text": ""}})
	is.Equal(evs[len(evs)-1].EventType(), job.EventModelCompleted)
}

// TestSampleRunResumes: continued, sample 1 is made again with the answers
// and no questions; a run that takes a job over reuses the samples its
// progress events carry.
func TestSampleRunResumes(t *testing.T) {
	is := is.New(t)
	q := []job.SampleQuestion{{ID: "q1", Text: "which?", DefaultOptionID: "a", Options: []job.SampleOption{{ID: "a"}, {ID: "b"}}}}
	prior := []job.Event{
		stored(1, job.SampleInstanceRoster{Instances: []string{"a", "b", "c"}}),
		stored(2, job.SampleClarificationPause{Questions: q, TimeoutSeconds: 60}),
		stored(3, job.JobContinued{Answers: job.Answers{"q1": {OptionIDs: []string{"b"}}}, Round: 1}),
	}
	llm := &scriptLLM{answer: sampleAnswer}
	out, evs := runSamples(t, llm, app.SampleRequest{EntityType: "thing", SampleCount: count(3)}, prior)
	is.True(out.Pause == nil && out.Failure == nil) // no second pause
	is.Equal(len(llm.reqs), 3)
	first := llm.reqs[0].Messages[len(llm.reqs[0].Messages)-1].Content
	is.True(strings.Contains(first, "Clarified: which? -> b"))
	p, ok := sample.ParseParams(first)
	is.True(ok)
	is.True(!p.AskQuestions)
	for _, e := range evs {
		is.True(e.EventType() != job.EventSampleInstanceRoster) // not written twice
	}

	// A takeover after samples 1 and 3 were done makes sample 2 only.
	prior = append(prior,
		stored(4, job.SampleInstanceProgress{Index: 0, Completed: 1, Total: 3, Sample: map[string]any{"name": "one", "n": 1}}),
		stored(5, job.SampleInstanceProgress{Index: 2, Completed: 2, Total: 3, Sample: map[string]any{"name": "three", "n": 3}}))
	llm = &scriptLLM{answer: `{"sample": {"name": "two", "n": 2, "extra": true}}`}
	out, evs = runSamples(t, llm, app.SampleRequest{EntityType: "thing", SampleCount: count(3)}, prior)
	is.True(out.Failure == nil)
	is.Equal(len(llm.reqs), 1)
	var res struct{ Samples []map[string]any }
	is.NoErr(json.Unmarshal(out.Result, &res))
	is.Equal(res.Samples, []map[string]any{{"name": "one", "n": 1.0}, {"name": "two", "n": 2.0}, {"name": "three", "n": 3.0}})
	prog := 0
	for _, e := range evs {
		if pr, ok := e.(job.SampleInstanceProgress); ok {
			prog++
			is.Equal(pr.Completed, 3)
		}
	}
	is.Equal(prog, 1)
}

// TestSampleRunFailures: a sample missing the field set is retried, then
// fails; a permanent provider failure fails at once with its code.
func TestSampleRunFailures(t *testing.T) {
	is := is.New(t)
	yes := true
	llm := &scriptLLM{answer: `{"sample": {"name": "x"}, "questions": []}`}
	// Sample 1 fixes {name}; later answers lack nothing, so the job works...
	out, _ := runSamples(t, llm, app.SampleRequest{EntityType: "company", SampleCount: count(2), AutoAnswer: &yes}, nil)
	is.True(out.Failure == nil)
	// ...but an answer without the field set's fields is refused 3 times.
	prior := []job.Event{stored(1, job.SampleInstanceRoster{Instances: []string{"a", "b"}}),
		stored(2, job.SampleInstanceProgress{Index: 0, Sample: map[string]any{"name": "x", "size": 1}})}
	llm = &scriptLLM{answer: `{"sample": {"name": "y"}}`}
	out, _ = runSamples(t, llm, app.SampleRequest{EntityType: "company", SampleCount: count(2), AutoAnswer: &yes}, prior)
	is.True(out.Failure != nil)
	is.Equal(out.Failure.Code, job.CodeOutputInvalid)
	is.True(strings.Contains(out.Failure.Msg, "size"))
	is.Equal(len(llm.reqs), sample.MaxRetries)

	llm = &scriptLLM{err: fmt.Errorf("gone: %w", ports.ErrModelRetired)}
	out, _ = runSamples(t, llm, app.SampleRequest{EntityType: "company", AutoAnswer: &yes}, nil)
	is.Equal(out.Failure.Code, job.CodeModelRetired)
	is.Equal(len(llm.reqs), 1)
}
