package load_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/test/pgtest"
)

// The batch benchmark (issue 11): a batch of ENRICH_BATCH_LOAD_ENTITIES
// entities (default 1000) × 3 expertise domains against the sandbox at
// ENRICH_BATCH_LOAD_LATENCY (default 200ms) per call, with
// ENRICH_BATCH_LOAD_CONCURRENCY entities in flight (default 64), on memory
// and on PostgreSQL (ENRICH_LOAD_STORE narrows it to one). It reports the
// elapsed time from POST /api/batch/start to the stream's terminal event
// against the floor ⌈n/concurrency⌉·latency (an entity's calls run in parallel), the peak memory of the process
// (runtime.ReadMemStats sampled every 20 ms: heap in use and memory obtained
// from the OS), and the events written per second. `make bench` runs it
// (ENRICH_LOAD=1); it reports, and fails only when the batch does not
// complete with every entity enriched.
const (
	envBatchEntities    = "ENRICH_BATCH_LOAD_ENTITIES"
	envBatchLatency     = "ENRICH_BATCH_LOAD_LATENCY"
	envBatchConcurrency = "ENRICH_BATCH_LOAD_CONCURRENCY"
	batchDomains        = 3
)

// batchSchema has exactly three expertise domains (general, finance,
// headquarters), so multi_expertise makes three calls per entity.
const batchSchema = `{"type": "object",
  "x-expertiseDomains": {"finance": {"name": "Finance", "description": "revenue and listing"}},
  "properties": {
    "name": {"type": "string"}, "industry": {"type": "string"},
    "revenue": {"type": "number", "expertise": "finance"}, "ticker": {"type": "string", "expertise": "finance"},
    "headquarters": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}}}}`

type batchResult struct {
	store             string
	entities, conc    int
	latency           time.Duration
	elapsed           time.Duration
	events            int
	completed, failed int
	peakHeap, peakSys uint64
	note              string
}

func TestBatchLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("batch benchmark: set %s=1 to run it (make bench does)", envLoad)
	}
	n := envInt(envBatchEntities)
	if n <= 0 {
		n = 1000
	}
	conc := envInt(envBatchConcurrency)
	if conc <= 0 {
		conc = 64
	}
	latency := durationEnv(t, envBatchLatency, 200*time.Millisecond)
	only := os.Getenv(envStore)
	var results []*batchResult
	for _, store := range []string{"memory", "postgres"} {
		if only != "" && only != store {
			continue
		}
		res := &batchResult{store: store, entities: n, conc: conc, latency: latency}
		results = append(results, res)
		t.Run(store, func(t *testing.T) {
			dsn := ""
			if store == "postgres" {
				res.note = "skipped: native PostgreSQL unreachable"
				dsn = pgtest.Native(t)
				res.note = ""
			}
			runBatch(t, dsn, res)
		})
	}
	// The floor: an entity's calls run in parallel, so the batch takes
	// ⌈n/concurrency⌉ rounds of one call's latency. (The ideal,
	// n·3·latency/64, counts 64 calls in flight: 21 entities here.)
	ideal := func(r *batchResult) time.Duration {
		return time.Duration(math.Ceil(float64(r.entities)/float64(r.conc))) * r.latency
	}
	fmt.Printf("\nBatch benchmark: %d entities × %d domains, sandbox latency %s, %d entities in flight\n", n, batchDomains, latency, conc)
	fmt.Printf("  floor ⌈n/concurrency⌉·latency = %s (an entity's %d calls run in parallel: %d calls in flight); n·%d·latency/calls in flight = %s\n",
		ideal(&batchResult{entities: n, conc: conc, latency: latency}).Round(time.Millisecond), batchDomains, conc*batchDomains,
		batchDomains, time.Duration(float64(n*batchDomains)*float64(latency)/float64(conc*batchDomains)).Round(time.Millisecond))
	for _, r := range results {
		if r.note != "" || r.elapsed == 0 {
			fmt.Printf("  %-8s %s\n", r.store, r.note)
			continue
		}
		fmt.Printf("  %-8s elapsed %8s (%.3f× the floor)  events %6d (%6.0f/s)  completed %d, failed %d  peak heap %5.1f MiB, peak sys %5.1f MiB\n",
			r.store, r.elapsed.Round(time.Millisecond), float64(r.elapsed)/float64(ideal(r)), r.events,
			float64(r.events)/r.elapsed.Seconds(), r.completed, r.failed, float64(r.peakHeap)/(1<<20), float64(r.peakSys)/(1<<20))
	}
}

func runBatch(t *testing.T, dsn string, res *batchResult) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := enrich.Config{
		SchemaCacheTTL: time.Minute, // as a server started from the environment (ENRICH_SCHEMA_CACHE_TTL)
		DatabaseURL:    dsn, Sandbox: true, SandboxLatency: res.latency,
		JWTSecret: strings.Repeat("b", 40), PasswordHashing: "fast", ShutdownGrace: 2 * time.Second,
		DBMaxConns: envInt("ENRICH_DB_MAX_CONNS"), BatchMaxEntities: max(res.entities, 1000), BatchConcurrency: res.conc,
		MaxBodyBytes: 64 << 20,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	srv, err := enrich.NewServer(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: the server could not start: %v", res.store, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: 10 * time.Minute}
	call := func(method, path, cred string, body any, out any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			_ = json.Unmarshal(b, out)
		}
	}
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	call("POST", "/api/auth/register", "", map[string]any{"email": "batch@example.com", "password": "a long batch password",
		"organization": "Batch"}, &sess)
	var sc struct{ ID string }
	call("POST", "/api/schema/saved", sess.AccessToken, map[string]any{"name": "Company", "schema": json.RawMessage(batchSchema)}, &sc)
	entities := make([]map[string]any, res.entities)
	for i := range entities {
		entities[i] = map[string]any{"name": fmt.Sprintf("Company %d", i)}
	}

	// Peak memory, sampled while the batch runs.
	var peakHeap, peakSys atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			if ms.Sys > peakSys.Load() {
				peakSys.Store(ms.Sys)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	t0 := time.Now()
	var started struct {
		JobID string `json:"job_id"`
	}
	call("POST", "/api/batch/start", sess.AccessToken, map[string]any{"entities": entities, "schema_id": sc.ID,
		"model": "sandbox::echo", "strategy": "multi_expertise"}, &started)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/llm/stream/"+started.JobID, nil)
	req.Header.Set("Authorization", "Bearer "+sess.AccessToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc2 := bufio.NewScanner(resp.Body)
	sc2.Buffer(make([]byte, 1<<20), 16<<20)
	var last map[string]any
	for sc2.Scan() {
		line, ok := strings.CutPrefix(sc2.Text(), "data: ")
		if !ok {
			continue
		}
		res.events++
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if e, _ := ev["event"].(string); e == "completed" || e == "failed" || e == "cancelled" {
			last = ev
			break
		}
	}
	res.elapsed = time.Since(t0)
	close(stop)
	<-sampled
	res.peakHeap, res.peakSys = peakHeap.Load(), peakSys.Load()
	if last == nil || last["event"] != "completed" {
		t.Fatalf("%s: the batch did not complete: %v", res.store, last)
	}
	sum, _ := last["result"].(map[string]any)
	c, _ := sum["completed_entities"].(float64)
	f, _ := sum["failed_entities"].(float64)
	res.completed, res.failed = int(c), int(f)
	if res.completed != res.entities {
		t.Errorf("%s: %d of %d entities completed", res.store, res.completed, res.entities)
	}
}
