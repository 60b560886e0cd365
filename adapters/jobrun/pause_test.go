package jobrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// pauseRunner pauses a fresh job with one question; continued, it completes
// with the answers it was given and the events it saw before.
type pauseRunner struct {
	timeout time.Duration
	runs    chan *ports.Work
}

func (r pauseRunner) Run(_ context.Context, w *ports.Work) ports.Outcome {
	r.runs <- w
	if !w.Continued {
		w.Publish(job.SampleInstanceRoster{Instances: []string{"a", "b"}})
		return ports.Outcome{Pause: &ports.Pause{Timeout: r.timeout, Event: job.SampleClarificationPause{
			EntityTitle: "thing", Round: 0, SourceMode: "describe_subject", TimeoutSeconds: int(r.timeout / time.Second),
			Questions: []job.SampleQuestion{{ID: "q1", Text: "which?", Options: []job.SampleOption{{ID: "x", Label: "X"}}, DefaultOptionID: "x"}}}}}
	}
	res, _ := json.Marshal(map[string]any{"answers": w.Answers, "prior": len(w.Prior)})
	return ports.Outcome{Result: res, Completed: job.JobCompleted{Result: map[string]any{"answers": w.Answers}}}
}

func newPauseWorld(t *testing.T, timeout time.Duration, opts ...func(*jobrun.Engine)) (*engineWorld, chan *ports.Work) {
	runs := make(chan *ports.Work, 8)
	w := newEngineWorld(t, jobrun.Runners{job.TypeSampleGeneration: pauseRunner{timeout: timeout, runs: runs}}, opts...)
	close(w.jobs.gate)
	return w, runs
}

func newPauseJob(n int) *job.Job {
	j := newTestJob(n)
	j.Type = job.TypeSampleGeneration
	return j
}

// waitState waits until the job is in state st and its log shows it (a
// terminal state's event, or a pause event, is the last): the memory unit
// of work applies the state before the events, and a reader in between
// sees the one without the other.
func waitState(t *testing.T, w *engineWorld, id string, st job.State) *job.Job {
	t.Helper()
	shown := func() bool {
		evs, err := w.events.List(context.Background(), id, 0, 0)
		if err != nil || len(evs) == 0 {
			return false
		}
		last := evs[len(evs)-1]
		switch {
		case st.Terminal():
			return last.Type.Terminal()
		case st == job.Paused:
			return job.StatusOf(last.Payload) == job.Paused
		}
		return true
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		j, err := w.jobs.GetJob(context.Background(), "org", id)
		if err == nil && j.State == st && shown() {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: want state %s, have %+v (err %v)", id, st, j, err)
		}
	}
}

func eventTypes(t *testing.T, w *engineWorld, id string) []job.EventType {
	t.Helper()
	evs, err := w.events.List(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []job.EventType
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap", i, ev.Seq)
		}
		out = append(out, ev.Type)
	}
	return out
}

// TestPauseAndContinue: a run that pauses writes its pause event with the job
// paused and unheld, and frees its worker (another job runs meanwhile);
// continue with answers resumes it on the same stream, its Runner seeing the
// answers and the prior events, and the seqs go on without a gap.
func TestPauseAndContinue(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, runs := newPauseWorld(t, time.Minute)
	j := newPauseJob(1)
	is.NoErr(w.engine.Create(ctx, j, nil))
	first := <-runs
	is.True(!first.Continued)
	paused := waitState(t, w, j.ID, job.Paused)
	is.Equal(paused.Owner, "")                                         // nobody holds a paused job
	is.True(paused.LeaseUntil.IsZero())                                // its lease is released
	is.True(paused.PauseUntil.After(time.Now().Add(50 * time.Second))) // its deadline is set
	w.settled(t)                                                       // the worker slot is free (Workers: 1)...
	other := newTestJob(2)
	is.NoErr(w.engine.Create(ctx, other, nil)) // ...so another job runs now
	is.Equal(<-w.ran, other.ID)
	waitState(t, w, other.ID, job.Completed)

	_, err := w.engine.Continue(ctx, other.ID, nil)
	is.True(errors.Is(err, job.ErrTransition)) // a completed job is not paused

	got, err := w.engine.Continue(ctx, j.ID, job.Answers{"q1": {OptionIDs: []string{"x"}, Text: "more"}})
	is.NoErr(err)
	is.Equal(got.State, job.Running)
	second := <-runs
	is.True(second.Continued)
	is.Equal(second.Answers["q1"].OptionIDs, []string{"x"})
	is.Equal(second.Answers["q1"].Text, "more")
	is.Equal(len(second.Prior), 3) // roster, pause, job_continued
	done := waitState(t, w, j.ID, job.Completed)
	is.Equal(done.Continues, 1)
	is.Equal(eventTypes(t, w, j.ID), []job.EventType{job.EventSampleInstanceRoster, job.EventSampleClarificationPause,
		job.EventJobContinued, job.EventCompleted}) // no job_resumed: a continue is no takeover
	evs, _ := w.events.List(ctx, j.ID, 1, 1)
	line, err := jobcodec.Events{}.AppendJSON(nil, evs[0])
	is.NoErr(err)
	is.True(strings.Contains(string(line), `"is_paused":true`))
	is.True(strings.Contains(string(line), `"status":"paused"`))

	_, err = w.engine.Continue(ctx, j.ID, nil) // continuing twice
	is.True(errors.Is(err, job.ErrTransition))
}

// TestContinueWithoutBody: a continue with no answers resumes the job too
// (the classification pause sends none); the Runner sees empty answers.
func TestContinueWithoutBody(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, runs := newPauseWorld(t, time.Minute)
	j := newPauseJob(1)
	is.NoErr(w.engine.Create(ctx, j, nil))
	<-runs
	waitState(t, w, j.ID, job.Paused)
	_, err := w.engine.Continue(ctx, j.ID, nil)
	is.NoErr(err)
	second := <-runs
	is.True(second.Continued)
	is.Equal(len(second.Answers), 0)
	waitState(t, w, j.ID, job.Completed)
}

// TestPauseTimesOut: a pause nobody answers is cancelled at its timeout, with
// a cancelled event saying why; a late continue is refused.
func TestPauseTimesOut(t *testing.T) {
	for _, tt := range []struct {
		name  string
		sweep bool
	}{{"by the dispatch at its deadline", false}, {"by the sweep", true}} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			// The timed dispatch waits in real time, so its pause is short;
			// the sweep's is long, and the engine's clock passes it.
			timeout := 100 * time.Millisecond
			if tt.sweep {
				timeout = time.Minute
			}
			clock := &fakeports.ShiftClock{}
			w, runs := newPauseWorld(t, timeout, func(e *jobrun.Engine) { e.Clock = clock })
			j := newPauseJob(1)
			is.NoErr(w.engine.Create(ctx, j, nil))
			<-runs
			waitState(t, w, j.ID, job.Paused)
			if tt.sweep {
				is.NoErr(w.engine.Queue.Cancel(ctx, j.ID)) // no timed dispatch: only the sweep is left
				clock.Shift(timeout + time.Second)         // past the pause's deadline
				is.NoErr(w.engine.Sweep(ctx))
			}
			done := waitState(t, w, j.ID, job.Cancelled)
			is.Equal(done.Error, job.PauseTimedOut)
			types := eventTypes(t, w, j.ID)
			is.Equal(types[len(types)-1], job.EventCancelled)
			evs, _ := w.events.List(ctx, j.ID, int64(len(types)-1), 1)
			is.Equal(evs[0].Payload.(job.JobCancelled).Reason, job.PauseTimedOut)
			_, err := w.engine.Continue(ctx, j.ID, nil)
			is.True(errors.Is(err, job.ErrTransition))
			select {
			case <-runs:
				t.Fatal("a timed-out pause ran again")
			default:
			}
		})
	}
}

// TestContinueAfterDeadlineBeforeSweep: a continue that comes after the
// pause's deadline, before any sweep, is refused and ends the job.
func TestContinueAfterDeadlineBeforeSweep(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := &fakeports.ShiftClock{}
	w, runs := newPauseWorld(t, time.Minute, func(e *jobrun.Engine) { e.Clock = clock })
	j := newPauseJob(1)
	is.NoErr(w.engine.Create(ctx, j, nil))
	<-runs
	waitState(t, w, j.ID, job.Paused)
	is.NoErr(w.engine.Queue.Cancel(ctx, j.ID)) // no timed dispatch: only the continue sees the deadline
	clock.Shift(time.Minute + time.Second)     // past the pause's deadline
	_, err := w.engine.Continue(ctx, j.ID, nil)
	is.True(errors.Is(err, job.ErrTransition))
	done := waitState(t, w, j.ID, job.Cancelled)
	is.Equal(done.Error, job.PauseTimedOut)
}

// TestCancelWhilePaused: cancel ends a paused job; its pause's timeout then
// changes nothing.
func TestCancelWhilePaused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := &fakeports.ShiftClock{}
	runs := make(chan *ports.Work, 8)
	w := newEngineWorld(t, jobrun.Runners{job.TypeSampleGeneration: pauseRunner{timeout: time.Minute, runs: runs}},
		func(e *jobrun.Engine) { e.Clock = clock })
	close(w.jobs.gate)
	j := newPauseJob(1)
	is.NoErr(w.engine.Create(ctx, j, nil))
	<-runs
	waitState(t, w, j.ID, job.Paused)
	is.NoErr(w.engine.Cancel(ctx, "org", j.ID, "cancelled by client"))
	got, err := w.jobs.GetJob(ctx, "org", j.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Cancelled)
	clock.Shift(2 * time.Minute) // past the pause's deadline
	is.NoErr(w.engine.Sweep(ctx))
	done := waitState(t, w, j.ID, job.Cancelled)
	is.Equal(done.Error, "cancelled by client")
	is.Equal(eventTypes(t, w, j.ID), []job.EventType{job.EventSampleInstanceRoster, job.EventSampleClarificationPause,
		job.EventCancelled})
}

// TestSweepTimesOutWithTheClock: the sweep cancels a pause exactly when the
// engine's clock passes its deadline, not before.
func TestSweepTimesOutWithTheClock(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	clock := &fakeports.ShiftClock{}
	runs := make(chan *ports.Work, 8)
	w := newEngineWorld(t, jobrun.Runners{job.TypeSampleGeneration: pauseRunner{timeout: time.Minute, runs: runs}},
		func(e *jobrun.Engine) { e.Clock = clock })
	close(w.jobs.gate)
	j := newPauseJob(1)
	is.NoErr(w.engine.Create(ctx, j, nil))
	<-runs
	waitState(t, w, j.ID, job.Paused)
	clock.Shift(50 * time.Second)
	is.NoErr(w.engine.Sweep(ctx))
	waitState(t, w, j.ID, job.Paused) // not yet
	clock.Shift(15 * time.Second)
	is.NoErr(w.engine.Sweep(ctx))
	done := waitState(t, w, j.ID, job.Cancelled)
	is.Equal(done.Error, job.PauseTimedOut)
}
