package eventhub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/matryer/is"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// memoryStores is a unit of work on memory storage, with its job store and
// event log.
func memoryStores() (*memory.UnitOfWork, *memory.JobStore, *memory.EventLog) {
	jobs, events := memory.NewJobStore(), memory.NewEventLog(jobcodec.Events{})
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), jobs, events, memory.NewRefreshTokenStore(), nil)
	return uow, jobs, events
}

func TestEventStreamMemory(t *testing.T) {
	contract.RunEventStream(t, func(*testing.T) contract.StreamFixture {
		uow, jobs, events := memoryStores()
		ledger := memory.NewUsageLedger()
		uow.WithUsage(ledger)
		reads := contract.NewWatchedLog(events)
		h := eventhub.New(uow, reads, system.Clock{}, quiet(), eventhub.Config{PollInterval: 20 * time.Millisecond})
		return contract.StreamFixture{Stream: h, UoW: uow, Jobs: jobs, Events: events, Reads: reads, Usage: ledger}
	})
}

func TestEventStreamPostgres(t *testing.T) {
	for _, b := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"native", pgtest.Native}, {"pglite", pgtest.PGlite}} {
		t.Run(b.name, func(t *testing.T) {
			db, err := postgres.Open(t.Context(), b.dsn(t), postgres.PoolConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := postgres.Migrate(t.Context(), db.DB); err != nil {
				t.Fatal(err)
			}
			contract.RunEventStream(t, func(t *testing.T) contract.StreamFixture {
				uow := postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, func(bun.Tx) ports.JobEnqueuer { return nil })
				jobs, events := postgres.NewJobStore(db), postgres.NewEventLog(db, jobcodec.Events{})
				reads := contract.NewWatchedLog(events)
				h := eventhub.New(uow, reads, system.Clock{}, quiet(), eventhub.Config{PollInterval: 20 * time.Millisecond})
				return contract.StreamFixture{Stream: h, UoW: uow, Jobs: jobs, Events: events, Reads: reads,
					Usage: postgres.NewUsageLedger(db)}
			})
		})
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// downUoW is a database that stays unreachable.
type downUoW struct{}

func (downUoW) InTx(context.Context, func(context.Context, ports.Repos) error) error {
	return fmt.Errorf("test: %w", ports.ErrUnavailable)
}

func (downUoW) EndJob(context.Context, ports.JobEnd) error {
	return fmt.Errorf("test: %w", ports.ErrUnavailable)
}

// TestOutageGivesUp: while writes keep failing, events wait (nothing is
// delivered that is not stored); past GiveUp, or past MaxPending unwritten
// events, the job is given up here and its holder told why.
func TestOutageGivesUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  eventhub.Config
		n    int
	}{
		{"writes failing for longer than GiveUp", eventhub.Config{GiveUp: 200 * time.Millisecond}, 3},
		{"more unwritten events than MaxPending", eventhub.Config{GiveUp: time.Hour, MaxPending: 5}, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			h := eventhub.New(downUoW{}, memory.NewEventLog(jobcodec.Events{}), system.Clock{}, quiet(), tt.cfg)
			defer h.Close()
			lost := make(chan error, 1)
			h.Own("j1", 1, 0, func(err error) { lost <- err })
			for i := 0; i < tt.n; i++ {
				h.Publish("j1", job.NewDraft(job.JobResumed{Attempt: 1, AfterEvent: int64(i)}))
			}
			select {
			case err := <-lost:
				is.True(errors.Is(err, ports.ErrUnavailable))
			case <-time.After(10 * time.Second):
				t.Fatal("the holder was not told")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			evs, err := h.Wait(ctx, "j1", 0)
			is.Equal(len(evs), 0) // nothing unstored reached a follower
			is.True(errors.Is(err, context.DeadlineExceeded))
			is.True(!h.Publish("j1", job.NewDraft(job.JobResumed{}))) // given up here
		})
	}
}

// TestAnnouncesAcrossInstances: two hubs on one PostgreSQL, as two replicas.
// The owner's durable events are announced after their commit (NOTIFY), so a
// follower on the other instance wakes at once: its polling is set to a
// minute, so only the announcement can wake it within the test's bound.
func TestAnnouncesAcrossInstances(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	dsn := pgtest.Native(t)
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	is.NoErr(err)
	defer db.Close()
	is.NoErr(postgres.Migrate(ctx, db.DB))
	uow := postgres.NewUnitOfWork(db.DB, jobcodec.Events{}, func(bun.Tx) ports.JobEnqueuer { return nil })
	jobs, events := postgres.NewJobStore(db), postgres.NewEventLog(db, jobcodec.Events{})
	notify := postgres.NewInvalidations(db, dsn, quiet())
	owner := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{Announce: notify})
	defer owner.Close()
	other := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{PollInterval: time.Minute})
	defer other.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	listening := make(chan struct{})
	go func() {
		var once sync.Once
		_ = notify.Listen(lctx, func(kind, id string) {
			switch kind {
			case "*": // LISTEN is in place: what is notified from now on arrives
				once.Do(func() { close(listening) })
			case "events":
				other.Delivered(id)
			}
		})
	}()

	org := &access.Organization{ID: "org-" + fmt.Sprint(time.Now().UnixNano()), Name: "announce", CreatedAt: time.Now()}
	is.NoErr(postgres.NewOrgStore(db).CreateOrg(ctx, org))
	now := time.Now()
	j := &job.Job{ID: "job-" + org.ID, OrgID: org.ID, Type: job.TypeEnrichment, State: job.Running, Request: []byte(`{}`),
		CreatedAt: now, UpdatedAt: now, HeartbeatAt: now, Attempt: 1, Owner: "a", LeaseUntil: now.Add(time.Minute)}
	is.NoErr(jobs.CreateJob(ctx, j))
	owner.Own(j.ID, 1, 0, func(error) {})

	follow := func(after int64) []job.Event {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var got []job.Event
		for len(got) == 0 {
			evs, err := other.Wait(wctx, j.ID, after)
			if err != nil {
				t.Fatalf("the other instance's follower was not woken: %v", err)
			}
			got = evs
		}
		return got
	}
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not connect")
	}
	start := time.Now()
	owner.Publish(j.ID, job.NewDraft(job.ModelStarted{Model: "sandbox::echo"}))
	got := follow(0)
	is.Equal(got[0].Seq, int64(1))
	is.True(time.Since(start) < 5*time.Second)

	// The end, written outside the hub's batches (EndJob), is announced by
	// Sealed.
	evs, _ := owner.Seal(ctx, j.ID, job.Cancellation("test"))
	end := *j
	is.NoErr(end.Cancel("test", time.Now()))
	is.NoErr(uow.EndJob(ctx, ports.JobEnd{Job: &end, From: job.Running, Events: evs}))
	owner.Sealed(j.ID, evs, nil)
	got = follow(1)
	is.Equal(got[len(got)-1].Type, job.EventCancelled)
}

// announcements records what a hub announces.
type announcements struct {
	ports.Invalidations
	ids chan string
}

func (a *announcements) PublishAll(_ context.Context, _ string, ids []string) error {
	for _, id := range ids {
		a.ids <- id
	}
	return nil
}

// TestPrivateJobsAreNotAnnounced: the end of a job marked Private (nobody
// elsewhere can follow it yet) is delivered here but not announced; owning
// it again makes it public.
func TestPrivateJobsAreNotAnnounced(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	uow, _, events := memoryStores()
	ann := &announcements{ids: make(chan string, 8)}
	h := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{Announce: ann})
	defer h.Close()

	end := func(id string) {
		t.Helper()
		evs, _ := h.Seal(ctx, id, job.Cancellation("test"))
		is.Equal(len(evs), 1)
		h.Sealed(id, evs, nil)
		got, err := h.Wait(ctx, id, 0)
		is.NoErr(err)
		is.Equal(got[0].Type, job.EventCancelled) // delivered here either way
	}
	h.Own("private", 1, 0, func(error) {})
	h.Private("private")
	end("private")
	h.Own("public", 1, 0, func(error) {})
	h.Private("public")
	h.Own("public", 1, 0, func(error) {}) // stored now: public again
	end("public")
	select {
	case id := <-ann.ids:
		is.Equal(id, "public")
	case <-time.After(5 * time.Second):
		t.Fatal("the public job's end was not announced")
	}
	select {
	case id := <-ann.ids:
		t.Fatalf("%s announced too", id)
	case <-time.After(50 * time.Millisecond):
	}
}

// countingLog counts the reads of the log.
type countingLog struct {
	ports.EventLog
	lists atomic.Int64
}

func (l *countingLog) List(ctx context.Context, jobID string, after int64, limit int) ([]job.Event, error) {
	l.lists.Add(1)
	return l.EventLog.List(ctx, jobID, after, limit)
}

// TestFinishedJobsAreForgotten: a finished job's events are served from
// memory just after its end, forgotten past Retain, and then read from the
// log, whole.
func TestFinishedJobsAreForgotten(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h, log, end := retainingHub(t, eventhub.Config{Retain: 100 * time.Millisecond})

	h.Own("j", 1, 0, func(error) {})
	end("j")
	got, err := h.Wait(ctx, "j", 0)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(log.lists.Load(), int64(0)) // from memory

	got = readFromLog(t, h, log, "j")
	is.Equal(len(got), 1)
	is.Equal(got[0].Type, job.EventCancelled)
	is.Equal(got[0].Seq, int64(1))
}

// retainingHub is a hub on memory storage whose log counts its reads, and
// end, which ends an owned job with a cancellation stored as the job's end
// statement stores it.
func retainingHub(t *testing.T, cfg eventhub.Config) (*eventhub.Hub, *countingLog, func(id string)) {
	t.Helper()
	uow, _, events := memoryStores()
	log := &countingLog{EventLog: events}
	h := eventhub.New(uow, log, system.Clock{}, quiet(), cfg)
	t.Cleanup(h.Close)
	end := func(id string) {
		t.Helper()
		evs, _ := h.Seal(t.Context(), id, job.Cancellation("test"))
		if err := events.Append(t.Context(), evs); err != nil {
			t.Fatal(err)
		}
		h.Sealed(id, evs, nil)
	}
	return h, log, end
}

// readFromLog follows job id until the hub reads it from the log (it
// forgot the job), within 5 s, and returns what it read.
func readFromLog(t *testing.T, h *eventhub.Hub, log *countingLog, id string) []job.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for before := log.lists.Load(); ; {
		got, err := h.Wait(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if log.lists.Load() > before {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s was still served from memory 5 s after its end", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPrivateJobsAreForgottenSooner: a private job's events (a synchronous
// request's) stay in memory for PrivateRetain, not Retain: its request
// takes its end from memory, a later follower reads the log, whole; a
// public job's stay for Retain.
func TestPrivateJobsAreForgottenSooner(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h, log, end := retainingHub(t, eventhub.Config{Retain: time.Hour, PrivateRetain: 50 * time.Millisecond})
	h.Own("public", 1, 0, func(error) {})
	end("public")
	h.Own("private", 1, 0, func(error) {})
	h.Private("private")
	end("private")
	got, err := h.Wait(ctx, "private", 0) // the request that waited on it
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(log.lists.Load(), int64(0)) // from memory

	got = readFromLog(t, h, log, "private")
	is.Equal(len(got), 1)
	is.Equal(got[0].Type, job.EventCancelled)

	reads := log.lists.Load()
	got, err = h.Wait(ctx, "public", 0)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(log.lists.Load(), reads) // the public job's still from memory
}

// TestEndedJobsLetTheirRunGo: once a job's end is durable, the hub keeps its
// events for late followers but not the lost callback, which refers to the
// engine's whole run (its job, tracker and contexts): kept for Retain at a
// high rate of jobs, that is a great deal of live heap for the collector
// to mark.
func TestEndedJobsLetTheirRunGo(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	uow, _, events := memoryStores()
	h := eventhub.New(uow, events, system.Clock{}, quiet(), eventhub.Config{Retain: time.Hour})
	defer h.Close()

	type run struct{ state [1 << 10]byte }
	own := func() weak.Pointer[run] {
		r := &run{}
		h.Own("j", 1, 0, func(error) { r.state[0]++ })
		return weak.Make(r)
	}
	gone := own()
	evs, _ := h.Seal(ctx, "j", job.Cancellation("test"))
	is.NoErr(events.Append(ctx, evs))
	h.Sealed("j", evs, nil)
	runtime.GC()
	is.True(gone.Value() == nil) // the run went with the job's end
	got, err := h.Wait(ctx, "j", 0)
	is.NoErr(err)
	is.Equal(len(got), 1) // while its events stay for late followers
}

// gatedUoW holds the answer of its first unit of work, once committed,
// until release is closed.
type gatedUoW struct {
	ports.UnitOfWork
	once               sync.Once
	committed, release chan struct{}
}

func (g *gatedUoW) InTx(ctx context.Context, fn func(context.Context, ports.Repos) error) error {
	err := g.UnitOfWork.InTx(ctx, fn)
	g.once.Do(func() {
		close(g.committed)
		<-g.release
	})
	return err
}

// TestReownedWhileWriting: a later run takes a job's stream over while the
// earlier run's batch is in flight (the claim waited for that batch's
// commit, so the later run numbers after it). The batch's outcome is the
// earlier run's: the later run's events are neither taken for written nor
// dropped, and the job's log has no gap.
func TestReownedWhileWriting(t *testing.T) {
	is := is.New(t)
	uow, jobs, events := memoryStores()
	j := &job.Job{ID: "j1", OrgID: "o1", Type: job.TypeBatchEnrichment, State: job.Pending}
	is.NoErr(j.Claim("here", time.Now(), time.Minute))
	is.NoErr(jobs.CreateJob(t.Context(), j))
	g := &gatedUoW{UnitOfWork: uow, committed: make(chan struct{}), release: make(chan struct{})}
	h := eventhub.New(g, events, system.Clock{}, quiet(), eventhub.Config{PollInterval: 20 * time.Millisecond})
	defer h.Close()
	h.Own("j1", j.Attempt, 0, func(error) {})
	for i := range 3 {
		h.Publish("j1", job.NewDraft(job.JobResumed{Attempt: 1, AfterEvent: int64(i)}))
	}
	<-g.committed
	// The later run's claim, then its stream, before the batch settles.
	_, err := jobs.UpdateJob(t.Context(), "j1", func(j *job.Job) error { j.Attempt++; return nil })
	is.NoErr(err)
	h.Own("j1", j.Attempt+1, 3, func(err error) { t.Errorf("the later run was given up: %v", err) })
	h.Publish("j1", job.NewDraft(job.JobResumed{Attempt: 2, AfterEvent: 3}))
	close(g.release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	evs, err := h.Wait(ctx, "j1", 3)
	is.NoErr(err)
	is.Equal(len(evs), 1)
	is.Equal(evs[0].Seq, int64(4))
	for stored := []job.Event(nil); len(stored) < 4; time.Sleep(10 * time.Millisecond) {
		stored, err = events.List(ctx, "j1", 0, 0)
		is.NoErr(err)
		for i, e := range stored {
			is.Equal(e.Seq, int64(i+1)) // gap-free
		}
		is.NoErr(ctx.Err())
	}
}
