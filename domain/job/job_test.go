package job_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

func TestNextEveryPair(t *testing.T) {
	allowed := map[job.State]map[job.Action]job.State{
		job.Pending: {job.ActionStart: job.Running, job.ActionCancel: job.Cancelled, job.ActionFail: job.Failed},
		job.Running: {job.ActionPause: job.Paused, job.ActionComplete: job.Completed, job.ActionFail: job.Failed, job.ActionCancel: job.Cancelled},
		job.Paused:  {job.ActionContinue: job.Running, job.ActionCancel: job.Cancelled, job.ActionFail: job.Failed},
	}
	n := 0
	for _, s := range job.States() {
		for _, a := range job.Actions() {
			n++
			t.Run(string(s)+"/"+string(a), func(t *testing.T) {
				is := is.New(t)
				got, err := job.Next(s, a)
				want, ok := allowed[s][a]
				if ok {
					is.NoErr(err)
					is.Equal(got, want)
					return
				}
				is.True(errors.Is(err, job.ErrTransition))
				is.Equal(got, s) // a refused action leaves the state alone
			})
		}
	}
	if n != 36 {
		t.Fatalf("covered %d pairs, want 36", n)
	}
}

func TestCancelledCannotComplete(t *testing.T) {
	is := is.New(t)
	j := &job.Job{State: job.Running}
	now := time.Now()
	is.NoErr(j.Cancel("client", now))
	err := j.Complete([]byte(`{}`), now)
	is.True(errors.Is(err, job.ErrTransition))
	is.Equal(j.State, job.Cancelled)
	is.Equal(j.Result, nil)
}

func TestTerminalCannotCancel(t *testing.T) {
	for _, s := range []job.State{job.Completed, job.Failed, job.Cancelled} {
		is := is.New(t)
		j := &job.Job{State: s}
		err := j.Cancel("late", time.Now())
		is.True(errors.Is(err, job.ErrTransition))
		is.True(s.Terminal())
	}
}

func TestParseState(t *testing.T) {
	is := is.New(t)
	for _, s := range job.States() {
		got, err := job.ParseState(string(s))
		is.NoErr(err)
		is.Equal(got, s)
	}
	_, err := job.ParseState("done")
	is.True(err != nil)
}

func TestEventJSON(t *testing.T) {
	is := is.New(t)
	b, err := job.Event{JobID: "j1", Seq: 3, Type: job.EventAttempt, Data: map[string]any{"expertise": "general"}}.MarshalJSON()
	is.NoErr(err)
	is.Equal(string(b), `{"event":"attempt","expertise":"general","job_id":"j1"}`)
}
