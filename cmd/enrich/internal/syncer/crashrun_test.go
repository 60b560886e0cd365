package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
	"github.com/entityenrich/enrich/cmd/enrich/internal/syncer"
	"github.com/entityenrich/enrich/domain/dbsync"
)

// lockedRand is the run's one source of random choices, shared by its
// goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLockedRand(seed uint64) *lockedRand {
	return &lockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (l *lockedRand) IntN(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.IntN(n)
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

var crashHTTP = &http.Client{Timeout: 30 * time.Second}

// submit sends one enrichment of a random identity (sandbox::slow half the
// time) to a live server, again to another while the one chosen is down
// or dies under it. A job whose answer was lost to a kill may run twice:
// the checks count records, not submissions.
func (m *crashMatrix) submit() {
	n := int(m.seq.Add(1))
	id := m.rng.IntN(m.size.identities)
	model := "sandbox::echo"
	if m.rng.IntN(2) == 0 {
		model = "sandbox::slow"
	}
	tags := []string{}
	for j := range m.rng.IntN(4) {
		tags = append(tags, fmt.Sprintf("tag-%d-%d", j, n))
	}
	offices := []map[string]any{}
	for j := range m.rng.IntN(3) {
		offices = append(offices, map[string]any{"city": fmt.Sprintf("City %d/%d", j, n), "size": 10*j + n})
	}
	body := map[string]any{"entity_data": map[string]any{"domain": fmt.Sprintf("c%05d.example", id),
		"name": fmt.Sprintf("Company %d enrichment %d", id, n), "employees": n, "tags": tags, "offices": offices},
		"schema_id": m.r.schema, "models": []string{model}}
	var err error
	for range 100 {
		rep := m.live()
		if rep == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		cl := &api.Client{BaseURL: rep.url(), Creds: api.Key(m.r.key), HTTP: crashHTTP}
		var out struct {
			JobID string `json:"job_id"`
		}
		if err = cl.Do(context.Background(), "POST", "/api/single/enrich/stream", body, &out); err == nil {
			m.submitted.Add(1)
			return
		}
		if !api.Retryable(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.t.Errorf("enrichment %d not submitted: %v", n, err)
}

// consume runs enrich sync's engine (follow mode) on the target until ctx
// ends, as a new consumer after every error or kill: after a commit it is
// killed before its ack now and then, or the server that granted its
// lease is.
func (m *crashMatrix) consume(ctx context.Context, targetDSN string) {
	cred := &syncer.Credential{RefreshToken: m.r.refresh}
	var target *pgx.Conn
	defer func() {
		if target != nil {
			target.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if target == nil || target.IsClosed() {
			target = connectTarget(m.t, targetDSN)
		}
		run, kill := context.WithCancel(ctx)
		s := &syncer.Syncer{Feed: &crashFeed{m: m, cred: cred, limit: 1 + m.rng.IntN(25)}, Target: target, DatabaseID: m.r.db,
			Notice: func(format string, a ...any) { m.t.Errorf("notice: "+format, a...) }}
		s.AfterCommit = func(int64) {
			switch x := m.rng.Float64(); {
			case x < m.size.consumerKill:
				m.consumerKills.Add(1)
				kill() // the ack never leaves
			case x < m.size.consumerKill+m.size.leaseKill || !m.leaseKilled.Load():
				if rep := m.granter.Load(); rep != nil && rep.url() != "" {
					m.leaseKilled.Store(true)
					m.bounce(rep, "lease")
				}
			}
		}
		err := s.Run(run, syncer.Options{Follow: true, MaxIdle: 300 * time.Millisecond})
		kill()
		m.applied.Add(s.Stats().Applied)
		m.skipped.Add(s.Stats().Skipped)
		if ctx.Err() == nil {
			m.restarts.Add(1)
			if !errors.Is(err, context.Canceled) {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
}

// crashFeed is the feed through a random live server, each call tried
// again on another while servers are down or die under it (a claim or an
// ack is safe to repeat).
type crashFeed struct {
	m     *crashMatrix
	cred  *syncer.Credential
	limit int
}

func (f *crashFeed) via(ctx context.Context, fn func(*syncer.HTTPFeed, *crashReplica) error) error {
	var err error
	for range 200 {
		rep := f.m.live()
		if rep == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		hf := &syncer.HTTPFeed{Client: &api.Client{BaseURL: rep.url(), Creds: f.cred, HTTP: crashHTTP}, DatabaseID: f.m.r.db,
			Limit: f.limit, LeaseS: crashLeaseS}
		if err = fn(hf, rep); err == nil || !api.Retryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (f *crashFeed) Claim(ctx context.Context) (syncer.Window, error) {
	var w syncer.Window
	err := f.via(ctx, func(h *syncer.HTTPFeed, rep *crashReplica) error {
		f.m.claiming.Add(1)
		defer f.m.claiming.Add(-1)
		if !f.m.claimKilled.Load() && f.m.rng.IntN(4) == 0 {
			// The server dies while it answers the claim (or just before
			// or after: the request is on its way).
			f.m.claimKilled.Store(true)
			go func() {
				time.Sleep(time.Duration(f.m.rng.IntN(3000)) * time.Microsecond)
				f.m.bounce(rep, "")
			}()
		}
		var err error
		if w, err = h.Claim(ctx); err == nil && len(w.Deltas) > 0 {
			f.m.granter.Store(rep)
		}
		return err
	})
	return w, err
}

func (f *crashFeed) Ack(ctx context.Context, upTo int64) error {
	return f.via(ctx, func(h *syncer.HTTPFeed, _ *crashReplica) error { return h.Ack(ctx, upTo) })
}

func (f *crashFeed) Report(ctx context.Context, id int64, msg string) error {
	return f.via(ctx, func(h *syncer.HTTPFeed, _ *crashReplica) error { return h.Report(ctx, id, msg) })
}

func (f *crashFeed) Snapshot(context.Context) (rc io.ReadCloser, err error) {
	return nil, errors.New("the crash matrix's consumer takes no snapshot")
}

func (f *crashFeed) Checksum(ctx context.Context) (c syncer.Checksum, err error) {
	err = f.via(ctx, func(h *syncer.HTTPFeed, _ *crashReplica) error { c, err = h.Checksum(ctx); return err })
	return c, err
}

// startConsumer runs the consumer until the returned stop is called.
func (m *crashMatrix) startConsumer(targetDSN string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.consume(ctx, targetDSN) }()
	return func() { cancel(); <-done }
}

// settle waits, with no more kills, until every job ended and every
// notification went out, the link's webhook having announced the head
// (no consumer runs); then until the consumer caught up with the head. It
// returns the head.
func (m *crashMatrix) settle(targetDSN string) int64 {
	ctx := context.Background()
	src, err := pgx.Connect(ctx, m.dsn)
	if err != nil {
		m.t.Fatal(err)
	}
	defer src.Close(ctx)
	deadline := time.Now().Add(120 * time.Second)
	var live, undelivered int
	var head, notified int64
	for {
		if err := src.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM jobs WHERE state NOT IN ('completed', 'failed', 'cancelled')),
			(SELECT coalesce(max(id), 0) FROM deltas WHERE database_id = $1),
			(SELECT count(*) FROM event_deliveries WHERE delivered_at IS NULL),
			(SELECT coalesce(max(notified_up_to), 0) FROM link_notifications WHERE database_id = $1)`, m.r.db).
			Scan(&live, &head, &undelivered, &notified); err != nil {
			m.t.Fatal(err)
		}
		if live == 0 && undelivered == 0 && notified == head && m.rc.noticedUpTo() == head {
			break
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("not settled within 120 s of the last kill: %d jobs not ended, %d deliveries not made, "+
				"the link notified up to %d of %d (the receiver saw %d)", live, undelivered, notified, head, m.rc.noticedUpTo())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop := m.startConsumer(targetDSN)
	defer stop()
	dst, err := pgx.Connect(ctx, targetDSN)
	if err != nil {
		m.t.Fatal(err)
	}
	defer dst.Close(ctx)
	for {
		var wm int64
		_ = dst.QueryRow(ctx, dbsync.ReadStateSQL(), m.r.db).Scan(&wm)
		if wm == head {
			return head
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the target at delta %d of %d, 120 s after the last kill", wm, head)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
