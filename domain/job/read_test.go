package job_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

func event(p job.Payload) job.Event {
	return job.Number("j", 0, time.Now(), []job.Draft{job.NewDraft(p)})[0]
}

// TestReaders: a reader gets its payload back from an event as published,
// tagged with a batch entity, or as a log reader gives back one it could
// not type; an event of another payload is an error.
func TestReaders(t *testing.T) {
	ec := job.ExpertiseCompleted{Model: "p:m", Key: "k", Success: true, PartialResult: map[string]any{"a": 1.0}, Cost: 3}
	for _, tt := range []struct {
		name string
		p    job.Payload
		ok   bool
	}{
		{"published", ec, true},
		{"of an entity", job.OfEntity(ec, 2), true},
		{"raw", job.Raw{Type: job.EventExpertiseCompleted, Data: []byte(`{}`), Typed: ec}, true},
		{"raw of an entity", job.Raw{Type: job.EventExpertiseCompleted, Typed: job.OfEntity(ec, 2)}, true},
		{"unknown", job.Raw{Type: job.EventExpertiseCompleted, Data: []byte(`{}`)}, false},
		{"another payload", job.ModelCompleted{Model: "p:m"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := job.ReadExpertiseCompleted(event(tt.p))
			is.Equal(err == nil, tt.ok)
			if tt.ok {
				is.Equal(got.PartialResult, ec.PartialResult)
				is.Equal(got, ec)
			}
		})
	}
}

// TestReadersAsFarAsCarried: ModelCompletedOf and CompletedOf read what the
// event carries on the wire, nothing else.
func TestReadersAsFarAsCarried(t *testing.T) {
	is := is.New(t)
	res := map[string]any{"name": "Acme"}
	m, err := job.ModelCompletedOf(event(job.ModelCompleted{Model: "m", Success: true, Result: res, RecordID: "r1", Cost: 7,
		Breakdown: []job.Breakdown{{Key: "k"}}, ErrorMessage: "ignored"}))
	is.NoErr(err)
	is.Equal(m, job.ModelCompleted{Model: "m", Success: true, Result: res, RecordID: "r1", Cost: 7})
	m, err = job.ModelCompletedOf(event(job.ModelCompleted{Model: "m", PartialSuccess: true, Result: res, RecordID: "r1",
		ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid}))
	is.NoErr(err)
	is.Equal(m, job.ModelCompleted{Model: "m", PartialSuccess: true, ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid})

	c, err := job.CompletedOf(event(job.JobCompleted{Result: res, RecordID: "r1", FailedModels: []string{"x"}, Results: res,
		Fusion: "unfused", SourceModels: []string{"a"}}))
	is.NoErr(err)
	is.Equal(c, job.JobCompleted{Result: res, RecordID: "r1"})
	c, err = job.CompletedOf(event(job.JobCompleted{Result: res, Several: true, Results: res, FailedModels: []string{"b"},
		Fused: true, Fusion: map[string]any{"method": "vote"}, SourceModels: []string{"a", "b"}}))
	is.NoErr(err)
	is.Equal(c, job.JobCompleted{Result: res, FailedModels: []string{"b"}, Fused: true, Fusion: map[string]any{"method": "vote"},
		SourceModels: []string{"a", "b"}})
	_, err = job.CompletedOf(event(job.JobFailed{}))
	is.True(err != nil)
}

// TestEndedOf: a terminal event says how the job ended; any other event is
// an error.
func TestEndedOf(t *testing.T) {
	for _, tt := range []struct {
		p    job.Payload
		want job.Ended
	}{
		{job.JobCompleted{Result: map[string]any{"a": 1}}, job.Ended{State: job.Completed}},
		{job.JobFailed{Code: job.CodeOutputInvalid, Msg: "bad"}, job.Ended{State: job.Failed, Code: job.CodeOutputInvalid, Message: "bad"}},
		{job.JobCancelled{Reason: "user"}, job.Ended{State: job.Cancelled, Reason: "user"}},
		{job.Raw{Type: job.EventCancelled, Typed: job.JobCancelled{Reason: "old"}}, job.Ended{State: job.Cancelled, Reason: "old"}},
	} {
		t.Run(string(tt.p.EventType()), func(t *testing.T) {
			is := is.New(t)
			// Stamped with the progress block, as the runtime publishes it.
			d := job.NewTracker(job.TypeEnrichment).Stamp(job.NewDraft(tt.p))
			is.Equal(d.Payload, tt.p)
			got, err := job.EndedOf(job.Number("j", 0, time.Now(), []job.Draft{d})[0])
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
	_, err := job.EndedOf(event(job.JobError{}))
	is.New(t).True(err != nil)
}

// TestEntityIndex: an event's batch entity is its tag, or the index its
// payload carries.
func TestEntityIndex(t *testing.T) {
	two := 2
	for _, tt := range []struct {
		name string
		p    job.Payload
		want int
		ok   bool
	}{
		{"tagged", job.OfEntity(job.ExpertiseStarted{}, 3), 3, true},
		{"tagged raw", job.Raw{Typed: job.OfEntity(job.ExpertiseStarted{}, 3)}, 3, true},
		{"model started", job.ModelStarted{EntityIndex: 1}, 1, true},
		{"entity skipped", job.EntitySkipped{Index: 4}, 4, true},
		{"fusion of an entity", job.FusionStarted{EntityIndex: &two}, 2, true},
		{"fusion of a single enrichment", job.FusionCompleted{}, 0, false},
		{"untagged", job.ExpertiseStarted{}, 0, false},
		{"unknown", job.Raw{Type: "x"}, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			i, ok := job.EntityIndex(job.Event{Payload: tt.p})
			is.Equal(ok, tt.ok)
			is.Equal(i, tt.want)
		})
	}
}

// TestStatusOf: the job's status as of each kind of event.
func TestStatusOf(t *testing.T) {
	is := is.New(t)
	is.Equal(job.StatusOf(job.ModelStarted{}), job.Running)
	is.Equal(job.StatusOf(job.JobContinued{}), job.Running)
	is.Equal(job.StatusOf(job.JobCompleted{}), job.Completed)
	is.Equal(job.StatusOf(job.JobFailed{}), job.Failed)
	is.Equal(job.StatusOf(job.PartialCancellation("r", nil)[0].Payload), job.Cancelled)
	is.Equal(job.StatusOf(job.ClassificationMismatchPause{}), job.Paused)
	is.Equal(job.StatusOf(job.OfEntity(job.SampleClarificationPause{}, 1)), job.Paused)
}
