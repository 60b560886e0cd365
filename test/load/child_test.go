package load_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/adapters/llm"
)

// The servers measured (enrich on each store, and the bare proxy it is
// compared with) run in processes of their own, as users run them: this test
// binary run again with envChild set. In one process with the load
// generator, a server on memory storage, whose heap grows by the records and
// events it keeps, made every other server in the process pay for marking
// it: the bare proxy's rate in one round depended on where the collector
// stood (figures in docs/performance.md).
const envChild = "ENRICH_LOAD_CHILD"

// envChildProfile names a directory where every child writes a CPU profile
// of its whole life (<kind>-<pid>.pprof) and, when it stops, its allocation
// profile (<kind>-<pid>.allocs), for profiling the servers measured; the
// flag -test.cpuprofile profiles only the load generator.
const envChildProfile = "ENRICH_LOAD_CHILD_CPUPROFILE"

// childSpec says what a child process serves.
type childSpec struct {
	Kind        string `json:"kind"` // "enrich" or "proxy"
	DatabaseURL string `json:"database_url,omitempty"`
	FakeURL     string `json:"fake_url,omitempty"` // enrich: the fake OpenAI-compatible server; proxy: its target
	Sandbox     bool   `json:"sandbox,omitempty"`
	// The kill soak's replicas (soak_test.go): run slots, lease and the
	// fake's models (default: modelName alone).
	Workers  int           `json:"workers,omitempty"`
	LeaseTTL time.Duration `json:"lease_ttl,omitempty"`
	Models   []string      `json:"models,omitempty"`
	BlobURL  string        `json:"blob_url,omitempty"` // attachments' bytes elsewhere than PostgreSQL
}

const listenPrefix = "LISTEN "

// runChild serves spec (from envChild) on 127.0.0.1, prints its base URL
// on a line of its own, and stops when its standard input closes (the
// parent ended it, or died). Warnings and errors go to standard error as
// JSON lines.
func runChild(raw string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", envChild, err)
		return 2
	}
	if dir := os.Getenv(envChildProfile); dir != "" {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", spec.Kind, os.Getpid())))
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envChildProfile, err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envChildProfile, err)
			return 2
		}
		defer pprof.StopCPUProfile()
		defer writeAllocs(filepath.Join(dir, fmt.Sprintf("%s-%d.allocs", spec.Kind, os.Getpid())))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "listen: %v\n", err)
		return 1
	}
	var serve func() error
	switch spec.Kind {
	case "enrich":
		logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		srv, err := enrich.NewServer(ctx, serverConfig(spec, logger))
		if err != nil {
			fmt.Fprintf(os.Stderr, "the server could not start: %v\n", err)
			return 1
		}
		serve = func() error { return srv.Serve(ctx, ln) }
	case "proxy":
		proxy, err := proxyHandler(spec.FakeURL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "proxy: %v\n", err)
			return 2
		}
		s := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
		go func() { <-ctx.Done(); _ = s.Close() }()
		serve = func() error { return s.Serve(ln) }
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown kind %q\n", envChild, spec.Kind)
		return 2
	}
	done := make(chan error, 1)
	go func() { done <- serve() }()
	fmt.Printf("%shttp://%s\n", listenPrefix, ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(os.Stderr, "serve: %v\n", err)
		return 1
	}
	return 0
}

// writeAllocs writes the process's allocation profile to path.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", envChildProfile, err)
	}
}

// childPIDs maps a child's base URL to its process id, for processCPU.
var childPIDs sync.Map

// childCPU returns the CPU time the child serving base has used so far:
// the sum of its threads' time on a CPU (/proc/<pid>/task/*/schedstat, in
// nanoseconds); false where that cannot be read.
func childCPU(base string) (time.Duration, bool) {
	pid, ok := childPIDs.Load(base)
	if !ok {
		return 0, false
	}
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// serverConfig is the configuration of the enrich server measured.
func serverConfig(spec childSpec, logger *slog.Logger) enrich.Config {
	models := spec.Models
	if len(models) == 0 {
		models = []string{modelName}
	}
	return enrich.Config{
		SchemaCacheTTL:  time.Minute, // as a server started from the environment (ENRICH_SCHEMA_CACHE_TTL)
		DatabaseURL:     spec.DatabaseURL,
		JWTSecret:       strings.Repeat("l", 40),
		PasswordHashing: "fast",
		ShutdownGrace:   2 * time.Second,
		DBMaxConns:      envInt("ENRICH_DB_MAX_CONNS"),
		Sandbox:         spec.Sandbox,
		Logger:          logger,
		Providers: []llm.ProviderConfig{{Name: providerName, Type: llm.TypeOpenAI, BaseURL: spec.FakeURL, APIKey: fakeKey,
			Models: models}},
		Workers:  spec.Workers,
		LeaseTTL: spec.LeaseTTL,
		BlobURL:  spec.BlobURL,
		// The load runs far more calls through the environment's key than
		// any daily quota allows. (With a quota set, its check counts at
		// most about the quota's calls of one organization, once a second.)
		QuotaCallsPerDay:  enrich.Quota(0),
		QuotaTokensPerDay: enrich.Quota(0),
	}
}

// proxyHandler is the bare reverse proxy to the fake at fakeURL, keeping an
// idle connection for every client.
func proxyHandler(fakeURL string) (http.Handler, error) {
	target, err := url.Parse(strings.TrimSuffix(fakeURL, "/v1"))
	if err != nil {
		return nil, err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	return proxy, nil
}

// startChild runs spec in a child process and returns its base URL, or
// why it did not start; the child stops when t ends. logs, when not nil,
// counts the child's warnings and errors.
func startChild(t *testing.T, spec childSpec, logs *logTally) (string, error) {
	t.Helper()
	raw, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the %s process: %v", spec.Kind, err)
	}
	var wg sync.WaitGroup
	var other []string // stderr lines that are not JSON log records
	var mu sync.Mutex
	killed := false
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if !logs.line(sc.Bytes()) {
				mu.Lock()
				other = append(other, sc.Text())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		exited := make(chan error, 1)
		go func() { wg.Wait(); exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil && !killed {
				mu.Lock()
				t.Errorf("the %s process: %v\n%s", spec.Kind, err, strings.Join(other, "\n"))
				mu.Unlock()
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the %s process did not stop within 30 s of its input closing: killed", spec.Kind)
		}
	})

	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), listenPrefix); ok {
				found <- u
				break
			}
		}
		close(found)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u, ok := <-found:
		if ok {
			childPIDs.Store(u, cmd.Process.Pid)
			return u, nil
		}
	case <-time.After(60 * time.Second):
	}
	killed = true
	_ = stdin.Close()
	_ = cmd.Process.Kill()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return "", fmt.Errorf("the %s process did not start: %s", spec.Kind, strings.Join(other, "\n"))
}
