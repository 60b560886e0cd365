package syncer_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/test/pgtest"
)

// The crash matrix (issue 28): two enrich servers in child processes
// (crashchild_test.go) share one native PostgreSQL database. Enrichments
// of a linked schema (sandbox::slow among them, so that a kill lands
// mid-job) are submitted to either; enrich sync's engine replicates the
// feed into a target with a per-entity revision log, claiming and
// acknowledging through either server; a loopback receiver takes the
// schema's event subscription and the link's delta webhook, answering
// slowly so that a kill lands mid-delivery. Meanwhile, at random points:
//   - a server is SIGKILLed and started again (mid-claim, mid-enrichment,
//     mid-webhook: each kill is counted by what was in flight);
//   - the consumer is killed after its commit and before its ack;
//   - the server that granted the live lease is killed before the ack.
//
// Then: every job completed or failed; each record has exactly one root
// delta and each entity's deltas carry revisions 1..k in feed order, k its
// records; the feed has no gap; the target's revision log shows every
// entity's revisions applied once, in order; the target equals a fresh
// snapshot load; every event id queued for the subscription arrived at
// least once, with a valid signature, and every record's enrichment_result
// among them; the link's webhook announced the head.
//
// ENRICH_CRASH_SEED replays a run's random choices (kill times shift with
// the machine's timing); ENRICH_LOAD=1 (make bench) runs the long matrix.

type crashSize struct {
	rounds, jobs, identities, kills int // jobs and kills per round
	round                           time.Duration
	consumerKill, leaseKill         float64 // chances after each commit
}

var (
	crashSmall = crashSize{rounds: 4, jobs: 12, identities: 8, kills: 2, round: 4 * time.Second, consumerKill: 0.25, leaseKill: 0.1}
	crashFull  = crashSize{rounds: 25, jobs: 24, identities: 30, kills: 3, round: 6 * time.Second, consumerKill: 0.2, leaseKill: 0.1}
)

const (
	envCrashSeed = "ENRICH_CRASH_SEED"
	crashLeaseS  = 10 // the smallest lease_s
)

func TestCrashMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash matrix starts servers: not in -short")
	}
	size := crashSmall
	if os.Getenv("ENRICH_LOAD") == "1" {
		size = crashFull
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envCrashSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: a number expected", envCrashSeed, s)
		}
		seed = v
	}
	t.Logf("crash matrix: seed %d (replay with %s=%d)", seed, envCrashSeed, seed)
	serverDSN, targetDSN, freshDSN := pgtest.Native(t), pgtest.Native(t), pgtest.Native(t)
	m := newCrashMatrix(t, seed, size, serverDSN)
	defer m.stopAll()
	m.setUp(targetDSN)

	began := time.Now()
	for round := range size.rounds {
		m.round(round, targetDSN)
	}
	killsOver := time.Now()
	head := m.settle(targetDSN)
	settled := time.Since(killsOver)

	want := m.checkServer(head)
	m.checkTarget(targetDSN, freshDSN, head, want)
	m.checkEvents()
	t.Logf("crash matrix: %d rounds, %d jobs, %d server kills (%s), consumer killed %d times after commit before ack, "+
		"%d consumer restarts; %d deltas, %d applied, %d delivered again and skipped; %d events received (%d distinct ids, "+
		"%d link notices); %s in all, settled %s after the last kill",
		size.rounds, m.submitted.Load(), m.kills.Load(), m.killKinds(), m.consumerKills.Load(), m.restarts.Load(), head,
		m.applied.Load(), m.skipped.Load(), m.rc.total(), m.rc.distinct(), m.rc.noticeCount(),
		time.Since(began).Round(time.Millisecond), settled.Round(time.Millisecond))
}

// crashMatrix is one run's servers, tenant, receiver and tallies.
type crashMatrix struct {
	t    *testing.T
	size crashSize
	rng  *lockedRand
	dsn  string
	reps []*crashReplica
	rc   *crashReceiver
	r    *replication

	bounceMu  sync.Mutex // one server down at a time
	kindsMu   sync.Mutex
	kinds     map[string]int
	kills     atomic.Int64
	submitted atomic.Int64
	claiming  atomic.Int64 // claims in flight
	granter   atomic.Pointer[crashReplica]
	// Each round kills a server once mid-claim and once while it holds
	// the live lease (the consumer between commit and ack).
	claimKilled, leaseKilled atomic.Bool

	consumerKills, restarts, applied, skipped atomic.Int64
	seq                                       atomic.Int64 // enrichments sent, for their values
}

func newCrashMatrix(t *testing.T, seed uint64, size crashSize, dsn string) *crashMatrix {
	m := &crashMatrix{t: t, size: size, rng: newLockedRand(seed), dsn: dsn, kinds: map[string]int{}}
	m.rc = newCrashReceiver(t, m.rng)
	spec := crashSpec{DatabaseURL: dsn, WebhookPorts: []uint16{m.rc.port()}, JobLease: 2 * time.Second, Workers: 8}
	for _, name := range []string{"a", "b"} {
		rep := &crashReplica{name: name, spec: spec}
		rep.start(t) // one after the other: the first migrates
		m.reps = append(m.reps, rep)
	}
	return m
}

func (m *crashMatrix) stopAll() {
	for _, r := range m.reps {
		if r.url() != "" {
			r.stop()
		}
	}
}

// setUp creates the tenant and its linked schema through server a, the
// subscription and the link's webhook (to the receiver, notified after a
// second's quiet), and the target's tables and revision log.
func (m *crashMatrix) setUp(targetDSN string) {
	m.r = newReplication(m.t, m.reps[0].url())
	r := m.r
	r.call("PATCH", "/api/databases/"+r.db, map[string]any{"notify_debounce_s": 1, "max_threshold_timeout_s": 2}, nil)
	var sub struct {
		Secret string `json:"secret"`
	}
	r.call("POST", "/api/schemas/"+r.schema+"/subscriptions", map[string]any{"url": m.rc.url("subscription")}, &sub)
	var hook struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	r.call("PUT", "/api/databases/"+r.db+"/schemas/"+r.schema+"/webhook", map[string]any{"webhook_url": m.rc.url("link")}, &hook)
	if sub.Secret == "" || hook.WebhookSecret == "" {
		m.t.Fatalf("secrets: subscription %q, link %q", sub.Secret, hook.WebhookSecret)
	}
	m.rc.setSecrets(sub.Secret, hook.WebhookSecret)
	target := connectTarget(m.t, targetDSN)
	r.sync(context.Background(), target) // the DDL: the tables exist
	installRevisionLog(m.t, target)
}

// live returns a random server that is up, nil when none is.
func (m *crashMatrix) live() *crashReplica {
	i := m.rng.IntN(len(m.reps))
	for k := range m.reps {
		if r := m.reps[(i+k)%len(m.reps)]; r.url() != "" {
			return r
		}
	}
	return nil
}

// bounce kills rep (SIGKILL), counting what was in flight, and starts it
// again after a random pause.
func (m *crashMatrix) bounce(rep *crashReplica, why string) {
	m.bounceMu.Lock()
	defer m.bounceMu.Unlock()
	var in []string
	if why != "" {
		in = append(in, why)
	}
	if m.claiming.Load() > 0 {
		in = append(in, "mid-claim")
	}
	if m.runningJobs() > 0 {
		in = append(in, "mid-enrichment")
	}
	if m.rc.inFlight() > 0 {
		in = append(in, "mid-webhook")
	}
	rep.kill()
	m.kills.Add(1)
	m.kindsMu.Lock()
	for _, k := range in {
		m.kinds[k]++
	}
	m.kindsMu.Unlock()
	time.Sleep(time.Duration(m.rng.IntN(300)) * time.Millisecond)
	rep.start(m.t)
}

func (m *crashMatrix) killKinds() string {
	m.kindsMu.Lock()
	defer m.kindsMu.Unlock()
	return fmt.Sprintf("%d mid-claim, %d mid-enrichment, %d mid-webhook, %d with a live lease of theirs",
		m.kinds["mid-claim"], m.kinds["mid-enrichment"], m.kinds["mid-webhook"], m.kinds["lease"])
}

// runningJobs counts the jobs being run now.
func (m *crashMatrix) runningJobs() int {
	conn, err := pgx.Connect(context.Background(), m.dsn)
	if err != nil {
		return 0
	}
	defer conn.Close(context.Background())
	var n int
	_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE state = 'running'`).Scan(&n)
	return n
}

// round submits size.jobs enrichments spread over size.round while
// size.kills servers are killed at random moments. The consumer runs for
// the round's first half; in the second the feed grows unconsumed, so
// that the link's webhook has deltas to announce.
func (m *crashMatrix) round(n int, targetDSN string) {
	var wg sync.WaitGroup
	m.claimKilled.Store(false)
	m.leaseKilled.Store(false)
	stop := m.startConsumer(targetDSN)
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(m.size.round / 2)
		stop()
	}()
	gap := m.size.round / time.Duration(m.size.jobs)
	for i := range m.size.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * gap)
			m.submit()
		}()
	}
	at := make([]time.Duration, m.size.kills)
	for k := range at {
		at[k] = time.Duration(m.rng.Int64N(int64(m.size.round)))
	}
	start := time.Now()
	for _, d := range sortedDurations(at) {
		time.Sleep(time.Until(start.Add(d)))
		m.bounce(m.reps[m.rng.IntN(len(m.reps))], "")
	}
	wg.Wait()
	m.t.Logf("round %d: %d jobs submitted, %d kills so far", n+1, m.submitted.Load(), m.kills.Load())
}

func sortedDurations(d []time.Duration) []time.Duration {
	for i := range d {
		for j := i + 1; j < len(d); j++ {
			if d[j] < d[i] {
				d[i], d[j] = d[j], d[i]
			}
		}
	}
	return d
}
