package contract

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

func newJob(orgID string, st job.State, n int) *job.Job {
	return &job.Job{ID: newID("job"), OrgID: orgID, Type: job.TypeEnrichment, State: st,
		Request:   []byte(`{"entity": {"name": "Acme", "n": 3}, "models": ["sandbox::echo"], "strategy": "auto"}`),
		CreatedAt: at(n), UpdatedAt: at(n), HeartbeatAt: at(n)}
}

func checkJob(t *testing.T, got, want *job.Job) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Type, want.Type)
	is.Equal(got.State, want.State)
	is.Equal(got.ErrorCode, want.ErrorCode)
	is.Equal(got.Error, want.Error)
	sameJSON(t, "Request", got.Request, want.Request)
	sameJSON(t, "Result", got.Result, want.Result)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	sameTime(t, "HeartbeatAt", got.HeartbeatAt, want.HeartbeatAt)
}

// RunJobStore runs the JobStore contract against the stores newStore returns.
// The race of concurrent updates is RunJobStoreConcurrency.
func RunJobStore(t *testing.T, newStore func(t *testing.T) ports.JobStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.JobStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			full := newJob(newID("org"), job.Failed, 0)
			full.ErrorCode, full.Error = job.CodeOutputInvalid, "model answered twice without a valid object"
			full.Result = []byte(`{"partial": {"name": "Acme"}, "score": 0.5}`)
			full.UpdatedAt, full.HeartbeatAt = at(7), at(5)
			bare := &job.Job{ID: newID("job"), OrgID: newID("org"), Type: job.TypeEnrichment, State: job.Pending,
				CreatedAt: at(1), UpdatedAt: at(1)}
			for _, j := range []*job.Job{full, bare} {
				want := *j
				want.Request = append([]byte(nil), j.Request...)
				is.NoErr(s.CreateJob(ctx, j))
				if len(j.Request) > 0 {
					j.Request[0] = ' ' // the store keeps its own copy
				}
				got, err := s.GetJob(ctx, j.OrgID, j.ID)
				is.NoErr(err)
				checkJob(t, got, &want)
			}
		}},
		{"jobs created at once are each stored or refused on their own", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			dup := newJob(org, job.Pending, 0)
			is.NoErr(s.CreateJob(ctx, dup))
			jobs := make([]*job.Job, 12)
			for i := range jobs {
				jobs[i] = newJob(org, job.Running, i)
				if i%5 == 0 {
					jobs[i] = &job.Job{ID: dup.ID, OrgID: org, Type: job.TypeEnrichment, State: job.Pending,
						CreatedAt: at(i), UpdatedAt: at(i)}
				}
			}
			errs := make([]error, len(jobs))
			var wg sync.WaitGroup
			for i, j := range jobs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.CreateJob(ctx, j)
				}()
			}
			wg.Wait()
			for i, j := range jobs {
				if i%5 == 0 {
					is.True(errors.Is(errs[i], ports.ErrConflict))
					continue
				}
				is.NoErr(errs[i])
				got, err := s.GetJob(ctx, org, j.ID)
				is.NoErr(err)
				is.Equal(got.State, job.Running)
			}
		}},
		{"unknown id and another organization's job are not found", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(s.CreateJob(ctx, j))
			_, err := s.GetJob(ctx, j.OrgID, newID("job"))
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.GetJob(ctx, newID("org"), j.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(s.CreateJob(ctx, j))
			dup := newJob(j.OrgID, job.Running, 1)
			dup.ID = j.ID
			is.True(errors.Is(s.CreateJob(ctx, dup), ports.ErrConflict))
		}},
		{"update writes when fn returns nil", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(s.CreateJob(ctx, j))
			got, err := s.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Start(at(10)) })
			is.NoErr(err)
			want := *j
			want.State, want.UpdatedAt, want.HeartbeatAt = job.Running, at(10), at(10)
			checkJob(t, got, &want)
			stored, err := s.GetJob(ctx, j.OrgID, j.ID)
			is.NoErr(err)
			checkJob(t, stored, &want)

			got, err = s.UpdateJob(ctx, j.ID, func(j *job.Job) error {
				return j.Complete([]byte(`{"name": "Acme", "founded": 1999}`), at(20))
			})
			is.NoErr(err)
			want.State, want.UpdatedAt, want.Result = job.Completed, at(20), []byte(`{"founded": 1999, "name": "Acme"}`)
			checkJob(t, got, &want)
			stored, err = s.GetJob(ctx, j.OrgID, j.ID)
			is.NoErr(err)
			checkJob(t, stored, &want)
		}},
		{"update returns fn's error and writes nothing", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(s.CreateJob(ctx, j))
			for _, tt := range []struct {
				name string
				fn   func(*job.Job) error
				want error
			}{
				{"invalid transition", func(j *job.Job) error { return j.Apply(job.ActionComplete, at(5)) }, job.ErrTransition},
				{"error after changes", func(j *job.Job) error {
					j.State, j.Error, j.Result = job.Failed, "half-done", []byte(`{"x": 1}`)
					return errBoom
				}, errBoom},
			} {
				got, err := s.UpdateJob(ctx, j.ID, tt.fn)
				if !errors.Is(err, tt.want) {
					t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
				}
				is.Equal(got, nil)
				stored, err := s.GetJob(ctx, j.OrgID, j.ID)
				is.NoErr(err)
				checkJob(t, stored, j)
			}
		}},
		{"update of an unknown job is not found", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			called := false
			_, err := s.UpdateJob(ctx, newID("job"), func(*job.Job) error { called = true; return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
			is.True(!called)
		}},
		{"lease, attempt and owner round trip", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(j.Claim("replica-a", at(1), 10*time.Second))
			is.NoErr(s.CreateJob(ctx, j))
			got, err := s.GetJob(ctx, j.OrgID, j.ID)
			is.NoErr(err)
			is.Equal(got.Attempt, 1)
			is.Equal(got.Owner, "replica-a")
			is.Equal(got.State, job.Running)
			sameTime(t, "LeaseUntil", got.LeaseUntil, at(1).Add(10*time.Second))
		}},
		{"renew leases moves held leases and reports the rest", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			mine, other, done := newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0)
			is.NoErr(mine.Claim("a", at(0), time.Second))
			is.NoErr(other.Claim("b", at(0), time.Second))
			is.NoErr(done.Claim("a", at(0), time.Second))
			is.NoErr(done.Complete([]byte(`{}`), at(0)))
			for _, j := range []*job.Job{mine, other, done} {
				is.NoErr(s.CreateJob(ctx, j))
			}
			unknown := newID("job")
			lost, err := s.RenewLeases(ctx, "a", []string{mine.ID, other.ID, done.ID, unknown}, at(60))
			is.NoErr(err)
			sort.Strings(lost)
			want := []string{other.ID, done.ID, unknown}
			sort.Strings(want)
			is.Equal(lost, want)
			got, err := s.GetJob(ctx, org, mine.ID)
			is.NoErr(err)
			sameTime(t, "LeaseUntil", got.LeaseUntil, at(60))
			got, err = s.GetJob(ctx, org, other.ID)
			is.NoErr(err)
			sameTime(t, "LeaseUntil", got.LeaseUntil, at(0).Add(time.Second)) // not someone else's
			none, err := s.RenewLeases(ctx, "a", nil, at(70))
			is.NoErr(err)
			is.Equal(len(none), 0)
		}},
		{"fences hold only for the current attempt of a live job", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			j, ended := newJob(org, job.Pending, 0), newJob(org, job.Pending, 0)
			is.NoErr(j.Claim("a", at(0), time.Second))
			is.NoErr(ended.Claim("a", at(0), time.Second))
			is.NoErr(ended.Fail(job.CodeInternal, "x", at(0)))
			is.NoErr(s.CreateJob(ctx, j))
			is.NoErr(s.CreateJob(ctx, ended))
			lost, err := s.CheckFences(ctx, []ports.Fence{{JobID: j.ID, Attempt: 1}})
			is.NoErr(err)
			is.Equal(len(lost), 0)
			// A takeover moves the token on: the first holder is fenced off.
			_, err = s.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Claim("b", at(5), time.Second) })
			is.NoErr(err)
			unknown := newID("job")
			lost, err = s.CheckFences(ctx, []ports.Fence{{JobID: j.ID, Attempt: 1}, {JobID: ended.ID, Attempt: 1}, {JobID: unknown, Attempt: 1}})
			is.NoErr(err)
			sort.Strings(lost)
			want := []string{j.ID, ended.ID, unknown}
			sort.Strings(want)
			is.Equal(lost, want)
			lost, err = s.CheckFences(ctx, []ports.Fence{{JobID: j.ID, Attempt: 2}})
			is.NoErr(err)
			is.Equal(len(lost), 0)
		}},
		{"lapsed leases are listed, oldest first; live, ended and unheld jobs are not", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			old, older, live, ended, pending := newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0)
			is.NoErr(old.Claim("a", at(10), time.Second))
			is.NoErr(older.Claim("a", at(5), time.Second))
			is.NoErr(live.Claim("a", at(100), time.Second))
			is.NoErr(ended.Claim("a", at(0), time.Second))
			is.NoErr(ended.Complete([]byte(`{}`), at(1)))
			for _, j := range []*job.Job{old, older, live, ended, pending} {
				is.NoErr(s.CreateJob(ctx, j))
			}
			got, err := s.ListLapsed(ctx, at(50), 0)
			is.NoErr(err)
			var ids []string
			for _, j := range got {
				if j.OrgID == org {
					ids = append(ids, j.ID)
				}
			}
			is.Equal(ids, []string{older.ID, old.ID})
			one, err := s.ListLapsed(ctx, at(50), 1)
			is.NoErr(err)
			is.Equal(len(one), 1)
		}},
		{"timed-out pauses are listed, oldest deadline first; live pauses and other jobs are not", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			old, older, live, running := newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0)
			for _, j := range []*job.Job{old, older, live, running} {
				is.NoErr(j.Claim("a", at(0), time.Second))
			}
			is.NoErr(old.Pause(at(20), at(1)))
			is.NoErr(older.Pause(at(10), at(1)))
			is.NoErr(live.Pause(at(100), at(1)))
			for _, j := range []*job.Job{old, older, live, running} {
				is.NoErr(s.CreateJob(ctx, j))
			}
			got, err := s.ListPauseLapsed(ctx, at(50), 0)
			is.NoErr(err)
			var ids []string
			for _, j := range got {
				if j.OrgID == org {
					ids = append(ids, j.ID)
				}
			}
			is.Equal(ids, []string{older.ID, old.ID})
			sameTime(t, "PauseUntil", got[0].PauseUntil, at(10))
			one, err := s.ListPauseLapsed(ctx, at(50), 1)
			is.NoErr(err)
			is.Equal(len(one), 1)
			// A paused job is unheld and no worker may claim it; continued, it
			// is not listed any more, and counts the continue.
			stored, err := s.GetJob(ctx, org, live.ID)
			is.NoErr(err)
			is.Equal(stored.Owner, "")
			is.True(stored.LeaseUntil.IsZero())
			sameTime(t, "PauseUntil", stored.PauseUntil, at(100))
			_, err = s.UpdateJob(ctx, live.ID, func(j *job.Job) error { return j.Claim("b", at(2), time.Second) })
			is.True(errors.Is(err, job.ErrPaused))
			_, err = s.UpdateJob(ctx, old.ID, func(j *job.Job) error { return j.Continue(at(30)) }) // past its deadline
			is.True(errors.Is(err, job.ErrTransition))
			cont, err := s.UpdateJob(ctx, older.ID, func(j *job.Job) error { j.PauseUntil = at(60); return j.Continue(at(30)) })
			is.NoErr(err)
			is.Equal(cont.State, job.Running)
			is.Equal(cont.Continues, 1)
			is.True(cont.PauseUntil.IsZero())
			got, err = s.ListPauseLapsed(ctx, at(70), 0)
			is.NoErr(err)
			for _, j := range got {
				is.True(j.ID != older.ID)
			}
			again, err := s.GetJob(ctx, org, older.ID)
			is.NoErr(err)
			is.Equal(again.Continues, 1)
		}},
		{"unclaimed running jobs are listed past the cutoff, oldest first; held, paused, pending and ended jobs are not", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			org := newID("org")
			old, older, recent, held, paused, pending, ended := newJob(org, job.Pending, 0), newJob(org, job.Pending, 0),
				newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0), newJob(org, job.Pending, 0),
				newJob(org, job.Pending, 0)
			for _, j := range []*job.Job{old, older, recent, held, paused, ended} {
				is.NoErr(j.Claim("a", at(0), time.Second))
			}
			// Paused, then continued: running with nobody holding it.
			for i, j := range []*job.Job{old, older, recent} {
				is.NoErr(j.Pause(at(100), at(1)))
				is.NoErr(j.Continue(at([]int{20, 10, 40}[i])))
			}
			is.NoErr(paused.Pause(at(100), at(1)))
			is.NoErr(ended.Pause(at(100), at(1)))
			is.NoErr(ended.Continue(at(2)))
			is.NoErr(ended.Cancel("gone", at(3)))
			for _, j := range []*job.Job{old, older, recent, held, paused, pending, ended} {
				is.NoErr(s.CreateJob(ctx, j))
			}
			mine := func(got []*job.Job) []string {
				var ids []string
				for _, j := range got {
					if j.OrgID == org {
						ids = append(ids, j.ID)
					}
				}
				return ids
			}
			got, err := s.ListUnclaimed(ctx, at(30), 0)
			is.NoErr(err)
			is.Equal(mine(got), []string{older.ID, old.ID})
			is.Equal(got[0].Owner, "")
			is.True(got[0].LeaseUntil.IsZero())
			one, err := s.ListUnclaimed(ctx, at(30), 1)
			is.NoErr(err)
			is.Equal(len(one), 1)
			// Requeued (touched), a job waits another grace; claimed, it is held.
			_, err = s.UpdateJob(ctx, older.ID, func(j *job.Job) error { return j.Requeue(at(30), at(31)) })
			is.NoErr(err)
			_, err = s.UpdateJob(ctx, old.ID, func(j *job.Job) error { return j.Claim("b", at(31), time.Second) })
			is.NoErr(err)
			got, err = s.ListUnclaimed(ctx, at(30), 0)
			is.NoErr(err)
			is.Equal(len(mine(got)), 0)
			got, err = s.ListUnclaimed(ctx, at(50), 0)
			is.NoErr(err)
			is.Equal(mine(got), []string{older.ID, recent.ID}) // requeued at 31, continued at 40
		}},
		{"a live lease refuses a claim; a lapsed one is taken over", func(t *testing.T, s ports.JobStore) {
			is := is.New(t)
			j := newJob(newID("org"), job.Pending, 0)
			is.NoErr(j.Claim("a", at(0), 10*time.Second))
			is.NoErr(s.CreateJob(ctx, j))
			_, err := s.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Claim("b", at(5), 10*time.Second) })
			is.True(errors.Is(err, job.ErrLeased))
			got, err := s.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Claim("b", at(11), 10*time.Second) })
			is.NoErr(err)
			is.Equal(got.Attempt, 2)
			is.Equal(got.Owner, "b")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

// RunJobStoreConcurrency races 20 goroutines to start the same pending job
// through UpdateJob: exactly one wins and the others get job.ErrTransition.
// The adapter must run the updates as truly concurrent, row-locked
// transactions (PGlite, which runs one query at a time, cannot).
func RunJobStoreConcurrency(t *testing.T, newStore func(t *testing.T) ports.JobStore) {
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		is := is.New(t)
		s := newStore(t)
		j := newJob(newID("org"), job.Pending, 0)
		is.NoErr(s.CreateJob(ctx, j))
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.UpdateJob(ctx, j.ID, func(j *job.Job) error { return j.Start(at(10 + i)) })
			}()
		}
		close(start)
		wg.Wait()
		won, lost := 0, 0
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				won++
				winner = i
			case errors.Is(err, job.ErrTransition):
				lost++
			default:
				t.Errorf("goroutine %d: unexpected error %v", i, err)
			}
		}
		is.Equal(won, 1)    // exactly one goroutine starts the job
		is.Equal(lost, n-1) // the others see it running
		got, err := s.GetJob(ctx, j.OrgID, j.ID)
		is.NoErr(err)
		is.Equal(got.State, job.Running)
		sameTime(t, "HeartbeatAt", got.HeartbeatAt, at(10+winner))
	}
}
