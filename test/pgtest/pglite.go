package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvPGliteDir overrides where the harness finds test/pglite (the folder
// with the package.json of the PGlite server).
const EnvPGliteDir = "ENRICH_PGLITE_DIR"

// pgliteMaxConnections is the server's -m. PGlite queues queries whatever the
// number, so a generous limit only keeps database/sql pools under concurrent
// tests from being refused.
const pgliteMaxConnections = 32

const (
	pgliteStartTimeout   = 90 * time.Second
	pgliteInstallTimeout = 10 * time.Minute
	stampFile            = ".enrich-lock-sha256"
)

var (
	mainCalled atomic.Bool
	pool       struct {
		sync.Mutex
		idle    []*server
		all     []*server
		stopped bool
	}
	install struct {
		sync.Mutex
		done bool
	}
)

// Main runs the tests of a package and then stops the PGlite servers they
// started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	StopPGlite()
	os.Exit(code)
}

// StopPGlite stops every PGlite server this process started. Main calls it;
// call it yourself only from a TestMain that cannot use Main.
func StopPGlite() {
	pool.Lock()
	all := pool.all
	pool.all, pool.idle, pool.stopped = nil, nil, true
	pool.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
		}()
	}
	wg.Wait()
}

// PGlite returns the DSN of an empty schema on a PGlite server that no other
// running test uses. The schema is dropped and the server goes back to the
// pool when t ends. PGlite skips only under -short: a missing Node.js fails
// the test.
func PGlite(t testing.TB) string {
	t.Helper()
	skipShort(t)
	if !mainCalled.Load() {
		t.Fatal("pgtest: PGlite needs TestMain to call pgtest.Main(m), which stops the servers after the tests")
	}
	srv, err := acquire()
	if err != nil {
		t.Fatalf("pgtest: PGlite: %v", err)
	}
	return inSchema(t, srv, release)
}

// PGliteWith is PGlite on a server of its own, started with the
// PostgreSQL settings conf ("shared_buffers=1GB"), and stopped when t
// ends.
func PGliteWith(t testing.TB, conf ...string) string {
	t.Helper()
	skipShort(t)
	if !mainCalled.Load() {
		t.Fatal("pgtest: PGlite needs TestMain to call pgtest.Main(m), which stops the servers after the tests")
	}
	srv, err := start(conf)
	if err != nil {
		t.Fatalf("pgtest: PGlite: %v", err)
	}
	return inSchema(t, srv, func(s *server) { s.stop() })
}

// inSchema creates an empty schema on srv for t, and drops it and hands
// srv to done when t ends.
func inSchema(t testing.TB, srv *server, done func(*server)) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	schema := "t_" + randomHex(8)
	// PGlite ignores startup parameters, so search_path in the DSN does
	// nothing there; but its one session keeps a SET for every connection
	// that follows, and no other test uses this server meanwhile.
	for _, q := range []string{"CREATE SCHEMA " + schema, "SET search_path TO " + schema} {
		if err := srv.exec(ctx, q); err != nil {
			srv.stop()
			t.Fatalf("pgtest: PGlite: %s: %v\n%s", q, err, srv.output())
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := srv.exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		if err == nil {
			err = srv.exec(ctx, "SET search_path TO DEFAULT")
		}
		if err != nil {
			// A connection the test left inside a transaction blocks the
			// server for good: do not hand it to the next test.
			t.Logf("pgtest: PGlite: drop schema %s: %v; stopping that server", schema, err)
			srv.stop()
			return
		}
		done(srv)
	})
	// search_path in the DSN names the schema for readers and for a PGlite
	// that would honour it.
	return srv.dsn + "&search_path=" + schema
}

// server is one pglite-server process.
type server struct {
	cmd  *exec.Cmd
	port int
	dsn  string
	done chan struct{} // closed when the process has exited
	out  *tail
	once sync.Once
}

func acquire() (*server, error) {
	pool.Lock()
	for len(pool.idle) > 0 {
		s := pool.idle[len(pool.idle)-1]
		pool.idle = pool.idle[:len(pool.idle)-1]
		if s.alive() {
			pool.Unlock()
			return s, nil
		}
	}
	pool.Unlock()
	return start(nil)
}

// start starts a server with the settings conf and keeps it among those
// StopPGlite stops.
func start(conf []string) (*server, error) {
	dir, err := pgliteDir()
	if err != nil {
		return nil, err
	}
	if err := ensureInstalled(dir); err != nil {
		return nil, err
	}
	s, err := startServer(dir, conf)
	if err != nil {
		return nil, err
	}
	pool.Lock()
	defer pool.Unlock()
	if pool.stopped {
		go s.stop()
		return nil, errors.New("the servers were stopped (pgtest.Main has returned)")
	}
	pool.all = append(pool.all, s)
	return s, nil
}

func release(s *server) {
	pool.Lock()
	defer pool.Unlock()
	if s.alive() && !pool.stopped {
		pool.idle = append(pool.idle, s)
	}
}

func (s *server) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

func (s *server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

func (s *server) output() string { return s.out.String() }

// stop ends the server's process group: SIGTERM, then SIGKILL after 5 s.
func (s *server) stop() {
	s.once.Do(func() {
		if !s.alive() {
			return
		}
		_ = terminate(s.cmd.Process)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = kill(s.cmd.Process)
			<-s.done
		}
	})
}

func startServer(dir string, conf []string) (*server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node (Node.js 18+) is not on PATH; the PGlite tests need it and are never skipped: " +
			"install Node.js and npm (Debian: apt-get install nodejs npm)")
	}
	// server.mjs is pglite-server that also passes PostgreSQL settings.
	script := filepath.Join(dir, "server.mjs")
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &server{port: port, done: make(chan struct{}), out: &tail{max: 64 << 10},
			dsn: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&default_query_exec_mode=simple_protocol&connect_timeout=10", port)}
		args := []string{script, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-m", strconv.Itoa(pgliteMaxConnections)}
		for _, c := range conf {
			args = append(args, "-c", c)
		}
		s.cmd = exec.Command(node, args...)
		s.cmd.Dir = dir
		s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
		s.cmd.SysProcAttr = procAttr()
		if err := s.cmd.Start(); err != nil {
			return nil, fmt.Errorf("start pglite-server: %w", err)
		}
		go func() {
			_ = s.cmd.Wait()
			close(s.done)
		}()
		if err := s.waitReady(); err != nil {
			s.stop()
			lastErr = fmt.Errorf("pglite-server on port %d: %w\n%s", port, err, s.output())
			continue
		}
		return s, nil
	}
	return nil, lastErr
}

// waitReady waits until the server answers a query.
func (s *server) waitReady() error {
	deadline := time.Now().Add(pgliteStartTimeout)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("exited during start (%v)", s.cmd.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.exec(ctx, "SELECT 1")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", pgliteStartTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pgliteDir finds test/pglite: EnvPGliteDir, else from the module root found
// above the working directory, else beside this source file.
func pgliteDir() (string, error) {
	if d := os.Getenv(EnvPGliteDir); d != "" {
		return d, nil
	}
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isModuleRoot(d) {
				return filepath.Join(d, "test", "pglite"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		tried = append(tried, "above "+wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		d := filepath.Join(filepath.Dir(file), "..", "pglite")
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("cannot find test/pglite (tried %s); set %s", strings.Join(tried, ", "), EnvPGliteDir)
}

func isModuleRoot(d string) bool {
	f, err := os.Open(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == "github.com/entityenrich/enrich"
		}
	}
	return false
}

// ensureInstalled runs npm ci (npm install without a lock file) in dir when
// node_modules is missing or was installed from another lock file. A file
// lock keeps test binaries that start together from installing at once.
func ensureInstalled(dir string) error {
	install.Lock()
	defer install.Unlock()
	if install.done {
		return nil
	}
	want, err := lockDigest(dir)
	if err != nil {
		return err
	}
	if installed(dir, want) {
		install.done = true
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("npm is not on PATH; the PGlite tests need Node.js and npm and are never skipped: " +
			"install them (Debian: apt-get install nodejs npm)")
	}
	sum := sha256.Sum256([]byte(dir))
	unlock, err := lockFile(filepath.Join(os.TempDir(), "enrich-pglite-install-"+hex.EncodeToString(sum[:8])+".lock"))
	if err != nil {
		return fmt.Errorf("lock the PGlite install: %w", err)
	}
	defer unlock()
	if installed(dir, want) { // another test binary installed it meanwhile
		install.done = true
		return nil
	}
	args := []string{"ci", "--no-audit", "--no-fund", "--loglevel=error"}
	if want == "" {
		args = []string{"install", "--no-audit", "--no-fund", "--loglevel=error"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgliteInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm %s in %s: %w\n%s", args[0], dir, err, out)
	}
	if want != "" {
		if err := os.WriteFile(filepath.Join(dir, "node_modules", stampFile), []byte(want), 0o644); err != nil {
			return err
		}
	}
	install.done = true
	return nil
}

// lockDigest is the SHA-256 of package-lock.json, or "" without one.
func lockDigest(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
			return "", fmt.Errorf("no package.json in %s: %w", dir, err)
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// installed reports whether node_modules holds the server, installed from
// the lock file with digest want ("" accepts any install).
func installed(dir, want string) bool {
	nm := filepath.Join(dir, "node_modules")
	for _, p := range []string{
		filepath.Join(nm, ".bin", "pglite-server"),
		filepath.Join(nm, "@electric-sql", "pglite-pgvector", "package.json"),
	} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	if want == "" {
		return true
	}
	got, err := os.ReadFile(filepath.Join(nm, stampFile))
	return err == nil && string(got) == want
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
