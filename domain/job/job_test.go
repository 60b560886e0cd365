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

// TestLeases: who may claim a job, when a claim lapsed, and when a job has
// had all the holders it may have.
func TestLeases(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held := func(owner string, until time.Time, attempt int, st job.State) job.Job {
		return job.Job{State: st, Owner: owner, LeaseUntil: until, Attempt: attempt}
	}
	tests := []struct {
		name      string
		j         job.Job
		claimer   string
		claimErr  error
		leased    bool
		lapsed    bool
		exhausted bool // with at most 2 holders
	}{
		{"pending, never held", held("", time.Time{}, 0, job.Pending), "b", nil, false, false, false},
		{"held live by another", held("a", t0.Add(time.Second), 1, job.Running), "b", job.ErrLeased, true, false, false},
		{"held live by the claimer", held("b", t0.Add(time.Second), 1, job.Running), "b", nil, true, false, false},
		{"lease ends exactly now", held("a", t0, 1, job.Running), "b", nil, false, true, false},
		{"lapsed after two holders", held("a", t0.Add(-time.Second), 2, job.Running), "b", nil, false, true, true},
		{"handed back (lease cleared to now)", held("a", t0, 2, job.Running), "b", nil, false, true, true},
		{"ended", held("a", t0.Add(-time.Second), 2, job.Completed), "b", job.ErrEnded, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			j := tt.j
			is.Equal(j.Leased(t0), tt.leased)
			is.Equal(j.Lapsed(t0), tt.lapsed)
			is.Equal(j.Exhausted(2, t0), tt.exhausted)
			before := j.Attempt
			err := j.Claim(tt.claimer, t0, time.Minute)
			if tt.claimErr != nil {
				is.True(errors.Is(err, tt.claimErr))
				is.Equal(j.Attempt, before) // a refused claim changes nothing
				return
			}
			is.NoErr(err)
			is.Equal(j.Attempt, before+1) // every claim moves the fencing token
			is.Equal(j.Owner, tt.claimer)
			is.Equal(j.State, job.Running)
			is.True(j.Holds(before + 1))
			is.True(!j.Holds(before))
			j.Fence(t0)
			is.True(!j.Holds(before + 1)) // a canceller's fence ends the claim
		})
	}
}

// TestPauseAndContinue: a pause releases the holder and sets the deadline;
// nobody may claim a paused job; continue before the deadline runs it again
// (not counted as an interruption), after it is refused.
func TestPauseAndContinue(t *testing.T) {
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	is := is.New(t)
	j := &job.Job{ID: "j", State: job.Pending}
	is.NoErr(j.Claim("a", at(0), 10*time.Second))
	is.NoErr(j.Pause(at(60), at(1)))
	is.Equal(j.State, job.Paused)
	is.Equal(j.Owner, "")
	is.True(j.LeaseUntil.IsZero())
	is.True(!j.Lapsed(at(100)))     // not a dead holder's job
	is.True(!j.PauseLapsed(at(59))) // live pause
	is.True(j.PauseLapsed(at(60)))  // at its deadline
	is.True(errors.Is(j.Claim("b", at(2), time.Second), job.ErrPaused))
	is.True(errors.Is(j.Pause(at(90), at(2)), job.ErrTransition)) // a paused job is not running

	late := *j
	is.True(errors.Is(late.Continue(at(60)), job.ErrTransition))
	is.Equal(late.State, job.Paused)

	is.NoErr(j.Continue(at(30)))
	is.Equal(j.State, job.Running)
	is.True(j.PauseUntil.IsZero())
	is.Equal(j.Continues, 1)
	is.True(errors.Is(j.Continue(at(31)), job.ErrTransition)) // not paused any more
	is.NoErr(j.Claim("b", at(31), time.Second))
	is.Equal(j.Attempt, 2)
	is.True(!j.Exhausted(2, at(40))) // the continue's holder is no interruption
	j.Continues = 0
	is.True(j.Exhausted(2, at(40)))

	cancelled := &job.Job{State: job.Paused, PauseUntil: at(5)}
	is.NoErr(cancelled.Cancel(job.PauseTimedOut, at(6)))
	is.Equal(cancelled.State, job.Cancelled)
	is.True(!cancelled.PauseLapsed(at(7)))
}

func TestLastContinue(t *testing.T) {
	is := is.New(t)
	_, ok := job.LastContinue(nil)
	is.True(!ok)
	evs := []job.Event{
		{Type: job.EventJobContinued, Payload: job.JobContinued{Answers: job.Answers{"q": {OptionIDs: []string{"a"}}}}},
		{Type: job.EventModelStarted, Payload: job.ModelStarted{}},
		{Type: job.EventJobContinued, Payload: job.JobContinued{}},
	}
	a, ok := job.LastContinue(evs)
	is.True(ok)
	is.Equal(len(a), 0) // the last one wins
	a, ok = job.LastContinue(evs[:2])
	is.True(ok)
	is.Equal(a["q"].OptionIDs, []string{"a"})
	d := job.NewDraft(job.JobContinued{Answers: job.Answers{"q": {Text: "t"}}, Round: 1})
	is.Equal(d.Type, job.EventJobContinued)
	is.Equal(d.Payload.(job.JobContinued).Round, 1)
}

// TestStorableMessages: a failure's message or a cancel's reason that no
// store would take (NUL, bytes that are not UTF-8) is kept escaped, on the
// job and in its terminal events alike; acceptable text is kept as it is.
func TestStorableMessages(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"provider said no", "provider said no"},
		{"déjà vu ✓", "déjà vu ✓"},
		{"a\x00b", `a\u0000b`},
		{"bad \xff byte", `bad \xff byte`},
	} {
		t.Run(tt.want, func(t *testing.T) {
			is := is.New(t)
			now := time.Unix(100, 0)
			j := &job.Job{State: job.Running}
			is.NoErr(j.Fail(job.CodeLLMUnavailable, tt.in, now))
			is.Equal(j.Error, tt.want)
			f := job.Failure(job.CodeLLMUnavailable, tt.in)
			is.Equal(f[0].Payload.(job.JobError).Msg, tt.want)
			is.Equal(f[1].Payload.(job.JobFailed).Msg, tt.want)
			c := &job.Job{State: job.Running}
			is.NoErr(c.Cancel(tt.in, now))
			is.Equal(c.Error, tt.want)
			is.Equal(job.Cancellation(tt.in)[0].Payload.(job.JobCancelled).Reason, tt.want)
			is.Equal(job.PartialCancellation(tt.in, nil)[0].Payload.(job.JobCancelled).Reason, tt.want)
		})
	}
}

// TestUnclaimed: a running job nobody holds, unchanged since before the
// cutoff, is unclaimed; Requeue moves its change to now (so other sweeps
// leave it for another grace) and refuses any other job.
func TestUnclaimed(t *testing.T) {
	is := is.New(t)
	t0 := time.Unix(1000, 0)
	j := &job.Job{State: job.Pending}
	is.NoErr(j.Claim("a", t0, time.Minute))
	is.True(!j.Unclaimed(t0.Add(time.Hour))) // held
	is.NoErr(j.Pause(t0.Add(time.Hour), t0))
	is.True(!j.Unclaimed(t0.Add(time.Hour))) // paused
	is.NoErr(j.Continue(t0.Add(time.Second)))
	is.True(!j.Unclaimed(t0.Add(time.Second)))    // not before the cutoff
	is.True(j.Unclaimed(t0.Add(2 * time.Second))) // continued, and nobody claimed it
	is.True(errors.Is(j.Requeue(t0.Add(time.Second), t0.Add(3*time.Second)), job.ErrTransition))
	is.NoErr(j.Requeue(t0.Add(2*time.Second), t0.Add(3*time.Second)))
	is.True(j.UpdatedAt.Equal(t0.Add(3 * time.Second)))
	is.True(!j.Unclaimed(t0.Add(2 * time.Second)))
	is.NoErr(j.Claim("b", t0.Add(4*time.Second), time.Minute))
	is.True(!j.Unclaimed(t0.Add(time.Hour)))
	is.True(errors.Is(j.Requeue(t0.Add(time.Hour), t0.Add(time.Hour)), job.ErrTransition))
}
