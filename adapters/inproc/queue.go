// Package inproc is the in-process job queue: the memory default's and the
// embedded library's ports.JobQueue. Entries live in this process only, so a
// restart loses them, as it loses the memory stores.
package inproc

import (
	"context"
	"sync"
	"time"

	"github.com/entityenrich/enrich/ports"
)

// Queue dispatches queued jobs to a handler at their time, and again after
// the handler snoozes them.
type Queue struct {
	mu      sync.Mutex
	h       ports.JobHandler
	ctx     context.Context
	entries map[string][]*entry // by job id
	early   []ports.QueuedJob   // enqueued before Start
	stopped bool
	wg      sync.WaitGroup
	retry   time.Duration
	// slots holds a token per dispatch whose run goes on (Handlers.Slots;
	// nil: no bound); quit is closed by Stop.
	slots chan struct{}
	quit  chan struct{}

	stopSweep context.CancelFunc
}

type entry struct {
	j     ports.QueuedJob
	timer *time.Timer
}

var _ ports.JobQueue = (*Queue)(nil)

// New returns a queue that dispatches once Start is called.
func New() *Queue {
	return &Queue{entries: map[string][]*entry{}, retry: time.Second, quit: make(chan struct{})}
}

// Enqueue schedules j at j.At (now when zero).
func (q *Queue) Enqueue(_ context.Context, j ports.QueuedJob) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return nil // a stopped process dispatches nothing; the job stays as stored
	}
	if q.h == nil {
		q.early = append(q.early, j)
		return nil
	}
	q.scheduleLocked(j, time.Until(j.At))
	return nil
}

func (q *Queue) scheduleLocked(j ports.QueuedJob, d time.Duration) {
	e := &entry{j: j}
	q.entries[j.JobID] = append(q.entries[j.JobID], e)
	q.wg.Add(1)
	e.timer = time.AfterFunc(max(d, 0), func() { q.dispatch(e) })
}

func (q *Queue) dispatch(e *entry) {
	defer q.wg.Done()
	q.mu.Lock()
	if !q.removeLocked(e) || q.stopped {
		q.mu.Unlock()
		return
	}
	h, ctx, slots := q.h, q.ctx, q.slots
	q.mu.Unlock()
	if slots != nil {
		// Wait for a free slot, then hold it while the run started goes
		// on: the next job is dispatched when a run ends, not later.
		select {
		case slots <- struct{}{}:
		case <-q.quit:
			return
		}
		defer func() { <-slots }()
	}
	d, err := h(ctx, e.j)
	if err != nil {
		d.Snooze = q.retry
	}
	if d.Done != nil {
		select {
		case <-d.Done:
		case <-q.quit:
		}
	}
	if d.Snooze > 0 {
		q.mu.Lock()
		if !q.stopped {
			q.scheduleLocked(e.j, d.Snooze)
		}
		q.mu.Unlock()
	}
}

// removeLocked drops e from its job's entries; false if it was cancelled.
func (q *Queue) removeLocked(e *entry) bool {
	es := q.entries[e.j.JobID]
	for i, x := range es {
		if x == e {
			es = append(es[:i], es[i+1:]...)
			if len(es) == 0 {
				delete(q.entries, e.j.JobID)
			} else {
				q.entries[e.j.JobID] = es
			}
			return true
		}
	}
	return false
}

// Start begins dispatching to h.Dispatch, and calls h.Sweep every
// h.SweepEvery.
func (q *Queue) Start(ctx context.Context, h ports.Handlers) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.h, q.ctx = h.Dispatch, ctx
	if h.Slots > 0 {
		q.slots = make(chan struct{}, h.Slots)
	}
	if h.Sweep != nil && h.SweepEvery > 0 {
		sctx, cancel := context.WithCancel(ctx)
		q.stopSweep = cancel
		q.wg.Add(1)
		go func() {
			defer q.wg.Done()
			t := time.NewTicker(h.SweepEvery)
			defer t.Stop()
			for {
				select {
				case <-sctx.Done():
					return
				case <-t.C:
					_ = h.Sweep(sctx)
				}
			}
		}()
	}
	for _, j := range q.early {
		q.scheduleLocked(j, time.Until(j.At))
	}
	q.early = nil
	return nil
}

// Stranded lists nothing: a dispatch cannot outlive this process's queue.
func (q *Queue) Stranded(context.Context, time.Time, int) ([]ports.QueuedJob, error) { return nil, nil }

// Cancel drops the job's queued entries.
func (q *Queue) Cancel(_ context.Context, jobID string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.entries[jobID] {
		if e.timer.Stop() {
			q.wg.Done()
		}
	}
	delete(q.entries, jobID)
	return nil
}

// Stop drops what is queued and waits for running dispatches until ctx ends.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	if !q.stopped {
		close(q.quit)
	}
	q.stopped = true
	if q.stopSweep != nil {
		q.stopSweep()
	}
	for id, es := range q.entries {
		for _, e := range es {
			if e.timer.Stop() {
				q.wg.Done()
			}
		}
		delete(q.entries, id)
	}
	q.mu.Unlock()
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
