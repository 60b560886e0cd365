package jobrun_test

import (
	"context"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/inproc"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// billingRunner charges one answered call and publishes its checkpoint,
// says so, waits for its run's context to end, and then charges a second
// call whose answer came as the job was taken from it.
type billingRunner struct{ answered chan string }

func (r billingRunner) Run(ctx context.Context, w *ports.Work) ports.Outcome {
	w.Charge(usage.Entry{ID: w.Job.ID + "/1", Model: "p::m", InputTokens: 10, Cost: 100, Outcome: usage.OK, CreatedAt: time.Now()})
	w.Publish(job.ExpertiseCompleted{Model: "p::m", Key: "k", Success: true, InputTokens: 10, Cost: 100})
	r.answered <- w.Job.ID
	<-ctx.Done()
	w.Charge(usage.Entry{ID: w.Job.ID + "/2", Model: "p::m", InputTokens: 10, Cost: 100, Outcome: usage.OK, CreatedAt: time.Now()})
	return ports.Outcome{}
}

// ledgerWorld is two replicas on shared memory stores: here runs jobs,
// there only cancels them (over here's head: nobody tells here).
type ledgerWorld struct {
	here, there *jobrun.Engine
	ledger      *memory.UsageLedger
	events      *memory.EventLog
	jobs        *memory.JobStore
	answered    chan string
}

func newLedgerWorld(t *testing.T) *ledgerWorld {
	t.Helper()
	jobs, events, ledger := memory.NewJobStore(), memory.NewEventLog(), memory.NewUsageLedger()
	queue := inproc.New()
	uow := memory.NewUnitOfWork(memory.NewOrgStore(), memory.NewUserStore(), memory.NewAPIKeyStore(), memory.NewSchemaStore(),
		memory.NewRecordStore(), jobs, events, memory.NewRefreshTokenStore(), queue).WithUsage(ledger)
	lg := slog.New(slog.DiscardHandler)
	w := &ledgerWorld{ledger: ledger, events: events, jobs: jobs, answered: make(chan string, 4)}
	replica := func(owner string) *jobrun.Engine {
		hub := eventhub.New(uow, events, system.Clock{}, lg, eventhub.Config{})
		t.Cleanup(hub.Close)
		return jobrun.New(jobrun.Deps{UoW: uow, Jobs: jobs, Events: events, Queue: queue, Stream: hub, Clock: system.Clock{}, Log: lg},
			jobrun.Config{Owner: owner, Workers: 2, PerOrg: 2, LeaseTTL: 300 * time.Millisecond},
			jobrun.Runners{job.TypeEnrichment: billingRunner{answered: w.answered}})
	}
	w.here, w.there = replica("here"), replica("there")
	if err := w.here.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a run the test left waiting is stopped
		defer cancel()
		_ = w.here.Stop(ctx)
	})
	return w
}

// billed lists the ledger's entry ids of the organization, sorted.
func (w *ledgerWorld) billed(t *testing.T) []string {
	t.Helper()
	es, err := w.ledger.ListUsage(context.Background(), "org", time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids
}

// waitFor polls cond until it holds (5 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
	}
}

// TestAnsweredCallsAreBilledWhoeverEndsTheJob: a call's ledger entry is
// written as its answer arrives (with its checkpoint event), not with the
// job's end; when a cancel on another replica ends the job over its run's
// head, the calls the run was answered before and after are billed all the
// same, each once.
func TestAnsweredCallsAreBilledWhoeverEndsTheJob(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	w := newLedgerWorld(t)
	j, err := w.here.Submit(ctx, "job-1", "org", job.TypeEnrichment, []byte(`{}`), nil)
	is.NoErr(err)
	<-w.answered
	waitFor(t, "the checkpoint event", func() bool {
		evs, _ := w.events.List(ctx, j.ID, 0, 0)
		return len(evs) > 0
	})
	// The job still runs, and a replica that died now would have billed
	// the call already.
	waitFor(t, "the first call's entry", func() bool { return len(w.billed(t)) == 1 })
	is.Equal(len(w.here.Running()), 1)

	is.NoErr(w.there.Cancel(ctx, "org", j.ID, "test"))
	waitFor(t, "the run to stop", func() bool { return len(w.here.Running()) == 0 })
	waitFor(t, "the second call's entry", func() bool { return len(w.billed(t)) == 2 })
	is.Equal(w.billed(t), []string{"job-1/1", "job-1/2"}) // each once
	got, err := w.jobs.GetJob(ctx, "org", j.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Cancelled)
	es, _ := w.ledger.ListUsage(ctx, "org", time.Time{}, time.Now().Add(time.Hour))
	for _, e := range es {
		is.Equal(e.JobID, j.ID)                      // the runtime names the job
		is.Equal(e.Task, string(job.TypeEnrichment)) // and its type as the task
	}
}
