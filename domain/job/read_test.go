package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

// roundTrip is an event's data as the log gives it back.
func roundTrip(t *testing.T, p job.Payload) map[string]any {
	t.Helper()
	b, err := json.Marshal(p.Fields())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReaders: each reader gets back, from the data its payload's Fields
// wrote (as decoded from the log), the members its readers use.
func TestReaders(t *testing.T) {
	res := map[string]any{"name": "Acme"}
	for _, tt := range []struct {
		name string
		p    job.Payload
		read func(map[string]any) (any, error)
		want any
	}{
		{"expertise completed", job.ExpertiseCompleted{Model: "p:m", Key: "k", Name: "K", Success: true, PartialResult: res,
			InputTokens: 1, OutputTokens: 2, Cost: 3},
			func(m map[string]any) (any, error) { return job.ReadExpertiseCompleted(m) },
			job.ExpertiseCompleted{Model: "p:m", Key: "k", Success: true, PartialResult: res, InputTokens: 1, OutputTokens: 2, Cost: 3}},
		{"expertise completed with searches", job.ExpertiseCompleted{Model: "p:m", Key: "k", Success: true, PartialResult: res,
			InputTokens: 1, OutputTokens: 2, Cost: 3, WebSearchCalls: 2},
			func(m map[string]any) (any, error) { return job.ReadExpertiseCompleted(m) },
			job.ExpertiseCompleted{Model: "p:m", Key: "k", Success: true, PartialResult: res, InputTokens: 1, OutputTokens: 2, Cost: 3,
				WebSearchCalls: 2}},
		{"model completed", job.ModelCompleted{Model: "p:m", Success: true, Result: res, RecordID: "r", Cost: 3, InputTokens: 1,
			OutputTokens: 2, ProcessingMS: 4, Breakdown: []job.Breakdown{{Key: "k"}}},
			func(m map[string]any) (any, error) { return job.ReadModelCompleted(m) },
			job.ModelCompleted{Model: "p:m", Success: true, Result: res, RecordID: "r", Cost: 3, InputTokens: 1, OutputTokens: 2, ProcessingMS: 4}},
		{"model failed", job.ModelCompleted{Model: "p:m", ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid},
			func(m map[string]any) (any, error) { return job.ReadModelCompleted(m) },
			job.ModelCompleted{Model: "p:m", ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid}},
		{"samples completed", job.SamplesCompleted{Model: "p:m", Samples: []map[string]any{res}, Requested: 2, Note: "n",
			InputTokens: 1, OutputTokens: 2, Cost: 3, ProcessingMS: 4},
			func(m map[string]any) (any, error) { return job.ReadSamplesCompleted(m) },
			job.SamplesCompleted{Model: "p:m", Samples: []map[string]any{res}, Requested: 2, Note: "n", InputTokens: 1,
				OutputTokens: 2, Cost: 3, ProcessingMS: 4}},
		{"completed", job.JobCompleted{Result: res, RecordID: "r", RecordIDs: []string{"r"}, Cost: 3, Several: true,
			FailedModels: []string{"x:y"}, Fused: true, Fusion: map[string]any{"n": 1.0}, SourceModels: []string{"a:b"}},
			func(m map[string]any) (any, error) { return job.ReadCompleted(m) },
			job.JobCompleted{Result: res, RecordID: "r", RecordIDs: []string{"r"}, Cost: 3, FailedModels: []string{"x:y"},
				Fused: true, Fusion: map[string]any{"n": 1.0}, SourceModels: []string{"a:b"}}},
		{"failed", job.JobFailed{Code: job.CodeOutputInvalid, Msg: "boom"},
			func(m map[string]any) (any, error) { return job.ReadEnded(m) },
			job.Ended{State: job.Failed, Code: job.CodeOutputInvalid, Message: "boom"}},
		{"cancelled", job.JobCancelled{Reason: "asked"},
			func(m map[string]any) (any, error) { return job.ReadEnded(m) },
			job.Ended{State: job.Cancelled, Reason: "asked"}},
		{"entity completed", job.EntityCompleted{Index: 1, Success: false, Results: []job.EntityResult{{Model: "p:m", Cost: 3}},
			Error: "boom", ErrorCode: job.CodeOutputInvalid},
			func(m map[string]any) (any, error) { return job.ReadEntityCompleted(m) },
			job.EntityCompleted{Results: []job.EntityResult{{Model: "p:m", Cost: 3, CostUSD: 0.000003}}, Error: "boom",
				ErrorCode: job.CodeOutputInvalid}},
		{"entity completed with searches", job.EntityCompleted{Index: 1, Success: true,
			Results: []job.EntityResult{{Model: "p:m", Success: true, RecordID: "r", Cost: 3, WebSearchCalls: 2}}},
			func(m map[string]any) (any, error) { return job.ReadEntityCompleted(m) },
			job.EntityCompleted{Success: true, Results: []job.EntityResult{{Model: "p:m", Success: true, RecordID: "r", Cost: 3,
				CostUSD: 0.000003, WebSearchCalls: 2}}}},
		{"arbitration completed", job.ArbitrationCompleted{Model: "p:m", Success: true,
			Decisions: []job.Decision{{Path: "a", Value: "x"}}, Cost: 3, InputTokens: 1, OutputTokens: 2},
			func(m map[string]any) (any, error) { return job.ReadArbitrationCompleted(m) },
			job.ArbitrationCompleted{Model: "p:m", Success: true, Decisions: []job.Decision{{Path: "a", Value: "x"}}, Cost: 3,
				InputTokens: 1, OutputTokens: 2}},
		{"sample progress", job.SampleInstanceProgress{Completed: 1, Total: 2, Index: 1, Instance: "i", Sample: res,
			InputTokens: 1, OutputTokens: 2, Cost: 3},
			func(m map[string]any) (any, error) { return job.ReadSampleInstanceProgress(m) },
			job.SampleInstanceProgress{Index: 1, Instance: "i", Sample: res, InputTokens: 1, OutputTokens: 2, Cost: 3}},
		{"sample pause", job.SampleClarificationPause{Questions: []job.SampleQuestion{{ID: "q", Label: "Q", Text: "?",
			Options: []job.SampleOption{{ID: "o", Label: "O"}}, DefaultOptionID: "o"}}, Round: 1},
			func(m map[string]any) (any, error) { return job.ReadSampleClarificationPause(m) },
			job.SampleClarificationPause{Questions: []job.SampleQuestion{{ID: "q", Label: "Q", Text: "?",
				Options: []job.SampleOption{{ID: "o", Label: "O"}}, DefaultOptionID: "o"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := tt.read(roundTrip(t, tt.p))
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

// TestReadersOfBuiltEvents: an event built in this process is read from its
// typed payload, with exactly what reading its data back from the log
// gives (compared as JSON: numbers in the result are Go ints on one side,
// float64 on the other).
func TestReadersOfBuiltEvents(t *testing.T) {
	type summary struct {
		Method string `json:"method"`
		Fields int    `json:"fields"`
	}
	res := map[string]any{"name": "Acme", "founded": 1907, "tags": []string{"a"}}
	same := func(t *testing.T, got, want any) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("built: %s\nread back: %s", g, w)
		}
	}
	for _, p := range []job.ModelCompleted{
		{Model: "m", Success: true, Result: res, RecordID: "r1", Cost: 7, InputTokens: 3, OutputTokens: 4, ProcessingMS: 9,
			Breakdown: []job.Breakdown{{Key: "k", Name: "K", Success: true, Tokens: 7, Cost: 7}}, ErrorMessage: "ignored"},
		{Model: "m", PartialSuccess: true, Result: res, RecordID: "r1", ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid},
	} {
		ev := job.Number("j", 0, time.Now(), []job.Draft{job.NewDraft(p)})[0]
		got, err := job.ModelCompletedOf(ev)
		is.New(t).NoErr(err)
		want, err := job.ReadModelCompleted(roundTrip(t, p))
		is.New(t).NoErr(err)
		same(t, got, want)
		fromLog, err := job.ModelCompletedOf(job.Event{Type: ev.Type, Data: roundTrip(t, p)})
		is.New(t).NoErr(err)
		same(t, fromLog, want)
	}
	for _, p := range []job.JobCompleted{
		{Result: res, RecordID: "r1", RecordIDs: []string{"r1"}, Cost: 5, FailedModels: []string{"x"}, Results: res},
		{Result: res, RecordIDs: []string{}, Several: true, Results: map[string]any{"a": res}, FailedModels: []string{"b"}},
		{Result: res, RecordID: "f", Several: true, Fused: true, Fusion: summary{Method: "vote", Fields: 3}, SourceModels: []string{"a", "b"}},
		{Result: res, Fused: true, Fusion: map[string]any{"method": "vote"}},
		{Fusion: summary{}, SourceModels: []string{"unfused"}},
	} {
		ev := job.Number("j", 0, time.Now(), []job.Draft{job.NewDraft(p)})[0]
		got, err := job.CompletedOf(ev)
		is.New(t).NoErr(err)
		want, err := job.ReadCompleted(roundTrip(t, p))
		is.New(t).NoErr(err)
		same(t, got, want)
	}
}

// TestEndedOfBuiltEvents: a terminal event built here ends as its data read
// back says.
func TestEndedOfBuiltEvents(t *testing.T) {
	is := is.New(t)
	for _, p := range []job.Payload{
		job.JobCompleted{Result: map[string]any{"a": 1}},
		job.JobFailed{Code: job.CodeOutputInvalid, Msg: "bad"},
		job.JobCancelled{Reason: "user"},
	} {
		// Stamped with the progress block, as the engine publishes it.
		d := job.NewTracker(job.TypeEnrichment).Stamp(job.NewDraft(p))
		is.Equal(d.Payload, p)
		ev := job.Number("j", 0, time.Now(), []job.Draft{d})[0]
		got, err := job.EndedOf(ev)
		is.NoErr(err)
		want, err := job.ReadEnded(roundTrip(t, p))
		is.NoErr(err)
		is.Equal(got, want)
	}
}
