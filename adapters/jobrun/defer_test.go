package jobrun_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// countedJobs counts the jobs created through the store (not through a
// unit of work's end) and fails them with err when set.
type countedJobs struct {
	ports.JobStore
	creates atomic.Int32
	err     error
}

func (c *countedJobs) CreateJob(ctx context.Context, j *job.Job) error {
	c.creates.Add(1)
	if c.err != nil {
		return c.err
	}
	return c.JobStore.CreateJob(ctx, j)
}

// holdRunner publishes one event, waits for hold or its context, and
// completes with a record (or, cancelled, ends as its context says).
type holdRunner struct{ hold chan struct{} }

func (r holdRunner) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	w.Publish(job.ModelStarted{Model: "sandbox::echo"})
	select {
	case <-r.hold:
	case <-ctx.Done():
		return ports.Outcome{}
	}
	rec := &enrichment.Record{ID: "rec-" + w.Job.ID, OrgID: w.Job.OrgID, Type: enrichment.RecordEnrichment,
		JobID: w.Job.ID, Model: "sandbox::echo", CreatedAt: time.Now()}
	return ports.Outcome{Result: []byte(`{"ok": true}`), Records: []*enrichment.Record{rec},
		Completed: job.JobCompleted{RecordID: rec.ID}}
}

// newDeferWorld is an engine whose runs wait on hold, with DeferCreate d.
func newDeferWorld(t *testing.T, d time.Duration, storeErr error) (*engineWorld, *countedJobs, chan struct{}) {
	t.Helper()
	hold := make(chan struct{})
	var counted *countedJobs
	w := newEngineWorld(t, jobrun.Runners{job.TypeEnrichment: holdRunner{hold: hold}}, func(e *jobrun.Engine) {
		e.DeferCreate = d
		counted = &countedJobs{JobStore: e.Jobs, err: storeErr}
		e.Jobs = counted
	})
	close(w.jobs.gate)
	return w, counted, hold
}

// follow reads the job's events from the stream up to its terminal one.
func follow(t *testing.T, ctx context.Context, s ports.EventStream, id string) []job.Event {
	t.Helper()
	var out []job.Event
	for {
		evs, err := s.Wait(ctx, id, int64(len(out)))
		if err != nil {
			t.Fatalf("follow %s after %d events: %v", id, len(out), err)
		}
		out = append(out, evs...)
		if out[len(out)-1].Type.Terminal() {
			return out
		}
	}
}

// TestAwaitedJobIsStoredWithItsEnd: a job whose creator waits for its end
// and that ends before DeferCreate is stored once, with its end: nobody sees
// a row before, the stream still delivers every event in order, and the
// store's CreateJob is never called.
func TestAwaitedJobIsStoredWithItsEnd(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, counted, hold := newDeferWorld(t, time.Minute, nil)
	j, err := w.engine.SubmitAwaited(ctx, "job-a", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	is.Equal(j.State, job.Running) // claimed here
	waitCtx, stop := w.engine.Await(ctx, j.ID)
	defer stop()
	_, err = w.jobs.GetJob(ctx, "org", j.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // not stored while it runs
	close(hold)
	evs := follow(t, waitCtx, w.engine.Stream, j.ID)
	is.Equal(evs[len(evs)-1].Type, job.EventCompleted)
	for i, ev := range evs {
		is.Equal(ev.Seq, int64(i+1))
	}
	got := waitState(t, w, j.ID, job.Completed)
	is.Equal(got.Attempt, 1)
	is.Equal(eventTypes(t, w, j.ID), []job.EventType{job.EventModelStarted, job.EventCompleted})
	_, err = w.records.GetRecord(ctx, "org", "rec-"+j.ID)
	is.NoErr(err)
	is.Equal(counted.creates.Load(), int32(0))
	w.settled(t)
}

// TestAwaitedJobOutlivingDeferCreateIsStoredThen: a longer run has its row
// stored after DeferCreate, and ends like any job.
func TestAwaitedJobOutlivingDeferCreateIsStoredThen(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, counted, hold := newDeferWorld(t, 20*time.Millisecond, nil)
	j, err := w.engine.SubmitAwaited(ctx, "job-b", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	running := waitState(t, w, j.ID, job.Running)
	is.Equal(running.Owner, "test")
	is.Equal(counted.creates.Load(), int32(1))
	close(hold)
	evs := follow(t, ctx, w.engine.Stream, j.ID)
	is.Equal(evs[len(evs)-1].Type, job.EventCompleted)
	waitState(t, w, j.ID, job.Completed)
	is.Equal(eventTypes(t, w, j.ID), []job.EventType{job.EventModelStarted, job.EventCompleted})
	w.settled(t)
}

// TestAwaitedJobCancelledBeforeItsRow: cancelling a job whose row is not
// stored yet ends it cancelled, stored with its cancellation; cancelling it
// again is a refused transition; another organization cannot see it.
func TestAwaitedJobCancelledBeforeItsRow(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, _, _ := newDeferWorld(t, time.Minute, nil)
	j, err := w.engine.SubmitAwaited(ctx, "job-c", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	err = w.engine.Cancel(ctx, "other", j.ID, "not mine")
	is.True(errors.Is(err, ports.ErrNotFound))

	is.NoErr(w.engine.Cancel(ctx, "org", j.ID, "client went away"))
	got, err := w.jobs.GetJob(ctx, "org", j.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Cancelled)
	is.Equal(eventTypes(t, w, j.ID), []job.EventType{job.EventModelStarted, job.EventCancelled})
	err = w.engine.Cancel(ctx, "org", j.ID, "again")
	is.True(errors.Is(err, job.ErrTransition))
	w.settled(t)
}

// TestAwaitedJobThatCannotBeStored: when the row cannot be stored after
// DeferCreate, the run stops without writing anything and its follower's
// context ends with the store's error, so that the blocking caller answers
// at once instead of waiting for events that will never come.
func TestAwaitedJobThatCannotBeStored(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	storeErr := fmt.Errorf("test: %w", ports.ErrInvalid)
	w, _, _ := newDeferWorld(t, 10*time.Millisecond, storeErr)
	j, err := w.engine.SubmitAwaited(ctx, "job-d", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	waitCtx, stop := w.engine.Await(ctx, j.ID)
	defer stop()
	select {
	case <-waitCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the follower was not told that the job could not be stored")
	}
	is.True(errors.Is(context.Cause(waitCtx), storeErr))
	w.settled(t)
	_, err = w.jobs.GetJob(ctx, "org", j.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
}

// refusingEnds refuses the ends that create their job (as a store refuses
// data it cannot hold), and passes the rest through.
type refusingEnds struct{ ports.UnitOfWork }

func (u refusingEnds) EndJob(ctx context.Context, end ports.JobEnd) error {
	if end.Create {
		return fmt.Errorf("test: %w", ports.ErrInvalid)
	}
	return u.UnitOfWork.EndJob(ctx, end)
}

// TestAwaitedJobWhoseEndIsRefused: when the end that would create the job
// is refused, the job is stored as it started and then failed with
// storage_error, and its follower sees that failure end the stream.
func TestAwaitedJobWhoseEndIsRefused(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, counted, hold := newDeferWorld(t, time.Minute, nil)
	w.engine.UoW = refusingEnds{w.engine.UoW}
	j, err := w.engine.SubmitAwaited(ctx, "job-e", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	waitCtx, stop := w.engine.Await(ctx, j.ID)
	defer stop()
	close(hold)
	evs := follow(t, waitCtx, w.engine.Stream, j.ID)
	last := evs[len(evs)-1]
	is.Equal(last.Type, job.EventFailed)
	is.Equal(last.Data["error_code"], string(job.CodeStorage))
	got := waitState(t, w, j.ID, job.Failed)
	is.Equal(got.ErrorCode, job.CodeStorage)
	is.Equal(counted.creates.Load(), int32(1)) // stored as it started, once
	_, err = w.records.GetRecord(ctx, "org", "rec-"+j.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // nothing of the refused end
	w.settled(t)
}

// TestAwaitedJobAtShutdownIsHandedBack: a deferred run stopped by a
// shutdown that hands jobs back gets its row first, then is handed back
// (lease cleared) to resume elsewhere.
func TestAwaitedJobAtShutdownIsHandedBack(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, counted, _ := newDeferWorld(t, time.Minute, nil)
	w.engine.ReleaseAtShutdown = true
	j, err := w.engine.SubmitAwaited(ctx, "job-f", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	expired, cancel := context.WithCancel(ctx)
	cancel() // no grace: the run is stopped at once
	_ = w.engine.Stop(expired)
	got, err := w.jobs.GetJob(ctx, "org", j.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Running) // not ended: another worker resumes it
	is.True(!got.LeaseUntil.After(time.Now()))
	is.Equal(counted.creates.Load(), int32(1))
}

// unreachableEnds answers ErrUnavailable to the ends that create their job
// until up is closed, as a store cut off for a while.
type unreachableEnds struct {
	ports.UnitOfWork
	up    chan struct{}
	tries atomic.Int32
}

func (u *unreachableEnds) EndJob(ctx context.Context, end ports.JobEnd) error {
	select {
	case <-u.up:
	default:
		if end.Create {
			u.tries.Add(1)
			return fmt.Errorf("test: %w", ports.ErrUnavailable)
		}
	}
	return u.UnitOfWork.EndJob(ctx, end)
}

// TestAwaitedJobWhoseEndMeetsAnOutage: when the end that would create the
// job meets an unreachable store, the follower is answered at once with an
// unavailable cause (not after the end's retries), and the run keeps
// retrying: once the store is back, the job and its record are stored,
// completed, and nothing was created twice.
func TestAwaitedJobWhoseEndMeetsAnOutage(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w, counted, hold := newDeferWorld(t, time.Minute, nil)
	ends := &unreachableEnds{UnitOfWork: w.engine.UoW, up: make(chan struct{})}
	w.engine.UoW = ends
	j, err := w.engine.SubmitAwaited(ctx, "job-g", "org", job.TypeEnrichment, []byte("{}"), nil)
	is.NoErr(err)
	waitCtx, stop := w.engine.Await(ctx, j.ID)
	defer stop()
	close(hold)
	select {
	case <-waitCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the follower was not told that the end cannot be stored now")
	}
	is.True(errors.Is(context.Cause(waitCtx), ports.ErrUnavailable))
	is.True(ends.tries.Load() >= 1)
	_, err = w.jobs.GetJob(ctx, "org", j.ID)
	is.True(errors.Is(err, ports.ErrNotFound)) // nothing stored during the outage

	close(ends.up)
	got := waitState(t, w, j.ID, job.Completed)
	is.Equal(got.State, job.Completed)
	_, err = w.records.GetRecord(ctx, "org", "rec-"+j.ID)
	is.NoErr(err) // the run's work was kept and stored with its end
	is.Equal(counted.creates.Load(), int32(0))
	w.settled(t)
}
