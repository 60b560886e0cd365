package syncer_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
)

// The crash matrix's servers run in child processes, so that a SIGKILL is
// a real crash: this test binary run again with envCrashChild set (the
// kill soak's technique, test/load/child_test.go).
const envCrashChild = "ENRICH_CRASH_CHILD"

const crashListen = "LISTEN "

// crashSpec is what a child serves.
type crashSpec struct {
	DatabaseURL  string        `json:"database_url"`
	WebhookPorts []uint16      `json:"webhook_ports"`
	JobLease     time.Duration `json:"job_lease"`
	Workers      int           `json:"workers"`
}

// runCrashChild serves spec on 127.0.0.1, prints its base URL on a line of
// its own, and stops when its standard input closes.
func runCrashChild(raw string) int {
	var spec crashSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", envCrashChild, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "listen: %v\n", err)
		return 1
	}
	srv, err := enrich.NewServer(ctx, crashConfig(spec))
	if err != nil {
		fmt.Fprintf(os.Stderr, "the server could not start: %v\n", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	fmt.Printf("%shttp://%s\n", crashListen, ln.Addr())
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

// crashConfig: every replica signs tokens and seals secrets with the same
// keys (they share one database); jobs and notifications are retried fast.
func crashConfig(spec crashSpec) enrich.Config {
	return enrich.Config{
		DatabaseURL:               spec.DatabaseURL,
		Sandbox:                   true,
		JWTSecret:                 strings.Repeat("c", 40),
		EncryptionKeys:            base64.URLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")),
		PasswordHashing:           "fast",
		ShutdownGrace:             2 * time.Second,
		Logger:                    slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Workers:                   spec.Workers,
		LeaseTTL:                  spec.JobLease,
		WebhookAllowLoopbackPorts: spec.WebhookPorts,
		WebhookPoll:               50 * time.Millisecond,
		WebhookRetryBase:          100 * time.Millisecond,
		WebhookTimeout:            time.Second,
		QuotaCallsPerDay:          enrich.Quota(0),
		QuotaTokensPerDay:         enrich.Quota(0),
	}
}

// crashReplica is one server of the matrix, in a child process.
type crashReplica struct {
	name string
	spec crashSpec
	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	base string
	done chan struct{}
	errs *strings.Builder // the child's standard error, for a failure's report
}

// start runs the replica's process and waits for its address.
func (r *crashReplica) start(t *testing.T) {
	t.Helper()
	raw, _ := json.Marshal(r.spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+string(raw))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs := &strings.Builder{}
	cmd.Stderr = &lockedWriter{w: errs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), crashListen); ok {
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
		r.cmd, r.in, r.base, r.done, r.errs = cmd, in, u, done, errs
		r.mu.Unlock()
	case <-done:
		t.Fatalf("replica %s exited before it served: %s", r.name, errs.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("replica %s did not start within 60 s", r.name)
	}
}

// kill ends the replica's process at once (SIGKILL), as a crash would.
func (r *crashReplica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.base = ""
	r.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop closes the replica's input, which stops it gracefully.
func (r *crashReplica) stop() {
	r.mu.Lock()
	in, done, cmd := r.in, r.done, r.cmd
	r.base = ""
	r.mu.Unlock()
	_ = in.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// url is the replica's base URL, "" while it is down.
func (r *crashReplica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
