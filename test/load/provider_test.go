package load_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestProviderPathLoad measures what the service adds to one LLM call (issue
// 8): in one run, on memory storage, at 1 and 16 clients,
//   - direct: the chat completion the service sends, posted straight to the
//     fake OpenAI-compatible server;
//   - proxy: the same through a bare reverse proxy (net/http/httputil);
//   - enrich/sync with the fake's model: the whole service, through the
//     OpenAI-compatible client (openai-go behind llms.Model);
//   - enrich/sync with sandbox::echo: the same service without the provider
//     client (no HTTP call), which isolates that path's cost.
//
// Goals: at 1 client, enrich/sync adds at most 0.5 ms to the direct call;
// at 16 clients it reaches at least 50% of the bare proxy's rate.
//
// Each row is measured in ENRICH_LOAD_ROUNDS rounds (default 5), the rows
// taking turns, and the rounds merged: the machine's speed drifts, and rows
// measured one after the other once compared two different machines.
//
// At 1 client the service and the proxy run in this process, which measures
// the code's own cost: in processes of their own, each hop would add a
// process's wake-up, which the direct call does not pay; they stop before the 16-client rows. At 16 clients they
// run in processes of their own (child_test.go): in this one, the proxy's
// rounds paid for collecting the service's heap, which grows by every
// record and event it keeps.
//
// For profiling one scenario: ENRICH_LOAD_ONLY (a regular expression over
// the requests' names) and ENRICH_LOAD_CLIENTS (1, 16 or 1,16), e.g.
//
//	ENRICH_LOAD=1 ENRICH_LOAD_ONLY=sandbox ENRICH_LOAD_CLIENTS=16 go test -run TestProviderPathLoad -cpuprofile cpu.out ./test/load
func TestProviderPathLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("load test: set %s=1 to run it (make bench does)", envLoad)
	}
	set := settings{
		warmup:   durationEnv(t, envWarmup, time.Second),
		duration: durationEnv(t, envDuration, 5*time.Second),
		timeout:  durationEnv(t, envTimeout, 10*time.Second),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var lastBody atomic.Value // the last chat completion the service sent
	fake := fakeopenai.New(t, fakeopenai.WithModels(modelName), fakeopenai.WithAPIKey(fakeKey), fakeopenai.WithHistory(1))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		lastBody.Store(req.Body)
		return fakeopenai.DefaultAnswer(req), 0
	})

	// The servers of the 1-client rows run in this process (see above) and
	// stop before the 16-client rows: the service's memory storage keeps
	// every record and event, and this process runs the fake and the load
	// generator for every row.
	inprocCtx, stopInproc := context.WithCancel(ctx)
	defer stopInproc()
	srv, err := enrich.NewServer(inprocCtx, serverConfig(childSpec{FakeURL: fake.URL(), Sandbox: true}, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatalf("the server could not start: %v", err)
	}
	svcURL, svcDone := serve(t, inprocCtx, func(ln net.Listener) error { return srv.Serve(inprocCtx, ln) })
	proxy, err := proxyHandler(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, proxyDone := serve(t, inprocCtx, func(ln net.Listener) error {
		s := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
		go func() { <-inprocCtx.Done(); _ = s.Close() }()
		return s.Serve(ln)
	})
	inproc := &side{svc: svcURL, proxy: proxyURL, c: newClient(syncHigh, set.timeout)}
	inproc.c.base = svcURL
	if inproc.ten, err = inproc.c.setup(ctx); err != nil {
		t.Fatalf("setup through the API: %v", err)
	}
	body, _ := lastBody.Load().([]byte)
	if len(body) == 0 {
		t.Fatal("the service's chat completion was not captured")
	}
	fake.SetResponder(nil)
	child := &side{c: newClient(syncHigh, set.timeout)}
	if child.svc, err = startChild(t, childSpec{Kind: "enrich", FakeURL: fake.URL(), Sandbox: true}, nil); err != nil {
		t.Fatal(err)
	}
	if child.proxy, err = startChild(t, childSpec{Kind: "proxy", FakeURL: fake.URL()}, nil); err != nil {
		t.Fatal(err)
	}
	child.c.base = child.svc
	if child.ten, err = child.c.setup(ctx); err != nil {
		t.Fatalf("setup through the API (child process): %v", err)
	}
	sides := map[int]*side{syncLow: inproc, syncHigh: child}
	release := sync.OnceFunc(func() {
		stopInproc()
		svcDone()
		proxyDone()
		runtime.GC() // what the service kept goes now, not during the rows
	})

	var n atomic.Int64
	syncWith := func(model string) func(*side) func(context.Context) error {
		return func(sd *side) func(context.Context) error {
			return func(ctx context.Context) error {
				b := fmt.Sprintf(`{"entity_data": {"name": "Acme %d", "industry": "Anvils"}, "schema_id": %q, "model": %q, "strategy": "single_pass"}`,
					n.Add(1), sd.ten.schemaID, model)
				return sd.c.do(ctx, http.MethodPost, syncPath, sd.ten.key, []byte(b), nil)
			}
		}
	}
	chat := func(base func(*side) string) func(*side) func(context.Context) error {
		return func(sd *side) func(context.Context) error {
			d := newClient(syncHigh, set.timeout)
			d.base = base(sd)
			return func(ctx context.Context) error {
				return d.do(ctx, http.MethodPost, "/v1/chat/completions", "Bearer "+fakeKey, body, nil)
			}
		}
	}
	fakeBase := strings.TrimSuffix(fake.URL(), "/v1")
	svcOf, proxyOf := func(sd *side) string { return sd.svc }, func(sd *side) string { return sd.proxy }
	rows := []struct {
		name   string
		req    func(*side) func(context.Context) error
		server func(*side) string // the base URL of the process measured (nil: the fake's, in this process)
	}{
		{"direct: POST /v1/chat/completions to the fake", chat(func(*side) string { return fakeBase }), nil},
		{"proxy: the same through httputil.ReverseProxy", chat(proxyOf), proxyOf},
		{"enrich/sync, " + providerName + "::" + modelName + " (OpenAI-compatible client)", syncWith(providerName + "::" + modelName), svcOf},
		{"enrich/sync, sandbox::echo (no provider client)", syncWith("sandbox::echo"), svcOf},
	}
	// cpu is, by row, the CPU time its server process used during its
	// rounds at 16 clients (warm-ups included), and the requests it
	// answered then: a cost per request that the machine's drifting speed
	// moves far less than a rate.
	type cpuTally struct {
		used time.Duration
		sent int
	}
	cpu := map[string]*cpuTally{}
	only, clients := selection(t)
	plan := planRounds(set, roundsEnv(t))
	parts := map[string]map[int][]*scenario{}
	for _, conc := range clients {
		if conc != syncLow {
			release()
		}
		reqs := make([]func(context.Context) error, len(rows))
		for i, r := range rows {
			reqs[i] = r.req(sides[conc])
		}
		for round := range plan.n {
			for i, r := range rows {
				if only != nil && !only.MatchString(r.name) {
					continue
				}
				if parts[r.name] == nil {
					parts[r.name] = map[int][]*scenario{}
				}
				var base string
				if r.server != nil {
					base = r.server(sides[conc])
				}
				before, measured := childCPU(base)
				sc := inproc.c.run(ctx, plan.round(round), "memory", r.name, conc, reqs[i])
				if after, ok := childCPU(base); measured && ok {
					if cpu[r.name] == nil {
						cpu[r.name] = &cpuTally{}
					}
					cpu[r.name].used += after - before
					cpu[r.name].sent += sc.sent
				}
				parts[r.name][conc] = append(parts[r.name][conc], sc)
			}
		}
	}
	res := map[string]map[int]*scenario{}
	for name, byConc := range parts {
		res[name] = map[int]*scenario{}
		for conc, ps := range byConc {
			res[name][conc] = merged(ps, plan.measured())
		}
	}

	w := os.Stdout
	fmt.Fprintf(w, "\n=== provider path (issue 8): memory storage, fake answering at once; each row measured %s in %d rounds of %s, "+
		"the rows taking turns (%s warm-up before a row's first round, %s before the others); the chat body is the service's own (%d bytes);\n"+
		"the service and the proxy run in this process at 1 client, each in a process of its own at 16\n",
		plan.measured(), plan.n, plan.first.duration, set.warmup, plan.later.warmup, len(body))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "request\tclients\treq/s\tp50 ms\tp99 ms\tok\terrors")
	for _, conc := range clients {
		for _, r := range rows {
			sc := res[r.name][conc]
			if sc == nil {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%d\t%d\n", r.name, conc, sc.rps, ms(sc.p50), ms(sc.p99), sc.ok, sc.errs+sc.timeouts)
		}
	}
	_ = tw.Flush()
	perRequest := func(name string) float64 {
		if c := cpu[name]; c != nil && c.sent > 0 {
			return float64(c.used.Microseconds()) / float64(c.sent)
		}
		return 0
	}
	if p := perRequest(rows[1].name); p > 0 {
		fmt.Fprintf(w, "  CPU per request of the process answering, at %d clients (warm-ups included): the proxy %.0f µs", syncHigh, p)
		for _, r := range rows[2:] {
			if c := perRequest(r.name); c > 0 {
				fmt.Fprintf(w, "; %s %.0f µs (%.2f× the proxy's)", strings.TrimPrefix(r.name, "enrich/sync, "), c, c/p)
			}
		}
		fmt.Fprintln(w)
	}
	direct, svc, sandbox := res[rows[0].name], res[rows[2].name], res[rows[3].name]
	if only != nil || len(clients) < 2 || direct == nil || svc == nil || sandbox == nil || res[rows[1].name] == nil {
		fmt.Fprintf(w, "  goals not evaluated: %s or %s left rows out\n\n", envOnly, envClients)
		return
	}
	added := ms(svc[syncLow].p50) - ms(direct[syncLow].p50)
	fmt.Fprintf(w, "  1 client: enrich/sync adds %.2f ms to the direct call (goal <= 0.5 ms): %s; the provider client path adds %.2f ms to the sandbox's sync\n",
		added, verdict(added <= 0.5), ms(svc[syncLow].p50)-ms(sandbox[syncLow].p50))
	ratio := 0.0
	if p := res[rows[1].name][syncHigh].rps; p > 0 {
		ratio = svc[syncHigh].rps / p
	}
	fmt.Fprintf(w, "  16 clients: enrich/sync at %.0f req/s is %.1f%% of the bare proxy's %.0f (goal >= 50%%): %s; round by round %s\n\n",
		svc[syncHigh].rps, 100*ratio, res[rows[1].name][syncHigh].rps, verdict(ratio >= 0.5),
		roundRatios(parts[rows[2].name][syncHigh], parts[rows[1].name][syncHigh]))
	for _, r := range rows {
		for _, conc := range clients {
			if sc := res[r.name][conc]; sc != nil && sc.ok == 0 {
				t.Errorf("%s at %d clients: no request succeeded (%d errors, %d timeouts)", r.name, conc, sc.errs, sc.timeouts)
			}
		}
	}
}

// side is where one client count's rows go: the service and the proxy,
// and the service's tenant.
type side struct {
	svc, proxy string
	c          *client
	ten        tenant
}

// roundsEnv reads ENRICH_LOAD_ROUNDS: in how many rounds each row is
// measured, the rows taking turns, so that the machine's speed, which drifts
// over seconds, weighs on every row alike (default 5).
func roundsEnv(t *testing.T) int {
	t.Helper()
	v := os.Getenv(envRounds)
	if v == "" {
		return 5
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 50 {
		t.Fatalf("%s=%q: want a number of rounds from 1 to 50", envRounds, v)
	}
	return n
}

// roundRatios is each round's rate of a over b's, as percentages, lowest
// to highest.
func roundRatios(a, b []*scenario) string {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i].rps > 0 {
			rs = append(rs, 100*a[i].rps/b[i].rps)
		}
	}
	return roundList(rs, "%.0f%%")
}

// onlyEnv reads ENRICH_LOAD_ONLY, a regular expression over the names of
// the scenarios to run (nil: all).
func onlyEnv(t *testing.T) *regexp.Regexp {
	t.Helper()
	o := os.Getenv(envOnly)
	if o == "" {
		return nil
	}
	only, err := regexp.Compile(o)
	if err != nil {
		t.Fatalf("%s: %v", envOnly, err)
	}
	return only
}

// selection reads ENRICH_LOAD_ONLY (a regular expression: only the rows
// whose request it matches run) and ENRICH_LOAD_CLIENTS (a comma-separated
// list of 1 and 16), for profiling one scenario. Either one leaves the goals
// unevaluated.
func selection(t *testing.T) (*regexp.Regexp, []int) {
	t.Helper()
	only := onlyEnv(t)
	clients := []int{syncLow, syncHigh}
	if c := os.Getenv(envClients); c != "" {
		clients = nil
		for _, f := range strings.Split(c, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || (n != syncLow && n != syncHigh) {
				t.Fatalf("%s=%q: want %d, %d or both", envClients, c, syncLow, syncHigh)
			}
			clients = append(clients, n)
		}
	}
	return only, clients
}

// serve runs fn on a new loopback listener until ctx ends and returns its
// base URL, and a function that waits, once ctx ended, for fn to return.
func serve(t *testing.T, ctx context.Context, fn func(net.Listener) error) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- fn(ln) }()
	var once sync.Once
	wait := func() {
		once.Do(func() {
			<-ctx.Done()
			if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				t.Logf("serve: %v", err)
			}
		})
	}
	t.Cleanup(wait)
	return "http://" + ln.Addr().String(), wait
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
