package contract

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// StreamFixture is an EventStream under test with the stores it writes to.
type StreamFixture struct {
	Stream ports.EventStream
	UoW    ports.UnitOfWork
	Jobs   ports.JobStore
	Events ports.EventLog
	// Reads is the log the stream reads, Events watched: it tells the suite
	// when a follower has looked and is waiting.
	Reads *WatchedLog
	// Usage is the ledger the unit of work writes (nil: the suite skips
	// what the stream charges).
	Usage ports.UsageLedger
}

// WatchedLog is an EventLog that says when a job's events were listed.
type WatchedLog struct {
	ports.EventLog
	mu     sync.Mutex
	listed map[string]chan struct{}
}

// NewWatchedLog watches log.
func NewWatchedLog(log ports.EventLog) *WatchedLog {
	return &WatchedLog{EventLog: log, listed: map[string]chan struct{}{}}
}

// List lists, then says so to whoever waits on Listed.
func (l *WatchedLog) List(ctx context.Context, jobID string, after int64, limit int) ([]job.Event, error) {
	evs, err := l.EventLog.List(ctx, jobID, after, limit)
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.chanLocked(jobID)
	select {
	case <-c:
	default:
		close(c)
	}
	return evs, err
}

// Listed is closed once the events of jobID have been listed.
func (l *WatchedLog) Listed(jobID string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.chanLocked(jobID)
}

func (l *WatchedLog) chanLocked(jobID string) chan struct{} {
	c, ok := l.listed[jobID]
	if !ok {
		c = make(chan struct{})
		l.listed[jobID] = c
	}
	return c
}

// RunEventStream runs the EventStream contract against the streams
// newStream returns (closed by the suite).
func RunEventStream(t *testing.T, newStream func(t *testing.T) StreamFixture) {
	ctx := context.Background()
	claimed := func(t *testing.T, f StreamFixture) *job.Job {
		t.Helper()
		j := newJob(newID("org"), job.Pending, 0)
		if err := j.Claim("here", time.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := f.Jobs.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	// follow waits until the job's followers saw n events.
	follow := func(t *testing.T, f StreamFixture, id string, n int) []job.Event {
		t.Helper()
		var got []job.Event
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for len(got) < n {
			after := int64(0)
			if len(got) > 0 {
				after = got[len(got)-1].Seq
			}
			evs, err := f.Stream.Wait(wctx, id, after)
			if err != nil {
				t.Fatalf("wait after %d: %v (got %d of %d)", after, err, len(got), n)
			}
			got = append(got, evs...)
		}
		return got
	}
	draft := func(i int) job.Draft {
		return job.Draft{Type: job.EventAttempt, Data: map[string]any{"status": "running", "attempt": i}}
	}
	tests := []struct {
		name string
		run  func(t *testing.T, f StreamFixture)
	}{
		{"events are numbered in order and delivered once durable", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			f.Stream.Own(j.ID, j.Attempt, 0, func(error) { t.Error("lost") })
			for i := 1; i <= 5; i++ {
				is.True(f.Stream.Publish(j.ID, draft(i)))
			}
			got := follow(t, f, j.ID, 5)
			stored, err := f.Events.List(ctx, j.ID, 0, 100)
			is.NoErr(err)
			is.True(len(stored) >= len(got)) // nothing is delivered before it is stored
			for i, e := range got {
				is.Equal(e.Seq, int64(i+1))
				is.Equal(stored[i].Seq, e.Seq)
				is.Equal(fmt.Sprint(e.Data["attempt"]), fmt.Sprint(stored[i].Data["attempt"]))
			}
		}},
		{"seal numbers the last events after the unwritten ones", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			f.Stream.Own(j.ID, j.Attempt, 0, func(error) {})
			is.True(f.Stream.Publish(j.ID, draft(1)))
			evs, _ := f.Stream.Seal(ctx, j.ID, job.Failure(job.CodeInternal, "x"))
			is.True(len(evs) >= 2)
			is.True(!f.Stream.Publish(j.ID, draft(9))) // nothing after the seal
			last := evs[len(evs)-1]
			is.Equal(last.Type, job.EventFailed)
			is.Equal(evs[len(evs)-2].Type, job.EventError)
			// What the seal returned follows what was already written.
			written, err := f.Events.List(ctx, j.ID, 0, 100)
			is.NoErr(err)
			is.Equal(evs[0].Seq, int64(len(written)+1))
			is.Equal(last.Seq, int64(3))
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error { return r.Events.Append(ctx, evs) }))
			f.Stream.Sealed(j.ID, evs, nil)
			got := follow(t, f, j.ID, 3)
			is.Equal(got[2].Type, job.EventFailed)
		}},
		{"a resumed owner numbers after the log", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			is.NoErr(f.Events.Append(ctx, events(j.ID, 1, 4)))
			f.Stream.Own(j.ID, j.Attempt, 4, func(error) {})
			is.True(f.Stream.Publish(j.ID, draft(5)))
			got := follow(t, f, j.ID, 5)
			is.Equal(seqs(got), span(1, 5))
		}},
		{"an owner fenced off loses the job and writes nothing more", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			var mu sync.Mutex
			var lostErr error
			lost := make(chan struct{})
			f.Stream.Own(j.ID, j.Attempt, 0, func(err error) {
				mu.Lock()
				lostErr = err
				mu.Unlock()
				close(lost)
			})
			is.True(f.Stream.Publish(j.ID, draft(1)))
			follow(t, f, j.ID, 1)
			// A canceller ends the job and writes its own event 2.
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if _, err := r.Jobs.UpdateJob(ctx, j.ID, func(j *job.Job) error {
					j.Fence(time.Now())
					return j.Cancel("test", time.Now())
				}); err != nil {
					return err
				}
				return r.Events.Append(ctx, job.Number(j.ID, 1, time.Now(), job.Cancellation("test")))
			}))
			f.Stream.Publish(j.ID, draft(2))
			select {
			case <-lost:
			case <-time.After(10 * time.Second):
				t.Fatal("the fenced owner was not told")
			}
			mu.Lock()
			is.True(errors.Is(lostErr, ports.ErrFenced))
			mu.Unlock()
			f.Stream.Delivered(j.ID)
			got := follow(t, f, j.ID, 2)
			is.Equal(len(got), 2)
			is.Equal(got[1].Type, job.EventCancelled) // the owner's event 2 was dropped, not written over it
			stored, err := f.Events.List(ctx, j.ID, 0, 100)
			is.NoErr(err)
			is.Equal(len(stored), 2)
		}},
		{"followers of a job owned elsewhere read the log and wake on delivery", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			id := newID("job")
			if f.Reads == nil {
				t.Fatal("the fixture has no Reads: the suite cannot know when a follower waits")
			}
			listed := f.Reads.Listed(id)
			got := make(chan []job.Event, 1)
			go func() {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				evs, _ := f.Stream.Wait(wctx, id, 0)
				got <- evs
			}()
			select {
			case <-listed: // the follower found nothing and waits
			case <-time.After(5 * time.Second):
				t.Fatal("the follower never read the log")
			}
			is.NoErr(f.Events.Append(ctx, events(id, 1, 2)))
			f.Stream.Delivered(id)
			select {
			case evs := <-got:
				is.Equal(seqs(evs), span(1, 2))
			case <-time.After(5 * time.Second):
				t.Fatal("the follower was not woken")
			}
		}},
		{"a wait ends with its context", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			_, err := f.Stream.Wait(wctx, newID("job"), 0)
			is.True(errors.Is(err, context.DeadlineExceeded))
		}},
		{"a publish for a job not owned here is refused", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			is.True(!f.Stream.Publish(newID("job"), draft(1)))
		}},
		{"a charged call is durable with the checkpoint event published after it", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			f.Stream.Own(j.ID, j.Attempt, 0, func(error) { t.Error("lost") })
			e := newUsage(j.OrgID, 1)
			f.Stream.Charge(j.ID, []usage.Entry{e})
			is.True(f.Stream.Publish(j.ID, draft(1)))
			follow(t, f, j.ID, 1)
			is.Equal(billed(t, f, j.OrgID), []string{e.ID})
		}},
		{"a fenced owner's charged calls are billed all the same, once", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			lost := make(chan struct{})
			f.Stream.Own(j.ID, j.Attempt, 0, func(error) { close(lost) })
			first := newUsage(j.OrgID, 1)
			f.Stream.Charge(j.ID, []usage.Entry{first})
			is.True(f.Stream.Publish(j.ID, draft(1)))
			follow(t, f, j.ID, 1)
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				_, err := r.Jobs.UpdateJob(ctx, j.ID, func(j *job.Job) error {
					j.Fence(time.Now())
					return j.Cancel("test", time.Now())
				})
				return err
			}))
			second := newUsage(j.OrgID, 2)
			f.Stream.Charge(j.ID, []usage.Entry{second})
			f.Stream.Publish(j.ID, draft(2))
			select {
			case <-lost:
			case <-time.After(10 * time.Second):
				t.Fatal("the fenced owner was not told")
			}
			f.Stream.Charge(j.ID, []usage.Entry{newUsage(j.OrgID, 3)}) // answered after the loss
			waitBilled(t, f, j.OrgID, 3)
			is.Equal(len(billed(t, f, j.OrgID)), 3)
		}},
		{"seal hands over what is unwritten; a later charge is billed on its own", func(t *testing.T, f StreamFixture) {
			is := is.New(t)
			j := claimed(t, f)
			f.Stream.Own(j.ID, j.Attempt, 0, func(error) {})
			e := newUsage(j.OrgID, 1)
			f.Stream.Charge(j.ID, []usage.Entry{e})
			evs, spent := f.Stream.Seal(ctx, j.ID, job.Failure(job.CodeInternal, "x"))
			is.True(len(evs) >= 2)
			// The entry was written before the seal, or is handed over:
			// one of the two.
			is.Equal(len(spent)+len(billed(t, f, j.OrgID)), 1)
			is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
				if err := r.Events.Append(ctx, evs); err != nil {
					return err
				}
				return r.Usage.AppendUsage(ctx, spent)
			}))
			f.Stream.Sealed(j.ID, evs, nil)
			f.Stream.Charge(j.ID, []usage.Entry{newUsage(j.OrgID, 2)})
			waitBilled(t, f, j.OrgID, 2)
		}},
		{"a charge for a job not owned here is billed on its own", func(t *testing.T, f StreamFixture) {
			org := newID("org")
			f.Stream.Charge(newID("job"), []usage.Entry{newUsage(org, 1), newUsage(org, 2)})
			waitBilled(t, f, org, 2)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newStream(t)
			if f.Usage == nil && strings.Contains(tt.name, "charge") {
				t.Skip("the fixture has no ledger")
			}
			t.Cleanup(f.Stream.Close)
			tt.run(t, f)
		})
	}
}

// billed lists the ids of org's entries in the fixture's ledger, sorted.
func billed(t *testing.T, f StreamFixture, org string) []string {
	t.Helper()
	es, err := f.Usage.ListUsage(context.Background(), org, at(0), at(100))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids
}

// waitBilled waits until org has n entries in the fixture's ledger, and
// fails if it has more.
func waitBilled(t *testing.T, f StreamFixture, org string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := billed(t, f, org)
		switch {
		case len(got) > n:
			t.Fatalf("billed %d entries, want %d: %v", len(got), n, got)
		case len(got) == n:
			return
		case time.Now().After(deadline):
			t.Fatalf("billed %d entries after 10 s, want %d", len(got), n)
		}
	}
}
