package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// Hub is the in-process side of the event log. Jobs running here publish
// through it: each event gets the job's next sequence number, wakes the
// job's followers at once, and is written to the durable ports.EventLog by one
// background writer in batches, so the hot path never waits for a commit per
// event. Terminal events are flushed before Publish returns. Followers of jobs
// that run elsewhere (another replica, or a job finished long ago) read the
// EventLog, polling while the job is live.
type Hub struct {
	log   ports.EventLog
	clock ports.Clock
	lg    *slog.Logger

	// PollInterval is how often a follower of a job not running here polls
	// the log.
	PollInterval time.Duration
	// Retain is how long a finished job's events stay in memory after they
	// are durable.
	Retain time.Duration
	// Linger is how long the writer waits after the first pending event
	// before writing, to batch a burst into one append.
	Linger time.Duration

	mu      sync.Mutex
	streams map[string]*stream
	pending []job.Event
	kick    chan struct{}
	urgent  chan struct{} // a Flush is waiting
	flushed *sync.Cond    // signalled after each batch is written
	stop    chan struct{}
	done    chan struct{}
	written map[string]int64 // highest durable seq per live job
}

type stream struct {
	// first is the sequence number of the first event published here; the
	// log holds the ones before it.
	first    int64
	events   []job.Event
	wake     chan struct{}
	terminal bool
	endedAt  time.Time
}

// NewHub starts the background writer; Close stops it after a final flush.
func NewHub(log ports.EventLog, clock ports.Clock, lg *slog.Logger) *Hub {
	h := &Hub{
		log: log, clock: clock, lg: lg,
		PollInterval: 250 * time.Millisecond,
		Retain:       time.Minute,
		streams:      map[string]*stream{},
		kick:         make(chan struct{}, 1),
		urgent:       make(chan struct{}, 1),
		Linger:       5 * time.Millisecond,
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
		written:      map[string]int64{},
	}
	h.flushed = sync.NewCond(&h.mu)
	go h.writer()
	return h
}

// Open registers a job that will publish from this process. after is the
// highest sequence number already in the log (0 for a new job).
func (h *Hub) Open(jobID string, after int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.streams[jobID]; ok {
		return
	}
	h.streams[jobID] = &stream{first: after + 1, events: make([]job.Event, 0, 16), wake: make(chan struct{})}
	h.written[jobID] = after
}

// Publish appends an event to a job opened here. It returns false, and
// publishes nothing, once the job has a terminal event: nothing may follow
// completed, failed or cancelled.
func (h *Hub) Publish(ctx context.Context, jobID string, t job.EventType, data map[string]any) (job.Event, bool) {
	h.mu.Lock()
	s, ok := h.streams[jobID]
	if !ok || s.terminal {
		h.mu.Unlock()
		return job.Event{}, false
	}
	ev := job.Event{JobID: jobID, Seq: s.first + int64(len(s.events)), Type: t, Data: data, CreatedAt: h.clock.Now()}
	s.events = append(s.events, ev)
	close(s.wake)
	s.wake = make(chan struct{})
	h.pending = append(h.pending, ev)
	if t.Terminal() {
		s.terminal = true
		s.endedAt = ev.CreatedAt
	}
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
	if t.Terminal() {
		h.Flush(ctx, jobID, ev.Seq)
	}
	return ev, true
}

// Flush waits until the job's events up to seq are durable or ctx ends.
func (h *Hub) Flush(ctx context.Context, jobID string, seq int64) {
	stop := context.AfterFunc(ctx, func() {
		h.mu.Lock()
		h.flushed.Broadcast()
		h.mu.Unlock()
	})
	defer stop()
	select {
	case h.urgent <- struct{}{}:
	default:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.written[jobID] < seq && ctx.Err() == nil && !h.closed() {
		h.flushed.Wait()
	}
}

func (h *Hub) closed() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// writer persists pending events in batches until Close.
func (h *Hub) writer() {
	defer close(h.done)
	sweep := time.NewTicker(10 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-h.kick:
			// Linger briefly so that the events of one burst go in one
			// append (one commit); a flush (terminal event) cuts it short.
			if h.Linger > 0 {
				t := time.NewTimer(h.Linger)
				select {
				case <-t.C:
				case <-h.urgent:
				case <-h.stop:
				}
				t.Stop()
			}
			h.writePending()
		case <-sweep.C:
			h.sweep()
		case <-h.stop:
			h.writePending()
			return
		}
	}
}

const maxBatch = 1000

func (h *Hub) writePending() {
	for {
		h.mu.Lock()
		n := min(len(h.pending), maxBatch)
		if n == 0 {
			h.mu.Unlock()
			return
		}
		batch := append([]job.Event(nil), h.pending[:n]...)
		h.mu.Unlock()

		// A batch that could not be written after retries is logged and
		// counted as done all the same: Flush must not wait forever.
		h.appendWithRetry(batch)

		h.mu.Lock()
		h.pending = h.pending[n:]
		for _, ev := range batch {
			if ev.Seq > h.written[ev.JobID] {
				h.written[ev.JobID] = ev.Seq
			}
		}
		h.flushed.Broadcast()
		h.mu.Unlock()
	}
}

func (h *Hub) appendWithRetry(batch []job.Event) {
	var err error
	for try := 0; try < 5; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = h.log.Append(ctx, batch)
		cancel()
		if err == nil {
			return
		}
		if errors.Is(err, ports.ErrConflict) {
			// Another instance wrote some of these (job, seq) pairs, for
			// example the cancelled event of a job it cancelled. A batch is
			// all or none: write the events one by one so that only the
			// clashing ones are dropped.
			if len(batch) > 1 {
				for _, ev := range batch {
					h.appendWithRetry([]job.Event{ev})
				}
			}
			return
		}
		time.Sleep(time.Duration(50<<try) * time.Millisecond)
	}
	// The events stay in memory for local followers; remote followers will
	// miss them, so say so loudly.
	h.lg.Error("event log append failed, events not durable", "events", len(batch), "err", err)
}

// sweep forgets finished jobs whose events are durable and older than Retain.
func (h *Hub) sweep() {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, s := range h.streams {
		if s.terminal && now.Sub(s.endedAt) > h.Retain && h.written[id] >= s.events[len(s.events)-1].Seq {
			delete(h.streams, id)
			delete(h.written, id)
		}
	}
}

// Close flushes what is pending and stops the writer.
func (h *Hub) Close() {
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	<-h.done
	h.mu.Lock()
	h.flushed.Broadcast()
	h.mu.Unlock()
}

// Wait returns the job's events with Seq > after, blocking until there is at
// least one or ctx ends (then it returns ctx's error and no events).
func (h *Hub) Wait(ctx context.Context, jobID string, after int64) ([]job.Event, error) {
	for {
		h.mu.Lock()
		s, local := h.streams[jobID]
		if local {
			if after < s.first-1 {
				// Older events were published before this process opened
				// the stream: read them from the log.
				h.mu.Unlock()
				return h.log.List(ctx, jobID, after, maxBatch)
			}
			if evs := since(s.events, after); len(evs) > 0 {
				h.mu.Unlock()
				return evs, nil
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
		h.mu.Unlock()
		evs, err := h.log.List(ctx, jobID, after, maxBatch)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		select {
		case <-time.After(h.PollInterval):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func since(evs []job.Event, after int64) []job.Event {
	for i, ev := range evs {
		if ev.Seq > after {
			return append([]job.Event(nil), evs[i:]...)
		}
	}
	return nil
}

// AppendDurable writes events for a job that is not running here (one failed
// by the reaper, or cancelled from another instance), numbering them after
// the log's last event. If the instance that runs the job writes events
// meanwhile, the numbers clash and it tries again after them.
func (h *Hub) AppendDurable(ctx context.Context, jobID string, types []job.EventType, data []map[string]any) error {
	var err error
	for try := 0; try < 10; try++ {
		last := int64(0)
		for {
			evs, lerr := h.log.List(ctx, jobID, last, maxBatch)
			if lerr != nil {
				return lerr
			}
			if len(evs) == 0 {
				break
			}
			last = evs[len(evs)-1].Seq
		}
		batch := make([]job.Event, len(types))
		for i, t := range types {
			batch[i] = job.Event{JobID: jobID, Seq: last + int64(i) + 1, Type: t, Data: data[i], CreatedAt: h.clock.Now()}
		}
		if err = h.log.Append(ctx, batch); !errors.Is(err, ports.ErrConflict) {
			return err
		}
		select {
		case <-time.After(time.Duration(try+1) * 5 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}
