// Package eventhub is the ports.EventStream adapter: it numbers the events of
// the jobs this process owns, writes them in batches under each job's fence,
// and delivers them to followers once they are durable. Followers of jobs
// owned elsewhere read the EventLog, woken by Delivered (a NOTIFY from the
// owner's replica) or, as a fallback, by polling.
package eventhub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Config tunes the hub.
type Config struct {
	// Linger is how long the writer waits after the first pending event, so
	// that a burst goes in one commit (default 5 ms).
	Linger time.Duration
	// PollInterval is how often a follower of a job owned elsewhere reads
	// the log when no wake-up arrives (default 1 s).
	PollInterval time.Duration
	// Retain keeps a finished job's events in memory this long (default
	// 1 s), for followers that catch up just after the end; later ones
	// read the log. It is short because every retained event is live heap
	// that the collector marks, and at a high rate of jobs a longer window
	// costs throughput (docs/performance.md).
	Retain time.Duration
	// PrivateRetain is Retain for a private job (Private: one nobody
	// elsewhere can follow, a synchronous request's, whose only follower
	// is that request, woken at the end): default 100 ms, for that request
	// to take the end from memory; a follower after it reads the log.
	// Nobody else can follow such a job, and at a high rate of
	// synchronous requests their events kept for Retain were a large
	// share of the heap the collector marked.
	PrivateRetain time.Duration
	// MaxPending bounds the unwritten events of one job; past it (a long
	// outage) the job is given up here (default 10,000).
	MaxPending int
	// GiveUp is how long writes may keep failing before the jobs waiting on
	// them are given up here (default 2 min).
	GiveUp time.Duration
	// Announce, when set, is told (kind "events") of the jobs whose events
	// became durable, after their commit and in batches, so that followers
	// on other instances read the log at once.
	Announce ports.Invalidations
}

// announceQueue bounds the job ids waiting to be announced; past it an
// announcement is dropped and remote followers find the events by polling.
const announceQueue = 4096

// Hub is the in-process side of every job's event stream.
type Hub struct {
	uow   ports.UnitOfWork
	log   ports.EventLog
	clock ports.Clock
	lg    *slog.Logger
	cfg   Config

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a batch ends
	streams map[string]*stream
	dirty   map[string]*stream       // streams that may have pending events
	wakes   map[string]chan struct{} // followers of jobs owned elsewhere
	kick    chan struct{}
	solo    int // batches left to write one job at a time (a batch was refused)
	stop    chan struct{}
	done    chan struct{}

	announced chan string   // job ids to announce
	quiet     chan struct{} // closed when the announcer stopped

	// orphans are ledger entries to write on their own: of jobs not owned
	// here, or given up here (Charge).
	orphans []usage.Entry
}

// maxOrphans bounds the ledger entries waiting to be written on their own;
// past it (a long outage) the oldest are dropped, and said so.
const maxOrphans = 100_000

type stream struct {
	attempt int
	owned   bool // this process writes the job's events
	sealed  bool // no more Publish
	ended   bool // the terminal event is durable
	private bool // nobody elsewhere can follow the job: its end is not announced
	next    int64
	pending []job.Event
	usage   []usage.Entry // ledger entries to write with the next events
	writing bool
	durable []job.Event // events written by this process, in order
	first   int64       // seq of durable[0] (or of the next durable event)
	wake    chan struct{}
	lost    func(error)
	endedAt time.Time
}

var _ ports.EventStream = (*Hub)(nil)

// New starts the hub's writer; Close stops it.
func New(uow ports.UnitOfWork, log ports.EventLog, clock ports.Clock, lg *slog.Logger, cfg Config) *Hub {
	cfg.Linger = cmp.Or(cfg.Linger, 5*time.Millisecond)
	cfg.PollInterval = cmp.Or(cfg.PollInterval, time.Second)
	cfg.Retain = cmp.Or(cfg.Retain, time.Second)
	cfg.PrivateRetain = cmp.Or(cfg.PrivateRetain, 100*time.Millisecond)
	cfg.MaxPending = cmp.Or(cfg.MaxPending, 10000)
	cfg.GiveUp = cmp.Or(cfg.GiveUp, 2*time.Minute)
	h := &Hub{uow: uow, log: log, clock: clock, lg: lg, cfg: cfg, streams: map[string]*stream{},
		dirty: map[string]*stream{}, wakes: map[string]chan struct{}{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	h.cond = sync.NewCond(&h.mu)
	h.announced, h.quiet = make(chan string, announceQueue), make(chan struct{})
	go h.writer()
	go h.announcer()
	return h
}

// announce queues the announcement that jobs' events are durable.
func (h *Hub) announce(ids ...string) {
	if h.cfg.Announce == nil {
		return
	}
	for _, id := range ids {
		select {
		case h.announced <- id:
		default: // full: remote followers poll
		}
	}
}

// announcer sends the queued announcements, as many as are waiting in one
// statement, until Close.
func (h *Hub) announcer() {
	defer close(h.quiet)
	for {
		var ids []string
		closing := false
		select {
		case id := <-h.announced:
			ids = append(ids, id)
		case <-h.done:
			closing = true // the writer wrote its last: announce what waits
		}
	drain:
		for len(ids) < maxBatch {
			select {
			case id := <-h.announced:
				ids = append(ids, id)
			default:
				break drain
			}
		}
		if len(ids) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := h.cfg.Announce.PublishAll(ctx, "events", ids); err != nil {
				h.lg.Warn("events not announced to other instances; their followers will poll", "jobs", len(ids), "err", err)
			}
			cancel()
		}
		if closing {
			return
		}
	}
}

// Written wakes the followers here of a job whose events this process wrote
// outside the stream, and announces them to other instances.
func (h *Hub) Written(jobID string) {
	h.Delivered(jobID)
	h.announce(jobID)
}

// Own starts numbering the job's events after seq after.
func (h *Hub) Own(jobID string, attempt int, after int64, lost func(error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.streams[jobID]
	if s == nil {
		s = &stream{wake: make(chan struct{})}
		h.streams[jobID] = s
	}
	s.attempt, s.owned, s.sealed, s.ended, s.private, s.lost = attempt, true, false, false, false, lost
	h.orphanLocked(s)
	s.next, s.pending, s.durable, s.first = after+1, nil, nil, after+1
	h.wakeLocked(jobID, s) // followers waiting on the log follow the stream now
}

// Private keeps the end of an owned job from being announced.
func (h *Hub) Private(jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.streams[jobID]; s != nil && s.owned {
		s.private = true
	}
}

// Publish queues an event of an owned job.
func (h *Hub) Publish(jobID string, d job.Draft) bool {
	h.mu.Lock()
	s := h.streams[jobID]
	if s == nil || !s.owned || s.sealed {
		h.mu.Unlock()
		return false
	}
	if len(s.pending) >= h.cfg.MaxPending {
		lost := h.disownLocked(jobID, s)
		h.mu.Unlock()
		h.lg.Error("job events could not be written for too long; giving the job up here", "job_id", jobID, "pending", h.cfg.MaxPending)
		lost(fmt.Errorf("eventhub: %d events not written: %w", h.cfg.MaxPending, ports.ErrUnavailable))
		return false
	}
	s.pending = append(s.pending, job.Event{JobID: jobID, Seq: s.next, Type: d.Type, Payload: d.Payload, Common: d.Common,
		CreatedAt: h.clock.Now()})
	s.next++
	h.dirty[jobID] = s
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
	return true
}

// Charge queues ledger entries of the job's answered calls: with its next
// events when it is owned here, on their own otherwise.
func (h *Hub) Charge(jobID string, entries []usage.Entry) {
	if len(entries) == 0 {
		return
	}
	h.mu.Lock()
	if s := h.streams[jobID]; s != nil && s.owned && !s.sealed {
		s.usage = append(s.usage, entries...)
		h.dirty[jobID] = s
	} else {
		h.addOrphansLocked(entries)
	}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// addOrphansLocked queues entries to write on their own.
func (h *Hub) addOrphansLocked(entries []usage.Entry) {
	h.orphans = append(h.orphans, entries...)
	if over := len(h.orphans) - maxOrphans; over > 0 {
		h.lg.Error("ledger entries dropped: they could not be written for too long", "entries", over)
		h.orphans = append(h.orphans[:0], h.orphans[over:]...)
	}
}

// orphanLocked moves the stream's unwritten ledger entries to the orphans.
func (h *Hub) orphanLocked(s *stream) {
	if len(s.usage) > 0 {
		h.addOrphansLocked(s.usage)
		s.usage = nil
	}
}

// disownLocked stops writing the job here and returns its lost callback.
// Its unwritten ledger entries are written on their own: the calls were
// paid for whoever holds the job now.
func (h *Hub) disownLocked(jobID string, s *stream) func(error) {
	h.orphanLocked(s)
	s.owned, s.sealed, s.pending = false, true, nil
	lost := s.lost
	s.lost = nil
	if lost == nil {
		lost = func(error) {}
	}
	h.wakeLocked(jobID, s)
	return lost
}

// wakeLocked wakes the job's followers: those of its stream here and those
// waiting on the log.
func (h *Hub) wakeLocked(jobID string, s *stream) {
	close(s.wake)
	s.wake = make(chan struct{})
	if w, ok := h.wakes[jobID]; ok {
		close(w)
		delete(h.wakes, jobID)
	}
}

// Seal waits for the job's in-flight write and returns its unwritten events
// followed by the drafts, numbered, and its unwritten ledger entries.
func (h *Hub) Seal(ctx context.Context, jobID string, drafts []job.Draft) ([]job.Event, []usage.Entry) {
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.cond.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.streams[jobID]
	if s == nil || !s.owned {
		return nil, nil
	}
	for s.writing && ctx.Err() == nil {
		h.cond.Wait()
	}
	s.sealed = true
	out := append(s.pending, job.Number(jobID, s.next-1, h.clock.Now(), drafts)...)
	spent := s.usage
	s.pending, s.usage = nil, nil
	s.next += int64(len(drafts))
	return out, spent
}

// Sealed delivers sealed events when they were stored.
func (h *Hub) Sealed(jobID string, events []job.Event, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.streams[jobID]
	if s == nil {
		return
	}
	h.orphanLocked(s) // charged after Seal: written on their own
	if err != nil {
		s.owned = false
		s.lost = nil
		h.wakeLocked(jobID, s)
		return
	}
	if s.durable == nil {
		s.durable = events // a job whose events all came at its end: the caller is done with them
	} else {
		s.durable = append(s.durable, events...)
	}
	// The end is durable: nothing can lose the job now. Dropping lost lets
	// the run it refers to go while its events stay for Retain.
	s.owned, s.ended, s.endedAt, s.lost = false, true, h.clock.Now(), nil
	h.wakeLocked(jobID, s)
	if !s.private {
		h.announce(jobID)
	}
}

// Delivered wakes the followers of a job whose events someone else wrote;
// they read the log from now on.
func (h *Hub) Delivered(jobID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.streams[jobID]; s != nil && !s.owned {
		// Events written elsewhere are not in this cache: read the log.
		delete(h.streams, jobID)
		h.wakeLocked(jobID, s)
	}
	if w, ok := h.wakes[jobID]; ok {
		close(w)
		delete(h.wakes, jobID)
	}
}

// Wait returns the job's durable events after seq after.
func (h *Hub) Wait(ctx context.Context, jobID string, after int64) ([]job.Event, error) {
	for {
		h.mu.Lock()
		s := h.streams[jobID]
		if s != nil && (s.owned || s.ended) && after >= s.first-1 {
			if evs := since(s.durable, after); len(evs) > 0 {
				h.mu.Unlock()
				return evs, nil
			}
			if s.ended {
				h.mu.Unlock()
				return h.log.List(ctx, jobID, after, 1000)
			}
			wake := s.wake
			h.mu.Unlock()
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		w, ok := h.wakes[jobID]
		if !ok {
			w = make(chan struct{})
			h.wakes[jobID] = w
		}
		h.mu.Unlock()
		evs, err := h.log.List(ctx, jobID, after, 1000)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		t := time.NewTimer(h.cfg.PollInterval)
		select {
		case <-w:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// since returns the events of evs after seq after: evs's own, for followers
// only read them (ports.EventStream.Wait), capacity clipped so that the
// stream's appends never write where a follower reads.
func since(evs []job.Event, after int64) []job.Event {
	for i, ev := range evs {
		if ev.Seq > after {
			return evs[i:len(evs):len(evs)]
		}
	}
	return nil
}

// writer persists pending events in batches until Close.
func (h *Hub) writer() {
	defer close(h.done)
	sweep := time.NewTicker(min(10*time.Second, max(min(h.cfg.Retain, h.cfg.PrivateRetain)/2, 50*time.Millisecond)))
	defer sweep.Stop()
	var failingSince time.Time
	for {
		select {
		case <-h.kick:
			t := time.NewTimer(h.cfg.Linger)
			select {
			case <-t.C:
			case <-h.stop:
			}
			t.Stop()
		case <-sweep.C:
			if h.sweep() {
				h.writeAll(&failingSince) // orphans a failed write left
			}
			continue
		case <-h.stop:
			h.writeAll(&failingSince)
			return
		}
		h.writeAll(&failingSince)
	}
}

// writeAll writes batches until nothing is pending, retrying failures with
// backoff; after GiveUp of failures the waiting jobs are given up here.
func (h *Hub) writeAll(failingSince *time.Time) {
	backoff := 20 * time.Millisecond
	for {
		n, err := h.writeBatch()
		if err == nil {
			*failingSince = time.Time{}
			if n == 0 {
				return
			}
			backoff = 20 * time.Millisecond
			continue
		}
		if failingSince.IsZero() {
			*failingSince = time.Now()
		}
		h.lg.Warn("job events not written yet; retrying", "err", err, "in", backoff.String())
		if time.Since(*failingSince) > h.cfg.GiveUp {
			h.giveUpAll()
			*failingSince = time.Time{}
			return
		}
		select {
		case <-time.After(backoff):
		case <-h.stop:
			// Closing: one more try, then give up.
			if _, err := h.writeBatch(); err != nil {
				h.giveUpAll()
			}
			return
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (h *Hub) giveUpAll() {
	h.mu.Lock()
	var lost []func(error)
	for id, s := range h.dirty {
		if s.owned && len(s.pending) > 0 {
			lost = append(lost, h.disownLocked(id, s))
		}
	}
	h.mu.Unlock()
	for _, f := range lost {
		f(fmt.Errorf("eventhub: writes failed for %s: %w", h.cfg.GiveUp, ports.ErrUnavailable))
	}
}

const maxBatch = 1000

// errFenced carries the jobs a batch found fenced off.
type errFenced struct{ ids []string }

func (e *errFenced) Error() string { return fmt.Sprintf("%d jobs fenced off", len(e.ids)) }

// writeBatch writes one batch of pending events; it returns how many.
func (h *Hub) writeBatch() (int, error) {
	b := h.takeBatch()
	if len(b.events) == 0 && len(b.spent) == 0 {
		return 0, nil
	}
	err := h.commitBatch(b)
	if err != nil && len(b.jobs) == 0 && errors.Is(err, ports.ErrInvalid) {
		// Ledger entries alone that the store refuses would be refused
		// for ever.
		h.lg.Error("ledger entries refused by the store; dropped", "entries", len(b.spent), "err", err)
		err = nil
	}
	var fenced *errFenced
	errors.As(err, &fenced)
	losses := h.settleBatch(b, err, fenced)
	for _, l := range losses {
		l.fn(l.err)
	}
	n := len(b.events) + len(b.spent)
	switch {
	case err == nil, fenced != nil, len(losses) > 0:
		return n, nil // the others are retried at once
	case errors.Is(err, ports.ErrInvalid), errors.Is(err, ports.ErrConflict):
		// One job's events are refused: write job by job to find it.
		h.mu.Lock()
		h.solo = len(b.jobs)
		h.mu.Unlock()
		return n, nil
	}
	return n, err
}

// batch is one write of the hub: the events and ledger entries of the jobs
// it took, and each job's fence.
type batch struct {
	events []job.Event
	fences []ports.Fence
	jobs   []*stream
	spent  []usage.Entry
	// orphans is how many of spent's first entries are h.orphans'; taken
	// is how many of each job's ledger entries spent holds.
	orphans int
	taken   map[*stream]int
}

// loss is a job the hub stops writing for, and what its run is told.
type loss struct {
	fn  func(error)
	err error
}

// takeBatch marks the dirty jobs it takes as being written and collects
// their pending events and ledger entries.
func (h *Hub) takeBatch() batch {
	h.mu.Lock()
	defer h.mu.Unlock()
	solo := h.solo > 0
	if solo {
		h.solo--
	}
	// The ledger entries of calls go with the events of their jobs (a
	// call's checkpoint event is never durable without its entry), and
	// the orphans with them, unless a batch of one job looks for a refused
	// event.
	b := batch{taken: map[*stream]int{}}
	if !solo {
		b.spent = append(b.spent, h.orphans...)
	}
	b.orphans = len(b.spent)
	for id, s := range h.dirty {
		if !s.owned || (len(s.pending) == 0 && len(s.usage) == 0) {
			delete(h.dirty, id)
			continue
		}
		if s.writing || len(b.events) >= maxBatch || (solo && len(b.jobs) > 0) {
			continue
		}
		s.writing = true
		b.events = append(b.events, s.pending...)
		b.spent = append(b.spent, s.usage...)
		b.taken[s] = len(s.usage)
		b.fences = append(b.fences, ports.Fence{JobID: id, Attempt: s.attempt})
		b.jobs = append(b.jobs, s)
	}
	return b
}

// commitBatch writes a batch in one unit of work, after checking every
// job's fence.
func (h *Hub) commitBatch(b batch) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.uow.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		lost, err := r.Jobs.CheckFences(ctx, b.fences)
		if err != nil {
			return err
		}
		if len(lost) > 0 {
			return &errFenced{ids: lost}
		}
		if err := r.Events.Append(ctx, b.events); err != nil {
			return err
		}
		if r.Usage == nil || len(b.spent) == 0 {
			return nil
		}
		return r.Usage.AppendUsage(ctx, b.spent)
	})
}

// settleBatch records how a batch's write went (err) for each of its jobs:
// written events become durable and are delivered, a fenced or refused job
// is disowned (its losses, for the caller to tell outside the lock).
func (h *Hub) settleBatch(b batch, err error, fenced *errFenced) []loss {
	var losses []loss
	permanent := errors.Is(err, ports.ErrInvalid) && len(b.jobs) == 1
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.orphans = h.orphans[b.orphans:]
	}
	for i, s := range b.jobs {
		s.writing = false
		id := b.fences[i].JobID
		if s.attempt != b.fences[i].Attempt {
			// A later run took the stream over (Own) while the batch was
			// in flight: the batch's outcome was the earlier run's, and
			// the new run numbered after what its claim found durable.
			continue
		}
		switch {
		case err == nil:
			n := countOf(b.events, id)
			s.durable = append(s.durable, s.pending[:n]...)
			s.pending = s.pending[n:]
			s.usage = s.usage[min(b.taken[s], len(s.usage)):] // Seal may have taken them meanwhile
			h.wakeLocked(id, s)
			h.announce(id)
		case fenced != nil && contains(fenced.ids, id), errors.Is(err, ports.ErrConflict) && len(b.jobs) == 1:
			// Another worker or a canceller holds the job now: what is
			// pending here was never seen by anyone, and is dropped.
			losses = append(losses, loss{h.disownLocked(id, s), fmt.Errorf("eventhub: job %s: %w", id, ports.ErrFenced)})
		case permanent:
			losses = append(losses, loss{h.disownLocked(id, s), fmt.Errorf("eventhub: job %s: %w", id, err)})
		}
	}
	h.cond.Broadcast()
	return losses
}

func countOf(evs []job.Event, id string) int {
	n := 0
	for _, e := range evs {
		if e.JobID == id {
			n++
		}
	}
	return n
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// sweep forgets finished jobs older than Retain (PrivateRetain for private
// ones), and reports whether ledger entries wait to be written on their
// own.
func (h *Hub) sweep() bool {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, s := range h.streams {
		retain := h.cfg.Retain
		if s.private {
			retain = h.cfg.PrivateRetain
		}
		if !s.owned && (s.ended || s.sealed) && !s.writing && now.Sub(s.endedAt) > retain {
			delete(h.streams, id)
		}
	}
	return len(h.orphans) > 0
}

// Close writes what is pending and stops the writer.
func (h *Hub) Close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	<-h.quiet
}
