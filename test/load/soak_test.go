package load_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/test/fakeopenai"
	"github.com/entityenrich/enrich/test/pgtest"
)

// The kill soak: jobs on three replicas (child processes, as in
// child_test.go) sharing one native PostgreSQL database, calling an
// in-process fake provider that answers after a delay and numbers its
// answers (fakeopenai.WithSerialTokens: each answer's input tokens are its
// serial, so every ledger entry names the answer it bills). One replica at
// a time is killed (SIGKILL) and started again while the jobs run. Then:
//   - every job completed, none lost, failed or interrupted;
//   - each job has exactly one model_completed per model;
//   - every answer the fake flushed has exactly one ledger entry, and none
//     has two (answers flushed within answerGrace before a kill may have
//     died with their replica unread: they may have none);
//   - every job has the records its completed event lists, no more;
//   - the last job ended within a lease plus 10 s of the last kill.
// Without kills it measures how busy the run slots stay while the queue
// drains (the sum of the jobs' run times over slots times the drain's
// length).
//
// `make test` runs a small soak (soakSmall); `make bench` (ENRICH_LOAD=1)
// the full one: 600 jobs, a kill every 5 s for 2 minutes.

// soakSize is one soak's shape.
type soakSize struct {
	jobs       int
	submitFor  time.Duration // submissions spread over this long (with kills)
	burstFor   time.Duration // and without: faster than they run, so that a queue builds
	kills      int
	killEvery  time.Duration
	firstKill  time.Duration // after the first submission
	lease      time.Duration
	latency    time.Duration // of every provider answer
	workers    int           // run slots per replica
	drainShare float64       // the slot use the drain must reach (0: report only)
}

var (
	soakSmall = soakSize{jobs: 60, submitFor: 6 * time.Second, burstFor: time.Second, kills: 3, killEvery: 2 * time.Second, firstKill: 1500 * time.Millisecond,
		lease: 3 * time.Second, latency: 350 * time.Millisecond, workers: 2}
	soakFull = soakSize{jobs: 600, submitFor: 110 * time.Second, burstFor: 20 * time.Second, kills: 24, killEvery: 5 * time.Second, firstKill: 5 * time.Second,
		lease: 10 * time.Second, latency: 350 * time.Millisecond, workers: 2, drainShare: 0.8}
)

const (
	soakReplicas = 3
	// answerGrace: an answer flushed this shortly before its replica was
	// killed may have died unread with it.
	answerGrace = 250 * time.Millisecond
)

var soakModels = []string{"alpha", "beta"}

// soakModelKeys are soakModels' composite keys.
func soakModelKeys() []string {
	keys := make([]string, len(soakModels))
	for i, m := range soakModels {
		keys[i] = providerName + "::" + m
	}
	return keys
}

func TestKillSoak(t *testing.T) {
	size := soakSmall
	if os.Getenv(envLoad) == "1" {
		size = soakFull
	}
	if testing.Short() {
		t.Skip("the kill soak starts servers: not in -short")
	}
	t.Run("kills", func(t *testing.T) { runSoak(t, size, true) })
	t.Run("no kills", func(t *testing.T) { runSoak(t, size, false) })
}

// replica is one enrich server of the soak, in a child process.
type replica struct {
	mu   sync.Mutex
	spec childSpec
	cmd  *exec.Cmd
	in   io.WriteCloser
	base string
	done chan struct{}
}

// start runs the replica's process and waits for its address.
func (r *replica) start(t *testing.T) {
	t.Helper()
	raw, _ := json.Marshal(r.spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), listenPrefix); ok {
				found <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case u := <-found:
		r.mu.Lock()
		r.cmd, r.in, r.base, r.done = cmd, in, u, done
		r.mu.Unlock()
	case <-done:
		t.Fatal("a replica exited before it served")
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("a replica did not start within 60 s")
	}
}

// kill ends the replica's process at once, as a crash would.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.base = ""
	r.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop closes the replica's input, which stops it gracefully.
func (r *replica) stop() {
	r.mu.Lock()
	in, done, cmd := r.in, r.done, r.cmd
	r.mu.Unlock()
	_ = in.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (r *replica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

// soakRun is what one soak saw.
type soakRun struct {
	killing   bool // replicas are killed while the jobs run
	mu        sync.Mutex
	submitted int
	lastSub   time.Time
	kills     []time.Time
}

func runSoak(t *testing.T, size soakSize, kills bool) {
	dsn := pgtest.Native(t)
	fake := fakeopenai.New(t, fakeopenai.WithLatency(size.latency), fakeopenai.WithSerialTokens(), fakeopenai.WithHistory(1))
	reps := make([]*replica, soakReplicas)
	for i := range reps {
		reps[i] = &replica{spec: childSpec{Kind: "enrich", DatabaseURL: dsn, FakeURL: fake.URL(), Workers: size.workers,
			LeaseTTL: size.lease, Models: soakModels}}
		reps[i].start(t) // one after the other: the first migrates
	}
	defer func() {
		for _, r := range reps {
			r.stop()
		}
	}()
	c := newClient(16, 30*time.Second)
	c.base = reps[0].url()
	ctx := t.Context()
	ten, err := soakTenant(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	run := &soakRun{killing: kills}
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run.submit(ctx, t, reps, ten, size)
	}()
	if kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.kill(t, reps, size, start)
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(size.lease + 60*time.Second + time.Duration(size.jobs)*size.latency)
	if err := waitAllEnded(ctx, dsn, run.submitted, deadline); err != nil {
		t.Fatal(err)
	}
	check(t, dsn, fake, run, size, kills)
}

// soakTenant registers the soak's organization and its schema of three
// expertise domains (three calls per model).
func soakTenant(ctx context.Context, c *client) (tenant, error) {
	var ten tenant
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/auth/register", "",
		[]byte(`{"email": "soak@example.com", "password": "a long soak password", "organization": "Soak"}`), &sess); err != nil {
		return ten, fmt.Errorf("register: %w", err)
	}
	var key struct {
		Key string `json:"key"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/auth/api-keys", "Bearer "+sess.AccessToken,
		[]byte(`{"name": "soak", "role": "editor"}`), &key); err != nil {
		return ten, fmt.Errorf("create an access key: %w", err)
	}
	ten.key = key.Key
	raw, _ := json.Marshal(map[string]any{"name": "Company", "schema": json.RawMessage(soakSchema)})
	var sc struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/schema/saved", ten.key, raw, &sc); err != nil {
		return ten, fmt.Errorf("create a schema: %w", err)
	}
	ten.schemaID = sc.ID
	return ten, nil
}

const soakSchema = `{"type": "object",
  "x-expertiseDomains": {"finance": {"name": "Finance", "description": "revenue and listing"}},
  "required": ["name", "industry", "revenue", "ticker", "headquarters"],
  "properties": {
    "name": {"type": "string"}, "industry": {"type": "string"},
    "revenue": {"type": "number", "expertise": "finance"}, "ticker": {"type": "string", "expertise": "finance"},
    "headquarters": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}}}`

// submit sends size.jobs jobs evenly over size.submitFor (size.burstFor
// without kills), each to a live replica (another one when the one chosen
// dies under it), many at once: a submission may wait a moment for a free
// slot on its replica.
func (s *soakRun) submit(ctx context.Context, t *testing.T, reps []*replica, ten tenant, size soakSize) {
	models := soakModelKeys()
	spread := size.submitFor
	if !s.killing {
		spread = size.burstFor
	}
	gap := spread / time.Duration(size.jobs)
	next := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range size.jobs {
		time.Sleep(time.Until(next))
		next = next.Add(gap)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.submitOne(ctx, reps, ten, models, i); err != nil {
				t.Errorf("job %d not submitted: %v", i, err)
				return
			}
			s.mu.Lock()
			s.submitted++
			s.lastSub = time.Now()
			s.mu.Unlock()
		}()
	}
	wg.Wait()
}

func (s *soakRun) submitOne(ctx context.Context, reps []*replica, ten tenant, models []string, i int) error {
	c := newClient(1, 10*time.Second)
	body, _ := json.Marshal(map[string]any{"entity_data": map[string]any{"name": fmt.Sprintf("Company %d", i)},
		"schema_id": ten.schemaID, "models": models, "strategy": "multi_expertise"})
	var err error
	for try := range 100 {
		if c.base = reps[(i+try)%len(reps)].url(); c.base == "" {
			time.Sleep(10 * time.Millisecond) // killed: being started again
			continue
		}
		var out struct {
			JobID string `json:"job_id"`
		}
		if err = c.do(ctx, http.MethodPost, "/api/single/enrich/stream", ten.key, body, &out); err == nil {
			return nil
		}
	}
	return err
}

// kill kills a random replica every size.killEvery, size.kills times, and
// starts it again at once.
func (s *soakRun) kill(t *testing.T, reps []*replica, size soakSize, start time.Time) {
	for k := range size.kills {
		time.Sleep(time.Until(start.Add(size.firstKill + time.Duration(k)*size.killEvery)))
		r := reps[rand.IntN(len(reps))]
		r.kill()
		s.mu.Lock()
		s.kills = append(s.kills, time.Now())
		s.mu.Unlock()
		r.start(t)
	}
}

// waitAllEnded waits until n jobs (at least) exist and every job ended.
func waitAllEnded(ctx context.Context, dsn string, n int, deadline time.Time) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for {
		var total, live int
		err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state NOT IN ('completed', 'failed', 'cancelled'))
			FROM jobs`).Scan(&total, &live)
		if err != nil {
			return err
		}
		if total >= n && live == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d jobs still not ended", live, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// check asserts what the soak promises and reports its figures.
func check(t *testing.T, dsn string, fake *fakeopenai.Server, run *soakRun, size soakSize, kills bool) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	query := func(sql string, scan func(pgx.Rows) error, args ...any) {
		t.Helper()
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}

	// Every job completed.
	states := map[string]int{}
	var lastEnd time.Time
	query(`SELECT state || ':' || error_code, count(*), max(updated_at) FROM jobs GROUP BY 1`, func(r pgx.Rows) error {
		var st string
		var n int
		var at time.Time
		err := r.Scan(&st, &n, &at)
		states[st] += n
		if at.After(lastEnd) {
			lastEnd = at
		}
		return err
	})
	if states["completed:"] != run.submitted || len(states) != 1 {
		t.Errorf("jobs by state: %v, want %d completed", states, run.submitted)
	}

	// One model_completed per model and job.
	var wrong []string
	query(`SELECT j.id, m.model, count(e.seq) FROM jobs j CROSS JOIN unnest($1::text[]) AS m(model)
		LEFT JOIN job_events e ON e.job_id = j.id AND e.type = 'model_completed' AND e.data->>'model' = m.model
		GROUP BY 1, 2 HAVING count(e.seq) <> 1`, func(r pgx.Rows) error {
		var id, model string
		var n int
		err := r.Scan(&id, &model, &n)
		wrong = append(wrong, fmt.Sprintf("%s %s: %d", id, model, n))
		return err
	}, soakModelKeys())
	if len(wrong) > 0 {
		t.Errorf("%d jobs' models without exactly one model_completed, e.g. %v", len(wrong), wrong[:min(5, len(wrong))])
	}

	// Every answered call has one ledger entry, none two.
	rows := map[int]int{}
	query(`SELECT input_tokens, count(*) FROM llm_usage GROUP BY 1`, func(r pgx.Rows) error {
		var serial, n int
		err := r.Scan(&serial, &n)
		rows[serial] = n
		return err
	})
	answers := fake.Answered()
	run.mu.Lock()
	killed := append([]time.Time(nil), run.kills...)
	lastSub := run.lastSub
	run.mu.Unlock()
	var unbilled, excused, twice int
	for _, a := range answers {
		switch n := rows[a.Serial]; {
		case n > 1:
			twice++
		case n == 0 && nearKill(a.At, killed):
			excused++
		case n == 0:
			unbilled++
		}
	}
	if unbilled > 0 || twice > 0 {
		t.Errorf("of %d answered calls, %d have no ledger entry and %d have two or more", len(answers), unbilled, twice)
	}

	// The records each completed event lists, and no others.
	var recordErrs int
	query(`SELECT j.id, (SELECT count(*) FROM records r WHERE r.job_id = j.id),
		(SELECT coalesce(json_array_length(e.data->'record_ids'), -1) FROM job_events e WHERE e.job_id = j.id AND e.type = 'completed')
		FROM jobs j`, func(r pgx.Rows) error {
		var id string
		var have, listed int
		err := r.Scan(&id, &have, &listed)
		if have != listed {
			recordErrs++
			if recordErrs < 5 {
				t.Errorf("job %s: %d records, its completed event lists %d", id, have, listed)
			}
		}
		return err
	})

	var sb strings.Builder
	fmt.Fprintf(&sb, "soak: %d jobs on %d replicas (%d slots each), %d kills; %d answered calls (%d unread at a kill)",
		run.submitted, soakReplicas, size.workers, len(killed), len(answers), excused)
	if len(killed) > 0 {
		last := killed[len(killed)-1]
		after := lastEnd.Sub(last)
		fmt.Fprintf(&sb, "; the last job ended %.1f s after the last kill", after.Seconds())
		if after > size.lease+10*time.Second {
			t.Errorf("the last job ended %s after the last kill: more than a lease (%s) plus 10 s", after, size.lease)
		}
	}
	if !kills {
		use, mean := slotUse(t, conn, lastSub, lastEnd, soakReplicas*size.workers)
		fmt.Fprintf(&sb, "; a job ran %.2f s on average; slot use while the queue drained (%.1f s): %.0f%%",
			mean.Seconds(), lastEnd.Sub(lastSub).Seconds(), 100*use)
		if size.drainShare > 0 && use < size.drainShare {
			t.Errorf("slot use while the queue drained: %.0f%%, want at least %.0f%%", 100*use, 100*size.drainShare)
		}
	}
	t.Log(sb.String())
}

// nearKill reports whether at is within answerGrace before a kill.
func nearKill(at time.Time, kills []time.Time) bool {
	i := sort.Search(len(kills), func(i int) bool { return !kills[i].Before(at) })
	return i < len(kills) && kills[i].Sub(at) <= answerGrace
}

// slotUse is the share of slots×(to-from) the jobs' runs (first event to
// last) filled between from and to, and a run's mean length.
func slotUse(t *testing.T, conn *pgx.Conn, from, to time.Time, slots int) (float64, time.Duration) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT min(created_at), max(created_at) FROM job_events GROUP BY job_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var busy, all time.Duration
	n := 0
	for rows.Next() {
		var a, b time.Time
		if err := rows.Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		all += b.Sub(a)
		n++
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			busy += b.Sub(a)
		}
	}
	if !to.After(from) || n == 0 {
		return 1, 0
	}
	return float64(busy) / (float64(slots) * float64(to.Sub(from))), all / time.Duration(n)
}
