package job_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

// TestTrackerStampsCommonBlock: every event carries the reference's common
// block, counted from the events before it.
func TestTrackerStampsCommonBlock(t *testing.T) {
	tr := job.NewTracker(job.TypeEnrichment)
	tr.SetTotalModels(2)
	steps := []struct {
		p    job.Payload
		want job.Common
	}{
		{job.ModelStarted{Model: "a::x"}, job.Common{JobType: "single_enrichment", Status: job.Running, TotalModels: 2,
			RunningModels: []string{"a::x"}, CurrentModel: "a::x", TotalEntities: -1}},
		{job.ModelStarted{Model: "b::y"}, job.Common{JobType: "single_enrichment", Status: job.Running, TotalModels: 2,
			RunningModels: []string{"a::x", "b::y"}, CurrentModel: "b::y", TotalEntities: -1}},
		{job.Attempt{Model: "a::x", Expertise: "g", Attempt: 2, MaxAttempts: 5, Reason: "model_output_invalid: x"},
			job.Common{JobType: "single_enrichment", Status: job.Running, TotalModels: 2, RunningModels: []string{"a::x", "b::y"},
				CurrentModel: "a::x", CurrentAttempt: 2, MaxAttempts: 5, LastError: "model_output_invalid: x", TotalEntities: -1}},
		{job.Attempt{Model: "a::x", Expertise: "g", Attempt: 1, MaxAttempts: 5, Reason: "a first attempt has none"},
			job.Common{JobType: "single_enrichment", Status: job.Running, TotalModels: 2, RunningModels: []string{"a::x", "b::y"},
				CurrentModel: "a::x", CurrentAttempt: 1, MaxAttempts: 5, TotalEntities: -1}},
		{job.ModelCompleted{Model: "a::x", Success: true}, job.Common{JobType: "single_enrichment", Status: job.Running,
			TotalModels: 2, CompletedModels: 1, RunningModels: []string{"b::y"}, CurrentModel: "b::y", CurrentAttempt: 1,
			MaxAttempts: 5, TotalEntities: -1}},
		{job.ClassificationMismatchPause{}, job.Common{JobType: "single_enrichment", Status: job.Paused,
			TotalModels: 2, CompletedModels: 1, RunningModels: []string{"b::y"}, CurrentModel: "b::y", CurrentAttempt: 1,
			MaxAttempts: 5, TotalEntities: -1}},
		{job.JobFailed{Code: job.CodeInternal, Msg: "m"}, job.Common{JobType: "single_enrichment", Status: job.Failed,
			TotalModels: 2, CompletedModels: 1, RunningModels: []string{"b::y"}, CurrentModel: "b::y", CurrentAttempt: 1,
			MaxAttempts: 5, TotalEntities: -1}},
	}
	for _, st := range steps {
		t.Run(string(st.p.EventType()), func(t *testing.T) {
			is := is.New(t)
			d := tr.Stamp(job.NewDraft(st.p))
			is.Equal(d.Payload, st.p) // the payload stays as it is
			is.Equal(*d.Common, st.want)
		})
	}
	// A run that takes a job over counts the events read back from the log.
	is := is.New(t)
	again := job.NewTracker(job.TypeEnrichment)
	again.Observe(job.Event{Payload: job.ModelStarted{Model: "a::x"}})
	again.Observe(job.Event{Payload: job.Raw{Type: job.EventAttempt, Typed: job.Attempt{Model: "a::x", Attempt: 3, MaxAttempts: 5}}})
	again.Observe(job.Event{Payload: job.Raw{Type: "from_another_version", Data: []byte(`{"status":"failed"}`)}})
	c := again.Stamp(job.NewDraft(job.JobResumed{Attempt: 2, AfterEvent: 9})).Common
	is.Equal(c.CurrentAttempt, 3)
	is.Equal(c.RunningModels, []string{"a::x"})
	is.Equal(c.Status, job.Running)
}

func TestTrackerCountsEntities(t *testing.T) {
	is := is.New(t)
	tr := job.NewTracker(job.TypeBatchEnrichment)
	d := tr.Stamp(job.NewDraft(job.EntityStarted{Index: 0, Label: "a"}))
	is.Equal(d.Common.TotalEntities, -1) // unknown before batch_started
	tr.Stamp(job.NewDraft(job.BatchStarted{Total: 4, Selected: 3}))
	tr.Stamp(job.NewDraft(job.OfEntity(job.EntityCompleted{Index: 0, Success: true}, 0)))
	tr.Stamp(job.NewDraft(job.EntityCompleted{Index: 1}))
	d = tr.Stamp(job.NewDraft(job.OfEntity(job.EntitySkipped{Index: 2, Code: job.SkipCancelled}, 2)))
	is.Equal(*d.Common, job.Common{JobType: "batch_enrichment", Status: job.Running, RunningModels: []string{}, TotalEntities: 4,
		CompletedEntities: 1, FailedEntities: 1, SkippedEntities: 1})
	again := job.NewTracker(job.TypeBatchEnrichment)
	again.Observe(job.Event{Payload: job.BatchStarted{Total: 4}})
	is.Equal(again.Stamp(job.NewDraft(job.BatchCompleted{})).Common.TotalEntities, 4)
}

// TestStampedRunningModelsStay: an event's running_models is the list as it
// was when the event was stamped, whatever runs or ends after.
func TestStampedRunningModelsStay(t *testing.T) {
	is := is.New(t)
	tr := job.NewTracker(job.TypeEnrichment)
	a := tr.Stamp(job.NewDraft(job.ModelStarted{Model: "a::x"}))
	b := tr.Stamp(job.NewDraft(job.ModelStarted{Model: "b::y"}))
	c := tr.Stamp(job.NewDraft(job.ModelCompleted{Model: "a::x", Success: true}))
	d := tr.Stamp(job.NewDraft(job.ModelStarted{Model: "c::z"}))
	is.Equal(a.Common.RunningModels, []string{"a::x"})
	is.Equal(b.Common.RunningModels, []string{"a::x", "b::y"})
	is.Equal(c.Common.RunningModels, []string{"b::y"})
	is.Equal(d.Common.RunningModels, []string{"b::y", "c::z"})
}
