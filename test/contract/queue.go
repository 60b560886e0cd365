package contract

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

// QueueFixture is a JobQueue under test. UoW enqueues in a transaction
// (Repos.Queue) that commits or rolls back with it.
type QueueFixture struct {
	Queue ports.JobQueue
	UoW   ports.UnitOfWork
	// Slack is how late a dispatch may come (a scheduled or snoozed entry
	// waits for the queue's scheduler: River's runs every 5 s).
	Slack time.Duration
}

// dispatcher routes dispatches to per-job behaviours and records them.
type dispatcher struct {
	mu     sync.Mutex
	behave map[string]func(n int) (ports.Dispatch, error)
	calls  map[string][]time.Time
	orgs   map[string]string
	wake   chan struct{}
}

func (d *dispatcher) handle(_ context.Context, q ports.QueuedJob) (ports.Dispatch, error) {
	d.mu.Lock()
	d.calls[q.JobID] = append(d.calls[q.JobID], time.Now())
	d.orgs[q.JobID] = q.OrgID
	n := len(d.calls[q.JobID])
	b := d.behave[q.JobID]
	close(d.wake)
	d.wake = make(chan struct{})
	d.mu.Unlock()
	if b == nil {
		return ports.Dispatch{}, nil
	}
	return b(n)
}

func (d *dispatcher) on(id string, b func(n int) (ports.Dispatch, error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.behave[id] = b
}

func (d *dispatcher) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.calls[id])
}

// waitCalls waits until job id was dispatched n times, or timeout.
func (d *dispatcher) waitCalls(id string, n int, timeout time.Duration) []time.Time {
	deadline := time.After(timeout)
	for {
		d.mu.Lock()
		calls := append([]time.Time(nil), d.calls[id]...)
		wake := d.wake
		d.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		select {
		case <-wake:
		case <-deadline:
			return calls
		}
	}
}

// RunJobQueue runs the JobQueue contract against the queues newQueue returns
// (each started by the suite and stopped at the end of the test).
func RunJobQueue(t *testing.T, newQueue func(t *testing.T) QueueFixture) {
	f := newQueue(t)
	d := &dispatcher{behave: map[string]func(int) (ports.Dispatch, error){}, calls: map[string][]time.Time{},
		orgs: map[string]string{}, wake: make(chan struct{})}
	ctx := context.Background()
	var sweeps atomic.Int64
	sweep := func(context.Context) error { sweeps.Add(1); return nil }
	if err := f.Queue.Start(ctx, ports.Handlers{Dispatch: d.handle, Sweep: sweep, SweepEvery: time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = f.Queue.Stop(sctx)
	})
	patience := 5*time.Second + f.Slack
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"an enqueued job is dispatched with its organization", func(t *testing.T) {
			is := is.New(t)
			id, org := newID("job"), newID("org")
			is.NoErr(f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: org}))
			is.Equal(len(d.waitCalls(id, 1, patience)), 1)
			d.mu.Lock()
			is.Equal(d.orgs[id], org)
			d.mu.Unlock()
		}},
		{"a job enqueued for later waits for its time", func(t *testing.T) {
			is := is.New(t)
			id := newID("job")
			at := time.Now().Add(1500 * time.Millisecond)
			is.NoErr(f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "o", At: at}))
			calls := d.waitCalls(id, 1, patience+2*time.Second)
			is.Equal(len(calls), 1)
			is.True(!calls[0].Before(at.Add(-50 * time.Millisecond))) // not before its time
		}},
		{"a snoozed job comes back; a finished one does not", func(t *testing.T) {
			is := is.New(t)
			id := newID("job")
			d.on(id, func(n int) (ports.Dispatch, error) {
				if n < 3 {
					return ports.Dispatch{Snooze: 100 * time.Millisecond}, nil
				}
				return ports.Dispatch{}, nil
			})
			is.NoErr(f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "o"}))
			is.Equal(len(d.waitCalls(id, 3, 2*patience)), 3)
			time.Sleep(300*time.Millisecond + f.Slack/5)
			is.Equal(d.count(id), 3)
		}},
		{"a failed dispatch is tried again", func(t *testing.T) {
			is := is.New(t)
			id := newID("job")
			d.on(id, func(n int) (ports.Dispatch, error) {
				if n == 1 {
					return ports.Dispatch{}, errors.New("storage hiccup")
				}
				return ports.Dispatch{}, nil
			})
			is.NoErr(f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "o"}))
			is.Equal(len(d.waitCalls(id, 2, 2*patience)), 2)
		}},
		{"a cancelled entry is never dispatched", func(t *testing.T) {
			is := is.New(t)
			id := newID("job")
			is.NoErr(f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "o", At: time.Now().Add(time.Second)}))
			is.NoErr(f.Queue.Cancel(ctx, id))
			is.NoErr(f.Queue.Cancel(ctx, id)) // idempotent
			is.Equal(len(d.waitCalls(id, 1, time.Second+f.Slack)), 0)
		}},
		{"an enqueue commits with its unit of work", func(t *testing.T) {
			is := is.New(t)
			kept, dropped := newID("job"), newID("job")
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				return r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: kept, OrgID: "o"})
			}))
			boom := errors.New("boom")
			err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Queue.Enqueue(ctx, ports.QueuedJob{JobID: dropped, OrgID: "o"}); err != nil {
					return err
				}
				return boom
			})
			is.True(errors.Is(err, boom))
			is.Equal(len(d.waitCalls(kept, 1, patience)), 1)
			is.Equal(len(d.waitCalls(dropped, 1, time.Second)), 0)
		}},
		{"the sweep runs again and again", func(t *testing.T) {
			deadline := time.Now().Add(patience + 3*time.Second)
			for sweeps.Load() < 3 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if n := sweeps.Load(); n < 3 {
				t.Fatalf("%d sweeps, want at least 3", n)
			}
		}},
		{"many jobs enqueued at once are each dispatched", func(t *testing.T) {
			is := is.New(t)
			ids := make([]string, 50)
			var wg sync.WaitGroup
			for i := range ids {
				ids[i] = newID("job")
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := f.Queue.Enqueue(ctx, ports.QueuedJob{JobID: ids[i], OrgID: "o"}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			for _, id := range ids {
				is.True(len(d.waitCalls(id, 1, patience)) >= 1)
			}
		}},
	}
	// The cases wait on timers (River's scheduler runs every 5 s): run them
	// side by side.
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				tt.run(t)
			})
		}
	})
}
