// Package load measures the service the way its users meet it: real HTTP over
// loopback to a real server (enrich.NewServer + Serve on 127.0.0.1:0, in a
// process of its own: child_test.go), on memory and on PostgreSQL, next to
// the latency of one PostgreSQL commit, and evaluates issue 6's goals from
// those figures. `make bench` runs it:
//
//	ENRICH_LOAD=1 go test -count=1 -run '^TestLoad$' -v ./test/load
//
// Without ENRICH_LOAD=1 the test skips, so `make test` does not run it. It
// reports; a goal that is not met does not fail it. It fails when a server
// cannot start, its setup fails, or every request of a scenario fails.
//
// Knobs: ENRICH_LOAD_WARMUP (default 1s) and ENRICH_LOAD_DURATION (default
// 5s) per scenario, ENRICH_LOAD_TIMEOUT (default 10s) per request,
// ENRICH_LOAD_STORE=memory|postgres to measure one store only (the goals
// then cannot be evaluated; for profiling), ENRICH_LOAD_ONLY (a regular
// expression over "<path> <clients>", such as "sync 16", to run only those
// scenarios; for profiling), ENRICH_LOAD_ROUNDS (default 5: the stores take
// turns in that many rounds per scenario, see measure) and
// ENRICH_DB_MAX_CONNS as the server takes it; ENRICH_LOAD_CHILD_CPUPROFILE
// (a directory) has every server measured write its CPU profile, and its
// allocation profile when it stops. PostgreSQL
// is the native server of test/pgtest (127.0.0.1:5432 or ENRICH_TEST_PG_DSN),
// in fresh databases dropped afterwards; when it is unreachable the
// PostgreSQL rows are skipped and say so (PGlite, one backend session in
// Node.js, would not measure what the goals are about, so it is not used).
package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich/test/fakeopenai"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(envChild); spec != "" {
		os.Exit(runChild(spec)) // a server to measure (child_test.go)
	}
	pgtest.Main(m)
}

const (
	envLoad     = "ENRICH_LOAD"
	envWarmup   = "ENRICH_LOAD_WARMUP"
	envDuration = "ENRICH_LOAD_DURATION"
	envTimeout  = "ENRICH_LOAD_TIMEOUT"
	envStore    = "ENRICH_LOAD_STORE"
	envOnly     = "ENRICH_LOAD_ONLY"
	envClients  = "ENRICH_LOAD_CLIENTS"
	envRounds   = "ENRICH_LOAD_ROUNDS"

	providerName = "fake"
	modelName    = "fast"
	fakeKey      = "sk-load-test"

	syncPath = "/api/single/enrich/sync"
	readPath = "/api/records/{id}"

	syncLow, syncHigh, readClients = 1, 16, 64
)

// schemaDoc is small: scalars only, so single_pass makes exactly one call.
const schemaDoc = `{"type": "object", "properties": {
  "name": {"type": "string"}, "industry": {"type": "string"}, "founded": {"type": "integer"}}}`

type settings struct{ warmup, duration, timeout time.Duration }

func durationEnv(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 5s", name, v)
	}
	return d
}

// commitResult is the latency of one PostgreSQL commit.
type commitResult struct {
	ms     float64
	method string
	note   string // why it is missing, or how it was measured instead
}

// scenario is one fixed-duration run of concurrent clients.
type scenario struct {
	path     string
	store    string
	clients  int
	ok       int
	errs     int
	timeouts int
	rps      float64 // successful requests per second
	p50, p99 time.Duration
	conns    int64           // connections the client opened during the run
	sent     int             // requests answered, warm-up included
	llm      int             // LLM calls the fake server answered, warm-up included
	failures map[string]int  // error kinds and counts
	lat      []time.Duration // the successful requests' latencies
	parts    []*scenario     // the rounds it was measured in, when merged
	window   time.Duration   // the time measured
}

// roundPlan splits a scenario's measured time into n rounds.
type roundPlan struct {
	n     int
	first settings // round 0: the whole warm-up
	later settings // the rounds after it: a short one
}

func planRounds(set settings, n int) roundPlan {
	p := roundPlan{n: n, first: set}
	p.first.duration = set.duration / time.Duration(n)
	p.later = p.first
	p.later.warmup = laterWarmup(set)
	return p
}

// laterWarmup is the warm-up of every round but a scenario's first: its
// connections are open by then.
func laterWarmup(set settings) time.Duration { return min(set.warmup, 200*time.Millisecond) }

func (p roundPlan) round(i int) settings {
	if i == 0 {
		return p.first
	}
	return p.later
}

// measured is the time measured over all rounds.
func (p roundPlan) measured() time.Duration { return p.first.duration * time.Duration(p.n) }

// merged is the scenario measured in parts (rounds interleaved with other
// scenarios): counts summed, rate over the measured time of all parts,
// percentiles over every latency.
func merged(parts []*scenario, measured time.Duration) *scenario {
	sc := &scenario{failures: map[string]int{}, parts: parts}
	for _, p := range parts {
		sc.path, sc.store, sc.clients = p.path, p.store, p.clients
		sc.errs += p.errs
		sc.timeouts += p.timeouts
		sc.conns += p.conns
		sc.sent += p.sent
		sc.llm += p.llm
		for k, v := range p.failures {
			sc.failures[k] += v
		}
		sc.lat = append(sc.lat, p.lat...)
	}
	sc.ok = len(sc.lat)
	sc.rps = float64(sc.ok) / measured.Seconds()
	sc.window = measured
	sc.p50, sc.p99 = percentiles(sc.lat)
	return sc
}

// storeResult is every scenario on one store.
type storeResult struct {
	store                string
	note                 string // set when the store was not measured
	syncLow, syncHigh    *scenario
	reads                *scenario
	setupErr, startupErr string
	logs                 *logTally // the server's warnings and errors
}

func TestLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("load test: set %s=1 to run it (make bench does)", envLoad)
	}
	set := settings{
		warmup:   durationEnv(t, envWarmup, time.Second),
		duration: durationEnv(t, envDuration, 5*time.Second),
		timeout:  durationEnv(t, envTimeout, 10*time.Second),
	}
	fake := fakeopenai.New(t, fakeopenai.WithModels(modelName), fakeopenai.WithAPIKey(fakeKey), fakeopenai.WithHistory(1))

	commit := commitResult{note: "not measured: native PostgreSQL unreachable or skipped (see above)"}
	only := os.Getenv(envStore)
	rounds := roundsEnv(t)
	mem := &storeResult{store: "memory", note: "skipped: " + envStore + "=" + only}
	var memSrv *storeServer
	if only == "" || only == "memory" {
		mem.note = ""
		memSrv = startStore(t, set, "", fake, mem)
	}
	pg := &storeResult{store: "postgres", note: "skipped: native PostgreSQL unreachable (see SKIP above)"}
	measured := false
	t.Run("postgres", func(t *testing.T) {
		if only != "" && only != "postgres" {
			pg.note = "skipped: " + envStore + "=" + only
			t.Skip(pg.note)
		}
		dsn := pgtest.Native(t) // dropped when this subtest ends: measure in it
		pg.note = ""
		pgSrv := startStore(t, set, dsn, fake, pg)
		probe := newCommitProbe(t)
		measure(t, set, rounds, probe, memSrv, pgSrv)
		commit = probe.result()
		measured = true
	})
	if !measured && memSrv != nil {
		measure(t, set, rounds, nil, memSrv)
	}

	report(os.Stdout, set, commit, mem, pg, fake.Requests())

	for _, s := range []*storeResult{mem, pg} {
		for _, sc := range []*scenario{s.syncLow, s.syncHigh, s.reads} {
			if sc != nil && sc.ok == 0 {
				t.Errorf("%s %s at %d clients: no request succeeded in the measured window (%d errors, %d timeouts)",
					sc.store, sc.path, sc.clients, sc.errs, sc.timeouts)
			}
		}
	}
}

// commitProbe measures the latency of one PostgreSQL commit, a round at a
// time: pgbench with a one-row INSERT script on a scratch table in a scratch
// database; without pgbench, a pgx loop of autocommit INSERTs (its p50).
type commitProbe struct {
	dsn, server  string
	bin, script  string // pgbench and its script; empty: the pgx loop
	conn         *pgx.Conn
	ms, tps      []float64 // each round's figures
	secs         int       // each round's length
	avgRe, tpsRe *regexp.Regexp
	loopN        int // the pgx loop's inserts
}

func newCommitProbe(t *testing.T) *commitProbe {
	dsn := pgtest.Native(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the scratch database: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(ctx, `CREATE TABLE scratch (id bigserial PRIMARY KEY, v integer NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatalf("create the scratch table: %v", err)
	}
	p := &commitProbe{dsn: dsn, conn: conn, avgRe: regexp.MustCompile(`latency average = ([0-9.]+) ms`),
		tpsRe: regexp.MustCompile(`tps = ([0-9.]+)`)}
	var version, fsync, syncCommit string
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')`).
		Scan(&version, &fsync, &syncCommit); err == nil {
		p.server = fmt.Sprintf("; PostgreSQL %s, fsync=%s, synchronous_commit=%s", version, fsync, syncCommit)
	}
	if bin, err := exec.LookPath("pgbench"); err == nil {
		p.bin, p.script = bin, filepath.Join(t.TempDir(), "insert.sql")
		if err := os.WriteFile(p.script, []byte("INSERT INTO scratch (v) VALUES (1);\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// round measures for d (whole seconds, at least one, as pgbench -T takes).
func (p *commitProbe) round(t *testing.T, d time.Duration) {
	p.secs = max(1, int(d.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if p.bin != "" {
		args := []string{"-n", "-c", "1", "-T", strconv.Itoa(p.secs), "-f", p.script, p.dsn}
		out, err := exec.CommandContext(ctx, p.bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %s: %v\n%s", strings.Join(args[:len(args)-1], " "), err, out)
		}
		m := p.avgRe.FindSubmatch(out)
		if m == nil {
			t.Fatalf("pgbench printed no latency average:\n%s", out)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		p.ms = append(p.ms, v)
		if m := p.tpsRe.FindSubmatch(out); m != nil {
			tps, _ := strconv.ParseFloat(string(m[1]), 64)
			p.tps = append(p.tps, tps)
		}
		return
	}
	var lat []time.Duration
	for end := time.Now().Add(time.Duration(p.secs) * time.Second); time.Now().Before(end); {
		t0 := time.Now()
		if _, err := p.conn.Exec(ctx, `INSERT INTO scratch (v) VALUES (1)`); err != nil {
			t.Fatalf("insert: %v", err)
		}
		lat = append(lat, time.Since(t0))
	}
	p50, _ := percentiles(lat)
	p.ms = append(p.ms, ms(p50))
	p.loopN += len(lat)
}

// result is the mean of the rounds' figures.
func (p *commitProbe) result() commitResult {
	if len(p.ms) == 0 {
		return commitResult{note: "not measured"}
	}
	mean := func(v []float64) float64 {
		sum := 0.0
		for _, x := range v {
			sum += x
		}
		return sum / float64(len(v))
	}
	rounds := fmt.Sprintf("%d rounds of %d s, one after each 1-client round on both stores; mean of the rounds' %%s: %s",
		len(p.ms), p.secs, roundList(p.ms, "%.3f"))
	if p.bin != "" {
		method := fmt.Sprintf("pgbench -n -c 1 -T %d -f insert.sql (one-row INSERT) in ", p.secs) + fmt.Sprintf(rounds, "latency averages")
		if len(p.tps) > 0 {
			method += fmt.Sprintf(", %.0f tps", mean(p.tps))
		}
		return commitResult{ms: mean(p.ms), method: method + p.server}
	}
	return commitResult{ms: mean(p.ms), method: "pgx loop of one-row autocommit INSERTs in " + fmt.Sprintf(rounds, "p50s") +
		fmt.Sprintf(" (%d inserts)%s", p.loopN, p.server), note: "pgbench is not installed: measured in Go with pgx instead"}
}

// storeServer is a server running on one store, with a tenant set up.
type storeServer struct {
	res        *storeResult
	sync, read func(context.Context) error
	run        func(set settings, path string, conc int, req func(context.Context) error) *scenario
}

// startStore starts a server on dsn (empty: memory) in a process of its
// own and sets up a tenant through the API. The server stops when t ends.
func startStore(t *testing.T, set settings, dsn string, fake *fakeopenai.Server, res *storeResult) *storeServer {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	res.logs = &logTally{counts: map[string]int{}}
	base, err := startChild(t, childSpec{Kind: "enrich", DatabaseURL: dsn, FakeURL: fake.URL()}, res.logs)
	if err != nil {
		res.startupErr = err.Error()
		t.Fatalf("%s: %v", res.store, err)
	}

	c := newClient(readClients, set.timeout)
	c.base = base
	ten, err := c.setup(ctx)
	if err != nil {
		res.setupErr = err.Error()
		t.Fatalf("%s: setup through the API: %v", res.store, err)
	}

	var n atomic.Int64
	return &storeServer{
		res: res,
		sync: func(ctx context.Context) error {
			body := fmt.Sprintf(`{"entity_data": {"name": "Acme %d", "industry": "Anvils"}, "schema_id": %q, "model": %q, "strategy": "single_pass"}`,
				n.Add(1), ten.schemaID, providerName+"::"+modelName)
			return c.do(ctx, http.MethodPost, syncPath, ten.key, []byte(body), nil)
		},
		read: func(ctx context.Context) error {
			return c.do(ctx, http.MethodGet, "/api/records/"+ten.recordID, ten.key, nil, nil)
		},
		run: func(set settings, path string, conc int, req func(context.Context) error) *scenario {
			calls := fake.Requests()
			sc := c.run(ctx, set, res.store, path, conc, req)
			sc.llm = fake.Requests() - calls
			return sc
		},
	}
}

// measure runs each scenario on every server given (nil ones are left
// out) in rounds, the servers taking turns, and fills their results with
// the merged rounds; probe, when set, measures a commit after each round at
// one client. The machine's speed drifts within seconds, so stores
// measured one after the other were measured on different machines.
func measure(t *testing.T, set settings, rounds int, probe *commitProbe, servers ...*storeServer) {
	servers = slices.DeleteFunc(servers, func(s *storeServer) bool { return s == nil })
	only := onlyEnv(t)
	plan := planRounds(set, rounds)
	for _, k := range []struct {
		path string
		conc int
		req  func(*storeServer) func(context.Context) error
		dst  func(*storeResult) **scenario
	}{
		{syncPath, syncLow, func(s *storeServer) func(context.Context) error { return s.sync },
			func(r *storeResult) **scenario { return &r.syncLow }},
		{syncPath, syncHigh, func(s *storeServer) func(context.Context) error { return s.sync },
			func(r *storeResult) **scenario { return &r.syncHigh }},
		{readPath, readClients, func(s *storeServer) func(context.Context) error { return s.read },
			func(r *storeResult) **scenario { return &r.reads }},
	} {
		if only != nil && !only.MatchString(fmt.Sprintf("%s %d", k.path, k.conc)) {
			continue
		}
		parts := make([][]*scenario, len(servers))
		for round := range plan.n {
			for i, s := range servers {
				parts[i] = append(parts[i], s.run(plan.round(round), k.path, k.conc, k.req(s)))
			}
			if probe != nil && k.conc == syncLow {
				probe.round(t, plan.first.duration)
			}
		}
		for i, s := range servers {
			*k.dst(s.res) = merged(parts[i], plan.measured())
		}
	}
}

// client is the load generator: one net/http client whose Transport keeps
// an idle connection for every concurrent client, so that the figures do not
// include connection churn; dials counts the connections it opens.
type client struct {
	http  *http.Client
	base  string
	dials atomic.Int64
}

func newClient(conc int, timeout time.Duration) *client {
	c := &client{}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	c.http = &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        2 * conc,
		MaxIdleConnsPerHost: 2 * conc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
	return c
}

// statusError is an answer other than 2xx.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// do sends one request and reads the whole answer (so that the connection is
// reused); out, when set, receives the JSON body of a 2xx answer.
func (c *client) do(ctx context.Context, method, path, key string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(key, "Bearer ") {
		req.Header.Set("Authorization", key)
	} else if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		msg := string(raw)
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return &statusError{status: resp.StatusCode, body: msg}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

type tenant struct{ key, schemaID, recordID string }

// setup registers a user, creates an access key and a schema, and runs one
// enrichment for a record to read, all through the API.
func (c *client) setup(ctx context.Context) (tenant, error) {
	var ten tenant
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/auth/register", "",
		[]byte(`{"email": "load@example.com", "password": "a long load password", "organization": "Load"}`), &sess); err != nil {
		return ten, fmt.Errorf("register: %w", err)
	}
	var key struct {
		Key string `json:"key"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/auth/api-keys", "Bearer "+sess.AccessToken,
		[]byte(`{"name": "load", "role": "editor"}`), &key); err != nil {
		return ten, fmt.Errorf("create an access key: %w", err)
	}
	ten.key = key.Key
	raw, _ := json.Marshal(map[string]any{"name": "Company", "schema": json.RawMessage(schemaDoc)})
	var sc struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/schema/saved", ten.key, raw, &sc); err != nil {
		return ten, fmt.Errorf("create a schema: %w", err)
	}
	ten.schemaID = sc.ID
	raw, _ = json.Marshal(map[string]any{"entity_data": map[string]any{"name": "Acme", "industry": "Anvils"},
		"schema_id": sc.ID, "model": providerName + "::" + modelName, "strategy": "single_pass"})
	var out struct {
		Status   string `json:"status"`
		RecordID string `json:"record_id"`
	}
	if err := c.do(ctx, http.MethodPost, syncPath, ten.key, raw, &out); err != nil {
		return ten, fmt.Errorf("first enrichment: %w", err)
	}
	if out.Status != "completed" || out.RecordID == "" {
		return ten, fmt.Errorf("first enrichment: status %q, record_id %q", out.Status, out.RecordID)
	}
	ten.recordID = out.RecordID
	if err := c.do(ctx, http.MethodGet, "/api/records/"+ten.recordID, ten.key, nil, nil); err != nil {
		return ten, fmt.Errorf("read the record: %w", err)
	}
	return ten, nil
}

// run has conc clients send requests back to back for set.warmup, then for
// set.duration. Requests started in the measured window count: the rate is
// their number over the window (in a closed loop at steady state, starts and
// completions run at the same rate).
func (c *client) run(ctx context.Context, set settings, store, path string, conc int, req func(context.Context) error) *scenario {
	sc := &scenario{path: path, store: store, clients: conc, failures: map[string]int{}}
	start := time.Now().Add(set.warmup)
	end := start.Add(set.duration)
	var (
		mu     sync.Mutex
		lat    []time.Duration
		wg     sync.WaitGroup
		dials0 int64
		once   sync.Once
	)
	// Dials are counted from the start of the measured window.
	go func() {
		time.Sleep(time.Until(start))
		once.Do(func() { dials0 = c.dials.Load() })
	}()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			fails := map[string]int{}
			timeouts, sent := 0, 0
			for {
				t0 := time.Now()
				if !t0.Before(end) || ctx.Err() != nil {
					break
				}
				err := req(ctx)
				d := time.Since(t0)
				sent++
				if t0.Before(start) {
					continue
				}
				switch {
				case err == nil:
					mine = append(mine, d)
				case isTimeout(err):
					timeouts++
				default:
					fails[errKind(err)]++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			sc.timeouts += timeouts
			sc.sent += sent
			for k, v := range fails {
				sc.failures[k] += v
				sc.errs += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	once.Do(func() { dials0 = c.dials.Load() })
	sc.conns = c.dials.Load() - dials0
	sc.ok = len(lat)
	sc.rps = float64(sc.ok) / set.duration.Seconds()
	sc.p50, sc.p99 = percentiles(lat)
	sc.lat = lat
	sc.window = set.duration
	return sc
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func errKind(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		var body struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal([]byte(se.body), &body)
		if body.Code != "" {
			return fmt.Sprintf("HTTP %d %s", se.status, body.Code)
		}
		return fmt.Sprintf("HTTP %d", se.status)
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// logTally is a slog.Handler that counts the server's warnings and errors by
// message, so that the report can say what went wrong under load.
type logTally struct {
	mu     sync.Mutex
	counts map[string]int
	sample map[string]string
}

func (l *logTally) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }

func (l *logTally) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool {
		if sampled(a.Key) {
			attrs = append(attrs, a.String())
		}
		return true
	})
	l.add(r.Level.String()+" "+r.Message, attrs)
	return nil
}

func sampled(key string) bool {
	return key == "error" || key == "err" || key == "code" || key == "status"
}

// line counts one line of a child process's standard error, a record of
// slog's JSON handler; false when the line is not one.
func (l *logTally) line(b []byte) bool {
	var rec map[string]any
	if json.Unmarshal(b, &rec) != nil {
		return false
	}
	lvl, _ := rec["level"].(string)
	msg, _ := rec["msg"].(string)
	if lvl == "" || msg == "" {
		return false
	}
	if l == nil {
		return true
	}
	var attrs []string
	for k, v := range rec {
		if sampled(k) {
			attrs = append(attrs, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(attrs)
	l.add(lvl+" "+msg, attrs)
	return true
}

func (l *logTally) add(key string, attrs []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[key]++
	if l.sample == nil {
		l.sample = map[string]string{}
	}
	if _, ok := l.sample[key]; !ok && len(attrs) > 0 {
		msg := strings.Join(attrs, " ")
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		l.sample[key] = msg
	}
}

func (l *logTally) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logTally) WithGroup(string) slog.Handler      { return l }

// summary lists the messages, most frequent first.
func (l *logTally) summary() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return l.counts[keys[i]] > l.counts[keys[j]] })
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		line := fmt.Sprintf("%d× %s", l.counts[k], k)
		if s := l.sample[k]; s != "" {
			line += " (e.g. " + s + ")"
		}
		out = append(out, line)
	}
	return out
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report prints the figures and the goals evaluated from them.
func report(w io.Writer, set settings, commit commitResult, mem, pg *storeResult, llmCalls int) {
	fmt.Fprintf(w, "\n=== enrich load: %s, %s/%s, %d CPUs, GOMAXPROCS %d, %s\n", time.Now().Format(time.RFC3339),
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "real HTTP over loopback to a server in a process of its own (enrich.NewServer + Serve on 127.0.0.1:0), X-API-Key auth, "+
		"auth cache off, schema cache 1 min (the environment's default), default workers;\neach scenario measured %s in %s, memory and PostgreSQL taking turns "+
		"(%s warm-up before the first round, %s before the others); per-request timeout %s; "+
		"LLM: %s::%s on test/fakeopenai, answering at once\n\n", set.duration, roundsText(mem, pg), set.warmup, laterWarmup(set),
		set.timeout, providerName, modelName)

	switch {
	case commit.method != "":
		fmt.Fprintf(w, "PostgreSQL commit latency: %.3f ms (%s)\n", commit.ms, commit.method)
		if commit.note != "" {
			fmt.Fprintf(w, "  note: %s\n", commit.note)
		}
	default:
		fmt.Fprintf(w, "PostgreSQL commit latency: %s\n", commit.note)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "enrich/sync: single_pass, one LLM call; conns opened: connections the load generator dialled in the measured window;\n"+
		"LLM calls/req: calls the fake server answered per request answered, warm-up included (above 1: retries)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "request\tstore\tclients\treq/s\tp50 ms\tp99 ms\tok\terrors\ttimeouts\tconns opened\tLLM calls/req")
	var notes []string
	for _, s := range []*storeResult{mem, pg} {
		for _, row := range []struct {
			path    string
			clients int
			sc      *scenario
		}{{syncPath, syncLow, s.syncLow}, {syncPath, syncHigh, s.syncHigh},
			{"GET " + readPath, readClients, s.reads}} {
			path := row.path
			if !strings.HasPrefix(path, "GET ") {
				path = "POST " + path
			}
			if row.sc == nil {
				why := s.note
				switch {
				case s.startupErr != "":
					why = "server could not start: " + s.startupErr
				case s.setupErr != "":
					why = "setup failed: " + s.setupErr
				case why == "":
					why = "not run"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t-\t-\t-\t-\t-\t-\t-\t-\n", path, s.store, row.clients)
				notes = append(notes, fmt.Sprintf("%s at %d clients on %s: %s", path, row.clients, s.store, why))
				continue
			}
			sc := row.sc
			perReq := "-"
			if sc.sent > 0 && row.sc != s.reads {
				perReq = fmt.Sprintf("%.2f", float64(sc.llm)/float64(sc.sent))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%s\n", path, s.store, sc.clients, sc.rps, ms(sc.p50), ms(sc.p99),
				sc.ok, sc.errs, sc.timeouts, sc.conns, perReq)
			if len(sc.failures) > 0 {
				kinds := make([]string, 0, len(sc.failures))
				for k, v := range sc.failures {
					kinds = append(kinds, fmt.Sprintf("%d× %s", v, k))
				}
				sort.Strings(kinds)
				notes = append(notes, fmt.Sprintf("%s at %d clients on %s: errors: %s", path, sc.clients, s.store, strings.Join(kinds, ", ")))
			}
		}
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, s := range []*storeResult{mem, pg} {
		if lines := s.logs.summary(); len(lines) > 0 {
			fmt.Fprintf(w, "  server warnings and errors on %s:\n", s.store)
			for i, l := range lines {
				if i == 8 {
					fmt.Fprintf(w, "    ... and %d more kinds\n", len(lines)-i)
					break
				}
				fmt.Fprintf(w, "    %s\n", l)
			}
		}
	}
	fmt.Fprintf(w, "  (LLM calls answered by the fake server in this run: %d)\n\n", llmCalls)

	fmt.Fprintln(w, "Goals (issue 6):")
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	// (a) latency at one client.
	switch {
	case commit.method == "" || mem.syncLow == nil || pg.syncLow == nil || mem.syncLow.ok == 0 || pg.syncLow.ok == 0:
		fmt.Fprintln(w, "  (a) 1 client, PostgreSQL p50 <= memory p50 + 2 x commit + 0.5 ms: N/A (missing figures)")
	default:
		limit := ms(mem.syncLow.p50) + 2*commit.ms + 0.5
		got := ms(pg.syncLow.p50)
		fmt.Fprintf(w, "  (a) 1 client, PostgreSQL p50 <= memory p50 + 2 x commit + 0.5 ms: %.2f ms <= %.2f + 2 x %.3f + 0.5 = %.2f ms: %s; "+
			"the difference of p50s round by round %s\n",
			got, ms(mem.syncLow.p50), commit.ms, limit, verdict(got <= limit), roundDiffs(pg.syncLow.parts, mem.syncLow.parts))
	}
	ratio := func(label string, m, p *scenario, want float64) {
		if m == nil || p == nil || m.ok == 0 || p.ok == 0 {
			fmt.Fprintf(w, "  %s: N/A (missing figures)\n", label)
			return
		}
		r := p.rps / m.rps
		fmt.Fprintf(w, "  %s: %.0f vs %.0f req/s = %.1f%% (want >= %.0f%%): %s; round by round %s\n", label, p.rps, m.rps, 100*r, 100*want,
			verdict(r >= want), roundRatios(p.parts, m.parts))
	}
	ratio("(b) 16 clients, enrich/sync PostgreSQL throughput >= 40% of memory's", mem.syncHigh, pg.syncHigh, 0.40)
	ratio("(c) 64 clients, GET /api/records/{id} PostgreSQL rate >= 25% of memory's", mem.reads, pg.reads, 0.25)
	fmt.Fprintln(w)
}

// roundsText says in how many rounds the scenarios were measured.
func roundsText(stores ...*storeResult) string {
	for _, s := range stores {
		if s.syncLow != nil && len(s.syncLow.parts) > 0 {
			n := len(s.syncLow.parts)
			return fmt.Sprintf("%d rounds of %s", n, s.syncLow.parts[0].window)
		}
	}
	return "rounds"
}

// roundDiffs is each round's p50 of a less b's, in ms, lowest to highest.
func roundDiffs(a, b []*scenario) string {
	var ds []float64
	for i := range min(len(a), len(b)) {
		ds = append(ds, ms(a[i].p50)-ms(b[i].p50))
	}
	return roundList(ds, "%.2f")
}

// roundList is the figures of the rounds, lowest to highest.
func roundList(v []float64, format string) string {
	v = slices.Sorted(slices.Values(v))
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(out, " ")
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
