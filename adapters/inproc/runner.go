// Package inproc runs jobs in this process: a bounded pool of workers with a
// per-organization limit, cancellation by job id and a graceful shutdown.
package inproc

import (
	"context"
	"fmt"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// Config bounds the pool.
type Config struct {
	// Workers is how many jobs run at once (default 32).
	Workers int
	// PerOrg is how many jobs of one organization run at once (default 8).
	PerOrg int
	// Queue is how many jobs may wait (default 10000); past it Submit fails
	// with ports.ErrCapacity.
	Queue int
}

type entry struct {
	id, org string
	run     func(context.Context)
	ctx     context.Context
	cancel  context.CancelFunc
	started bool
}

// Runner is an in-process ports.JobRunner.
type Runner struct {
	cfg     Config
	base    context.Context
	stopAll context.CancelFunc

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []*entry
	byID     map[string]*entry
	perOrg   map[string]int
	running  int
	closed   bool
	wg       sync.WaitGroup
	draining bool
}

var _ ports.JobRunner = (*Runner)(nil)

// New starts a runner.
func New(cfg Config) *Runner {
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.PerOrg <= 0 {
		cfg.PerOrg = 8
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 10000
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Runner{cfg: cfg, base: base, stopAll: cancel, byID: map[string]*entry{}, perOrg: map[string]int{}}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// Submit queues a job.
func (r *Runner) Submit(id, orgID string, run func(context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("inproc: shutting down: %w", ports.ErrCapacity)
	}
	if len(r.queue) >= r.cfg.Queue {
		return fmt.Errorf("inproc: %d jobs queued: %w", len(r.queue), ports.ErrCapacity)
	}
	if _, dup := r.byID[id]; dup {
		return fmt.Errorf("inproc: job %s already submitted: %w", id, ports.ErrConflict)
	}
	ctx, cancel := context.WithCancel(r.base)
	e := &entry{id: id, org: orgID, run: run, ctx: ctx, cancel: cancel}
	r.byID[id] = e
	r.queue = append(r.queue, e)
	r.dispatchLocked()
	return nil
}

// dispatchLocked starts every queued job that fits the limits, oldest first.
func (r *Runner) dispatchLocked() {
	for i := 0; i < len(r.queue) && r.running < r.cfg.Workers; {
		e := r.queue[i]
		if r.perOrg[e.org] >= r.cfg.PerOrg && !r.draining {
			i++
			continue
		}
		r.queue = append(r.queue[:i], r.queue[i+1:]...)
		r.start(e)
	}
}

func (r *Runner) start(e *entry) {
	e.started = true
	r.running++
	r.perOrg[e.org]++
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			r.running--
			r.perOrg[e.org]--
			if r.perOrg[e.org] == 0 {
				delete(r.perOrg, e.org)
			}
			delete(r.byID, e.id)
			e.cancel()
			r.dispatchLocked()
			r.mu.Unlock()
		}()
		e.run(e.ctx)
	}()
}

// Cancel cancels a queued or running job's context. A queued job still runs,
// with a cancelled context, so that its owner can record the cancellation.
func (r *Runner) Cancel(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byID[id]
	if ok {
		e.cancel()
	}
	return ok
}

// Running lists queued and running job ids.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.byID))
	for id := range r.byID {
		ids = append(ids, id)
	}
	return ids
}

// Shutdown refuses new jobs, cancels the queued ones (they run at once with a
// cancelled context), waits for running jobs until ctx ends, then cancels
// those too and waits for them to return.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.draining = true
	queued := r.queue
	r.queue = nil
	for _, e := range queued {
		e.cancel()
		r.start(e)
	}
	r.mu.Unlock()

	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		r.stopAll()
		return nil
	case <-ctx.Done():
		r.stopAll()
		<-done
		return ctx.Err()
	}
}
