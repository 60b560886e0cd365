package e2e_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/fakeopenai"
)

// replica is one enrichd process of TestReplicasSurviveKills.
type replica struct {
	t    *testing.T
	bin  string
	env  []string
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (r *replica) start() {
	r.t.Helper()
	cmd := exec.Command(r.bin)
	cmd.Env = append(os.Environ(), append(r.env, "ENRICH_ADDR="+r.addr)...)
	if os.Getenv("ENRICH_E2E_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start enrichd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + r.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("enrichd at %s did not become healthy: %v", r.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to die.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestReplicasSurviveKills runs 3 enrichd processes on one PostgreSQL, starts
// 200 jobs across them, kills replicas with SIGKILL at random moments 5 times
// and restarts them. Every job must end with exactly one terminal event and a
// gap-free sequence, no record may be stored twice, and the fake LLM may see
// at most the planned calls plus those in flight at each kill: an expertise
// whose expertise_completed was durable is never paid for again. Jobs are
// also streamed and cancelled from a replica other than the one that runs
// them.
func TestReplicasSurviveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 server processes")
	}
	is := is.New(t)
	dsn := backends[1].dsn(t) // native PostgreSQL: PGlite serves one query at a time and no NOTIFY between connections

	bin := filepath.Join(t.TempDir(), "enrichd")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/enrichd")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build enrichd: %v", err)
	}
	fake := fakeopenai.New(t, fakeopenai.WithLatency(300*time.Millisecond), fakeopenai.WithModels("m"))
	env := []string{
		"DATABASE_URL=" + dsn,
		"ENRICH_JWT_SECRET=" + strings.Repeat("r", 40),
		"ENRICH_PASSWORD_HASHING=fast",
		"ENRICH_LOG_LEVEL=error",
		"ENRICH_LEASE_TTL=3s",
		"ENRICH_PROVIDER_FAKE_TYPE=openai",
		"ENRICH_PROVIDER_FAKE_BASE_URL=" + fake.URL(),
		"ENRICH_PROVIDER_FAKE_API_KEY=k",
		"ENRICH_PROVIDER_FAKE_MODELS=m",
	}
	migrate := exec.Command(bin, "migrate")
	migrate.Env = append(os.Environ(), env...)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v: %s", err, out)
	}
	reps := make([]*replica, 3)
	for i := range reps {
		reps[i] = &replica{t: t, bin: bin, env: env, addr: freeAddr(t)}
		reps[i].start()
	}
	t.Cleanup(func() {
		for _, r := range reps {
			r.kill()
		}
	})
	client := &http.Client{Timeout: 30 * time.Second}
	svc := func(i int) *service {
		return &service{t: t, url: "http://" + reps[i].addr, http: client}
	}
	ten := svc(0).register("replicas@example.com")
	schemaID := svc(0).createSchema(ten.key, "Company", companySchema)

	// The killer: 5 SIGKILLs at random moments, each replica restarted.
	var inFlightAtKills int
	killsDone := make(chan struct{})
	var down sync.Map // replica index -> true while dead
	go func() {
		defer close(killsDone)
		rng := rand.New(rand.NewPCG(1, 2))
		for range 5 {
			time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
			i := rng.IntN(len(reps))
			down.Store(i, true)
			inFlightAtKills += fake.InFlight()
			reps[i].kill()
			time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
			reps[i].start()
			down.Delete(i)
		}
	}()

	// 200 jobs across the replicas, as fast as a client would send them.
	const jobs = 200
	ids := make([]string, 0, jobs)
	// Every 40th job is cancelled through the next replica while it runs.
	type canceling struct {
		id      string
		replica int
	}
	var toCancel []canceling
	cancelled := map[string]bool{}
	// A cancel whose replica died before it answered may have been
	// carried out: its job may end either way.
	unsure := map[string]bool{}
	body := func(n int) string {
		return fmt.Sprintf(`{"entity_data":{"name":"Acme %d"},"schema_id":%q,"model":"fake::m","strategy":"multi_expertise"}`, n, schemaID)
	}
	for n := 0; len(ids) < jobs; n++ {
		i := n % len(reps)
		if _, dead := down.Load(i); dead {
			continue
		}
		req, _ := http.NewRequest("POST", "http://"+reps[i].addr+"/api/single/enrich/stream", strings.NewReader(body(len(ids))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", ten.key)
		resp, err := client.Do(req)
		if err != nil {
			continue // killed meanwhile: the client tries another replica
		}
		var out struct {
			JobID string `json:"job_id"`
		}
		err = decodeJSON(resp, &out)
		if err == nil && resp.StatusCode == 200 && out.JobID != "" {
			ids = append(ids, out.JobID)
			if len(ids)%40 == 0 {
				toCancel = append(toCancel, canceling{out.JobID, (i + 1) % len(reps)})
				// Cancel the chosen jobs through another replica than the one that took
				// them (a replica killed meanwhile may refuse the connection: try the
				// next one).
				for _, c := range toCancel[len(toCancel)-1:] {
					for k := 0; k < len(reps); k++ {
						i := (c.replica + k) % len(reps)
						if _, dead := down.Load(i); dead {
							continue
						}
						// Not svc(i).call, which fails the test on a transport error: the
						// replica may be killed between the check above and this request.
						req, _ := http.NewRequest("POST", "http://"+reps[i].addr+"/api/llm/cancel/"+c.id, nil)
						req.Header.Set("X-API-Key", ten.key)
						resp, err := client.Do(req)
						if err != nil {
							unsure[c.id] = true
							continue // killed meanwhile: try the next replica
						}
						_ = resp.Body.Close()
						st := resp.StatusCode
						mustf(t, st == 200 || st == 409, "cancel: status %d", st)
						cancelled[c.id] = st == 200
						break
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	mustf(t, len(cancelled) > 0, "no cancel was answered by a replica other than the one that took the job")
	<-killsDone
	db, err := sql.Open("pgx", dsn)
	is.NoErr(err)
	defer db.Close()
	// Every job ends, followed from any replica, with one terminal event and
	// one gap-free numbering.
	deadline := time.Now().Add(3 * time.Minute)
	ended := map[string]int{}
	for n, id := range ids {
		for {
			var state, owner string
			var attempt int
			var lease sql.NullTime
			is.NoErr(db.QueryRow(`SELECT state, owner, attempt, lease_until FROM jobs WHERE id = $1`, id).Scan(&state, &owner, &attempt, &lease))
			if state == "completed" || state == "failed" || state == "cancelled" {
				break
			}
			if time.Now().After(deadline) {
				rows, _ := db.Query(`SELECT id, state, attempt, scheduled_at, attempted_at FROM river_job WHERE args->>'job_id' = $1`, id)
				for rows.Next() {
					var rid int64
					var rstate string
					var ratt int
					var sched time.Time
					var att sql.NullTime
					_ = rows.Scan(&rid, &rstate, &ratt, &sched, &att)
					t.Logf("river job %d %s attempt %d scheduled %s attempted %v", rid, rstate, ratt, sched, att)
				}
				t.Fatalf("job %s did not end: %s owner %s attempt %d lease %v (now %s)", id, state, owner, attempt, lease, time.Now().UTC())
			}
			time.Sleep(100 * time.Millisecond)
		}
		evs := svc(n%len(reps)).follow(ten.key, id, "")
		terminals := len(find(evs, "completed")) + len(find(evs, "failed")) + len(find(evs, "cancelled"))
		mustf(t, terminals == 1, "job %s: %d terminal events", id, terminals)
		for i, e := range evs {
			if e.ID != strconv.Itoa(i+1) {
				logStoredEvents(t, db, id)
			}
			mustf(t, e.ID == strconv.Itoa(i+1), "job %s: event %d has id %s", id, i+1, e.ID)
		}
		ended[last(evs).Name]++
		if unsure[id] && !cancelled[id] {
			mustf(t, last(evs).Name == "completed" || last(evs).Name == "cancelled", "job %s ended %s", id, last(evs).Name)
		} else if cancelled[id] {
			is.Equal(last(evs).Name, "cancelled")
		} else {
			mustf(t, last(evs).Name == "completed", "job %s ended %s: %v", id, last(evs).Name, last(evs).Data)
		}
	}
	t.Logf("ended: %v; LLM calls %d (planned %d, in flight at kills %d)", ended, fake.Requests(), jobs*3, inFlightAtKills)

	// No record twice, and one per completed job.
	var dup int
	is.NoErr(db.QueryRowContext(context.Background(),
		`SELECT count(*) FROM (SELECT job_id, model FROM records GROUP BY job_id, model HAVING count(*) > 1) d`).Scan(&dup))
	is.Equal(dup, 0)
	// (A start whose answer was lost to a kill made a job the client does not
	// know; it ran all the same: count the known jobs' records.)
	var recs int
	is.NoErr(db.QueryRowContext(context.Background(), `SELECT count(*) FROM records WHERE job_id = ANY($1)`, ids).Scan(&recs))
	is.Equal(recs, ended["completed"])

	// Nobody paid twice for a durable expertise: every call beyond the plan
	// was in flight when a replica died.
	calls := map[string]int{}
	for _, r := range fake.AllRequests() {
		var props []string
		if p, ok := r.Schema["properties"].(map[string]any); ok {
			for k := range p {
				props = append(props, k)
			}
		}
		sort.Strings(props)
		calls[fmt.Sprint(r.Entity["name"], props)]++
	}
	extra := 0
	entities := map[any]bool{}
	for _, r := range fake.AllRequests() {
		entities[r.Entity["name"]] = true
	}
	for _, n := range calls {
		extra += n - 1
	}
	// Every job the servers ran (a start whose answer was lost to a kill
	// too) plans 3 calls; cancelled jobs make fewer.
	planned := 3 * len(entities)
	t.Logf("jobs run %d, distinct expertise calls %d, repeated %d", len(entities), len(calls), extra)
	mustf(t, fake.Requests() <= planned+inFlightAtKills, "LLM calls %d > planned %d + in flight at kills %d", fake.Requests(), planned, inFlightAtKills)
}

func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// logStoredEvents logs a job's stored events and row, to tell a numbering
// fault from a follower's.
func logStoredEvents(t *testing.T, db *sql.DB, id string) {
	rows, err := db.Query(`SELECT seq, type, created_at FROM job_events WHERE job_id = $1 ORDER BY seq`, id)
	if err != nil {
		t.Logf("events of %s: %v", id, err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var typ string
		var at time.Time
		_ = rows.Scan(&seq, &typ, &at)
		t.Logf("stored %s #%d %s at %s", id, seq, typ, at.Format("15:04:05.000000"))
	}
	var state, owner string
	var attempt int
	_ = db.QueryRow(`SELECT state, owner, attempt FROM jobs WHERE id = $1`, id).Scan(&state, &owner, &attempt)
	t.Logf("job %s: %s owner %q attempt %d", id, state, owner, attempt)
}
