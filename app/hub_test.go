package app_test

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// logStub is a minimal durable log that counts its appends.
type logStub struct {
	mu      sync.Mutex
	events  map[string][]job.Event
	appends int
	block   chan struct{}
}

func (l *logStub) Append(ctx context.Context, evs []job.Event) error {
	if l.block != nil {
		<-l.block
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appends++
	for _, e := range evs {
		l.events[e.JobID] = append(l.events[e.JobID], e)
	}
	return nil
}

func (l *logStub) List(ctx context.Context, id string, after int64, limit int) ([]job.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []job.Event
	for _, e := range l.events[id] {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

var _ ports.EventLog = (*logStub)(nil)

func newHub(l ports.EventLog) *app.Hub {
	h := app.NewHub(l, system.Clock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.PollInterval = 5 * time.Millisecond
	return h
}

func TestHubOrderAndTerminal(t *testing.T) {
	is := is.New(t)
	l := &logStub{events: map[string][]job.Event{}}
	h := newHub(l)
	defer h.Close()
	ctx := context.Background()
	h.Open("j", 0)
	for i := 0; i < 5; i++ {
		ev, ok := h.Publish(ctx, "j", job.EventAttempt, map[string]any{"i": i})
		is.True(ok)
		is.Equal(ev.Seq, int64(i+1))
	}
	evs, err := h.Wait(ctx, "j", 2)
	is.NoErr(err)
	is.Equal(len(evs), 3)
	is.Equal(evs[0].Seq, int64(3))

	_, ok := h.Publish(ctx, "j", job.EventCompleted, map[string]any{})
	is.True(ok)
	// the terminal event is durable when Publish returns
	stored, _ := l.List(ctx, "j", 0, 100)
	is.Equal(len(stored), 6)
	// nothing follows a terminal event
	_, ok = h.Publish(ctx, "j", job.EventAttempt, map[string]any{})
	is.True(!ok)
	_, ok = h.Publish(ctx, "unknown", job.EventAttempt, map[string]any{})
	is.True(!ok)
}

func TestHubWaitWakes(t *testing.T) {
	is := is.New(t)
	h := newHub(&logStub{events: map[string][]job.Event{}})
	defer h.Close()
	h.Open("j", 0)
	got := make(chan []job.Event)
	go func() {
		evs, _ := h.Wait(context.Background(), "j", 0)
		got <- evs
	}()
	time.Sleep(10 * time.Millisecond)
	h.Publish(context.Background(), "j", job.EventModelStarted, map[string]any{})
	select {
	case evs := <-got:
		is.Equal(len(evs), 1)
	case <-time.After(time.Second):
		t.Fatal("Wait did not wake")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := h.Wait(ctx, "j", 1)
	is.Equal(err, context.DeadlineExceeded)
}

// TestHubBatches: events published while the log is busy go in one append.
func TestHubBatches(t *testing.T) {
	is := is.New(t)
	l := &logStub{events: map[string][]job.Event{}, block: make(chan struct{})}
	h := newHub(l)
	ctx := context.Background()
	h.Open("j", 0)
	h.Publish(ctx, "j", job.EventModelStarted, map[string]any{}) // the writer blocks on this one
	time.Sleep(10 * time.Millisecond)
	for i := 0; i < 50; i++ {
		h.Publish(ctx, "j", job.EventAttempt, map[string]any{})
	}
	close(l.block)
	h.Close()
	is.True(l.appends <= 3)
	stored, _ := l.List(ctx, "j", 0, 100)
	is.Equal(len(stored), 51)
}

// TestHubRemoteFollow: a job not running here is read from the log,
// polling until events come.
func TestHubRemoteFollow(t *testing.T) {
	is := is.New(t)
	l := &logStub{events: map[string][]job.Event{}}
	h := newHub(l)
	defer h.Close()
	ctx := context.Background()
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = h.AppendDurable(ctx, "remote", []job.EventType{job.EventError, job.EventFailed}, []map[string]any{{}, {}})
	}()
	evs, err := h.Wait(ctx, "remote", 0)
	is.NoErr(err)
	is.Equal(len(evs), 2)
	is.Equal(evs[1].Seq, int64(2))
	is.NoErr(h.AppendDurable(ctx, "remote", []job.EventType{job.EventCancelled}, []map[string]any{{}}))
	evs, _ = l.List(ctx, "remote", 2, 10)
	is.Equal(evs[0].Seq, int64(3))

	// A stream reopened after events exist continues the numbering, and
	// older events still come from the log.
	h.Open("remote", 3)
	ev, ok := h.Publish(ctx, "remote", job.EventAttempt, map[string]any{})
	is.True(ok)
	is.Equal(ev.Seq, int64(4))
	evs, err = h.Wait(ctx, "remote", 0)
	is.NoErr(err)
	is.Equal(evs[0].Seq, int64(1))
}

// conflictLog refuses appends that touch a (job, seq) it already holds, all
// or none, like the Postgres adapter.
type conflictLog struct{ logStub }

func (l *conflictLog) Append(ctx context.Context, evs []job.Event) error {
	l.mu.Lock()
	for _, e := range evs {
		for _, have := range l.events[e.JobID] {
			if have.Seq == e.Seq {
				l.mu.Unlock()
				return ports.ErrConflict
			}
		}
	}
	l.mu.Unlock()
	return l.logStub.Append(ctx, evs)
}

// TestHubConflicts: when another instance wrote one (job, seq) of a batch,
// only that event is dropped, not the rest of the batch; and AppendDurable
// numbers its events after whatever the log holds when it retries.
func TestHubConflicts(t *testing.T) {
	is := is.New(t)
	l := &conflictLog{logStub{events: map[string][]job.Event{}}}
	ctx := context.Background()
	// Another writer already holds seq 2 of job a.
	is.NoErr(l.Append(ctx, []job.Event{{JobID: "a", Seq: 2, Type: job.EventCancelled}}))
	h := newHub(l)
	h.Open("a", 0)
	h.Open("b", 0)
	for i := 0; i < 3; i++ {
		h.Publish(ctx, "a", job.EventAttempt, map[string]any{})
		h.Publish(ctx, "b", job.EventAttempt, map[string]any{})
	}
	h.Close()
	a, _ := l.List(ctx, "a", 0, 10)
	b, _ := l.List(ctx, "b", 0, 10)
	sort.Slice(a, func(i, j int) bool { return a[i].Seq < a[j].Seq })
	is.Equal(len(a), 3)                     // 1 and 3 from here, 2 from the other writer
	is.Equal(a[1].Type, job.EventCancelled) // the other writer's event stands
	is.Equal(len(b), 3)                     // job b lost nothing to a's clash

	is.NoErr(h.AppendDurable(ctx, "a", []job.EventType{job.EventFailed}, []map[string]any{{}}))
	a, _ = l.List(ctx, "a", 3, 10)
	is.Equal(len(a), 1)
	is.Equal(a[0].Seq, int64(4))
}

func TestStringsOfAndInt64Of(t *testing.T) {
	is := is.New(t)
	is.Equal(app.StringsOf([]string{"a"}), []string{"a"})
	is.Equal(app.StringsOf([]any{"a", 1, "b"}), []string{"a", "b"})
	is.Equal(app.StringsOf(nil), []string(nil))
	is.Equal(app.Int64Of(int64(3)), int64(3))
	is.Equal(app.Int64Of(3.0), int64(3))
	is.Equal(app.Int64Of("x"), int64(0))
}
