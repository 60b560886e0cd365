package jobrun_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// gatedJobs holds CreateJob until the test opens the gate, then fails it
// with err when err is set.
type gatedJobs struct {
	ports.JobStore
	gate chan struct{}
	err  error
}

func (g *gatedJobs) CreateJob(ctx context.Context, j *job.Job) error {
	<-g.gate
	if g.err != nil {
		return g.err
	}
	return g.JobStore.CreateJob(ctx, j)
}

// stepRunner publishes one event, says it ran, waits for hold when set, and
// completes with a record.
type stepRunner struct {
	ran  chan string
	hold chan struct{}
}

func (r stepRunner) Run(_ context.Context, w *ports.Work) ports.Outcome {
	w.Publish(job.ModelStarted{Model: "sandbox::echo"})
	r.ran <- w.Job.ID
	if r.hold != nil {
		<-r.hold
	}
	rec := &enrichment.Record{ID: "rec-" + w.Job.ID, OrgID: w.Job.OrgID, Type: enrichment.RecordEnrichment,
		JobID: w.Job.ID, Model: "sandbox::echo", CreatedAt: time.Now()}
	return ports.Outcome{Result: []byte(`{"ok": true}`), Records: []*enrichment.Record{rec},
		Completed: job.JobCompleted{RecordID: rec.ID}}
}

type engineWorld struct {
	engine  *jobrun.Engine
	jobs    *gatedJobs
	events  *memory.EventLog
	records *memory.RecordStore
	ran     chan string
}

// newEngineWorld is an engine on memory stores with one worker, whose
// enrichment jobs run stepRunner unless runners says otherwise; opts tune it
// before it starts.
func newEngineWorld(t *testing.T, runners jobrun.Runners, opts ...func(*jobrun.Engine)) *engineWorld {
	t.Helper()
	jobs, events, records := memory.NewJobStore(), memory.NewEventLog(), memory.NewRecordStore()
	queue := inproc.New()
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		records, jobs, events, memory.NewRefreshTokenStore(), queue)
	clock := system.Clock{}
	lg := slog.New(slog.DiscardHandler)
	hub := eventhub.New(uow, events, clock, lg, eventhub.Config{})
	t.Cleanup(hub.Close)
	w := &engineWorld{jobs: &gatedJobs{JobStore: jobs, gate: make(chan struct{})}, events: events, records: records,
		ran: make(chan string, 4)}
	table := jobrun.Runners{job.TypeEnrichment: stepRunner{ran: w.ran}}
	maps.Copy(table, runners)
	w.engine = jobrun.New(jobrun.Deps{UoW: uow, Jobs: w.jobs, Events: events, Queue: queue, Stream: hub, Clock: clock, Log: lg},
		jobrun.Config{Owner: "test", Workers: 1, PerOrg: 1}, table)
	for _, o := range opts {
		o(w.engine)
	}
	if err := w.engine.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = w.engine.Stop(context.Background()) })
	return w
}

func newTestJob(n int) *job.Job {
	now := time.Now()
	return &job.Job{ID: fmt.Sprintf("job-%d", n), OrgID: "org", Type: job.TypeEnrichment, State: job.Pending,
		Request: []byte(`{}`), CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}
}

// settled waits until no job runs.
func (w *engineWorld) settled(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(w.engine.Running()) > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("jobs still running: %v", w.engine.Running())
		}
	}
}

// TestRunOverlapsItsCreate: a job that starts here runs while its row is
// being stored. When the store fails, the run writes nothing and its worker
// is free again; when it succeeds, what the run published meanwhile is stored
// first, in order.
func TestRunOverlapsItsCreate(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		failure error
	}{
		{"the store fails", fmt.Errorf("test: %w", ports.ErrUnavailable)},
		{"the store succeeds", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			w := newEngineWorld(t, nil)
			w.jobs.err = tt.failure
			j := newTestJob(1)
			created := make(chan error, 1)
			go func() { created <- w.engine.Create(ctx, j, nil) }()
			select {
			case id := <-w.ran:
				is.Equal(id, j.ID)
			case <-time.After(5 * time.Second):
				t.Fatal("the run did not start while its row was being stored")
			}
			close(w.jobs.gate)
			err := <-created
			w.settled(t)
			evs, lerr := w.events.List(ctx, j.ID, 0, 0)
			is.NoErr(lerr)
			_, rerr := w.records.GetRecord(ctx, "org", "rec-"+j.ID)
			if tt.failure != nil {
				is.True(errors.Is(err, ports.ErrUnavailable))
				is.Equal(len(evs), 0)                       // no event of a job that does not exist
				is.True(errors.Is(rerr, ports.ErrNotFound)) // nor a record
				w.jobs.err = nil
				is.NoErr(w.engine.Create(ctx, newTestJob(2), nil)) // the worker is free again
				is.Equal(<-w.ran, "job-2")
				w.settled(t)
				return
			}
			is.NoErr(err)
			is.NoErr(rerr)
			is.True(len(evs) == 2)
			is.Equal(evs[0].Type, job.EventModelStarted) // published before the row was stored
			is.Equal(evs[1].Type, job.EventCompleted)
			got, gerr := w.jobs.GetJob(ctx, "org", j.ID)
			is.NoErr(gerr)
			is.Equal(got.State, job.Completed)
		})
	}
}

// TestSlotWait: a job past the worker limits waits up to SlotWait for a
// worker here. It runs here when one frees in time (claimed at once, never
// pending); it is queued, pending, when none does; and it is not created at
// all when its caller leaves while it waits.
func TestSlotWait(t *testing.T) {
	ctx := context.Background()
	hold := make(chan struct{})
	for _, tt := range []struct {
		name  string
		wait  time.Duration
		free  time.Duration // when the running job is let go (0: after Create)
		leave time.Duration // when the caller gives up (0: never)
		want  job.State     // the second job's state right after Create; "" for not created
	}{
		{"a worker frees within the wait", time.Minute, 30 * time.Millisecond, 0, job.Running},
		{"no worker frees within the wait", 50 * time.Millisecond, 0, 0, job.Pending},
		{"the caller leaves while it waits", time.Minute, 0, 30 * time.Millisecond, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			hold = make(chan struct{})
			w := newEngineWorld(t, jobrun.Runners{job.TypeEnrichment: stepRunner{ran: make(chan string, 4), hold: hold}},
				func(e *jobrun.Engine) { e.SlotWait = tt.wait })
			close(w.jobs.gate)
			var letGo sync.Once
			free := func() { letGo.Do(func() { close(hold) }) }
			t.Cleanup(free)                                    // before the engine stops, even when the test fails
			is.NoErr(w.engine.Create(ctx, newTestJob(1), nil)) // takes the only worker and holds it
			if tt.free > 0 {
				time.AfterFunc(tt.free, free)
			}
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if tt.leave > 0 {
				time.AfterFunc(tt.leave, cancel)
			}
			second := newTestJob(2)
			err := w.engine.Create(cctx, second, nil)
			got, gerr := w.jobs.GetJob(ctx, "org", second.ID)
			if tt.want == "" {
				is.True(errors.Is(err, context.Canceled))
				is.True(errors.Is(gerr, ports.ErrNotFound))
			} else {
				is.NoErr(err)
				is.NoErr(gerr)
				if got.State != tt.want && !(tt.want == job.Running && got.State == job.Completed) {
					t.Errorf("state after Create: %s, want %s", got.State, tt.want)
				}
			}
			free()
			w.settled(t)
		})
	}
}

// TestRunGoroutinesAreReused: a run's goroutine waits for the next run
// instead of exiting, so that one worker's jobs run on one goroutine whose
// stack has grown, and Stop ends every waiting goroutine.
func TestRunGoroutinesAreReused(t *testing.T) {
	is := is.New(t)
	w := newEngineWorld(t, nil)
	close(w.jobs.gate) // rows are stored at once
	for n := 1; n <= 5; n++ {
		runTestJob(t, w, n)
		live := runGoroutinesWhen(w, func(live, idle int) bool { return live == idle })
		is.Equal(live, 1) // one goroutine ran them all
	}
	is.NoErr(w.engine.Stop(context.Background()))
	live, _ := w.engine.RunGoroutines()
	is.Equal(live, 0) // Stop waited for the waiting goroutine to end
}

// TestIdleRunGoroutinesExit: a run goroutine that waits RunIdle without a
// next run exits; the next job starts a new one.
func TestIdleRunGoroutinesExit(t *testing.T) {
	is := is.New(t)
	w := newEngineWorld(t, nil)
	w.engine.RunIdle = 20 * time.Millisecond
	close(w.jobs.gate) // rows are stored at once
	for n := 1; n <= 2; n++ {
		runTestJob(t, w, n)
		live := runGoroutinesWhen(w, func(live, _ int) bool { return live == 0 })
		is.Equal(live, 0) // its goroutine exited after RunIdle
	}
	is.NoErr(w.engine.Stop(context.Background()))
}

// runTestJob creates test job n and waits until it ran and settled.
func runTestJob(t *testing.T, w *engineWorld, n int) {
	t.Helper()
	if err := w.engine.Create(context.Background(), newTestJob(n), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.ran:
	case <-time.After(5 * time.Second):
		t.Fatalf("job %d did not run", n)
	}
	w.settled(t)
}

// runGoroutinesWhen waits up to 5 s for ok to hold of the engine's run
// goroutines (all, and those idle) and returns how many there are then.
func runGoroutinesWhen(w *engineWorld, ok func(live, idle int) bool) int {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		live, idle := w.engine.RunGoroutines()
		if ok(live, idle) || time.Now().After(deadline) {
			return live
		}
	}
}
