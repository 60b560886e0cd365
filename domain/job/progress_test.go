package job_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

// TestTrackerStampsCommonBlock: every event carries the reference's common
// block, counted from the events before it; a payload's own fields win.
func TestTrackerStampsCommonBlock(t *testing.T) {
	tr := job.NewTracker(job.TypeEnrichment)
	tr.SetTotalModels(2)
	steps := []struct {
		p     job.Payload
		check func(is *is.I, d map[string]any)
	}{
		{job.ModelStarted{Model: "a::x"}, func(is *is.I, d map[string]any) {
			is.Equal(d["job_type"], "single_enrichment")
			is.Equal(d["running_models"], []string{"a::x"})
			is.Equal(d["current_model"], "a::x")
			is.Equal(d["total_models"], 2)
			is.Equal(d["is_paused"], false)
			is.Equal(d["last_error_summary"], nil)
			is.Equal(d["total_entities"], nil)
		}},
		{job.ModelStarted{Model: "b::y"}, func(is *is.I, d map[string]any) {
			is.Equal(d["running_models"], []string{"a::x", "b::y"})
		}},
		{job.Attempt{Model: "a::x", Expertise: "g", Attempt: 2, MaxAttempts: 5, Reason: "model_output_invalid: x"}, func(is *is.I, d map[string]any) {
			is.Equal(d["current_attempt"], 2)
			is.Equal(d["max_attempts"], 5)
			is.Equal(d["last_error_summary"], "model_output_invalid: x")
			is.Equal(d["current_model"], "a::x")
		}},
		{job.ModelCompleted{Model: "a::x", Success: true}, func(is *is.I, d map[string]any) {
			is.Equal(d["completed_models"], 1)
			is.Equal(d["running_models"], []string{"b::y"})
			is.Equal(d["success"], true) // the payload's own fields stay
		}},
		{job.JobFailed{Code: job.CodeInternal, Msg: "m"}, func(is *is.I, d map[string]any) {
			is.Equal(d["status"], "failed")
			is.Equal(d["error_code"], "internal_error")
		}},
	}
	for _, st := range steps {
		t.Run(string(st.p.EventType()), func(t *testing.T) {
			st.check(is.New(t), tr.Stamp(job.NewDraft(st.p)).Fields())
		})
	}
	// A run that takes a job over counts the events read back from the log.
	is := is.New(t)
	again := job.NewTracker(job.TypeEnrichment)
	again.Observe(job.EventModelStarted, map[string]any{"model": "a::x", "status": "running"})
	again.Observe(job.EventAttempt, map[string]any{"model": "a::x", "attempt": float64(3), "max_attempts": float64(5)})
	d := again.Stamp(job.NewDraft(job.JobResumed{Attempt: 2, AfterEvent: 9})).Fields()
	is.Equal(d["current_attempt"], 3)
	is.Equal(d["running_models"], []string{"a::x"})
	is.Equal(d["after_event"], int64(9))
}

func TestTrackerCountsEntities(t *testing.T) {
	is := is.New(t)
	tr := job.NewTracker(job.TypeBatchEnrichment)
	d := tr.Stamp(job.NewDraft(job.EntityStarted{Index: 0, Label: "a"}))
	is.Equal(d.Fields()["total_entities"], nil) // unknown before batch_started
	tr.Stamp(job.NewDraft(job.BatchStarted{Total: 4, Selected: 3}))
	tr.Stamp(job.NewDraft(job.EntityCompleted{Index: 0, Success: true}))
	tr.Stamp(job.NewDraft(job.EntityCompleted{Index: 1}))
	// As read back from the log (numbers are float64).
	again := job.NewTracker(job.TypeBatchEnrichment)
	again.Observe(job.EventBatchStarted, map[string]any{"total_entities": float64(4)})
	d = tr.Stamp(job.NewDraft(job.OfEntity(job.EntitySkipped{Index: 2, Code: job.SkipCancelled}, 2)))
	is.Equal(d.Fields()["entity_index"], 2)
	is.Equal(d.Fields()["job_type"], "batch_enrichment")
	is.Equal(d.Fields()["total_entities"], 4)
	is.Equal(d.Fields()["completed_entities"], 1)
	is.Equal(d.Fields()["failed_entities"], 1)
	is.Equal(d.Fields()["skipped_entities"], 1)
	is.Equal(again.Stamp(job.NewDraft(job.BatchCompleted{})).Fields()["total_entities"], 4)
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
	is.Equal(a.Fields()["running_models"], []string{"a::x"})
	is.Equal(b.Fields()["running_models"], []string{"a::x", "b::y"})
	is.Equal(c.Fields()["running_models"], []string{"b::y"})
	is.Equal(d.Fields()["running_models"], []string{"b::y", "c::z"})
}
