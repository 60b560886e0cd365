package load_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/entityenrich/enrich/test/pgtest"
)

// The attachment benchmark (issue 29): uploads of distinct random PDFs
// (POST /api/attachments) to a server in a child process, for each store of
// the bytes (PostgreSQL's attachment_blobs, the file driver), file size and
// number of clients, next to writing the same bytes directly (one bytea
// INSERT, one local file) from as many clients; with the server's resident
// memory before the uploads and its peak after them. Then the time a job's
// five attachment_ids add to starting it, next to a PostgreSQL round trip.
// `make bench` runs it (ENRICH_LOAD=1); it fails only when a call fails.

type attRun struct {
	store             string
	mb, clients, each int
	elapsed, raw      time.Duration
	rssKB, hwmKB      int64
}

func (r attRun) mbps(d time.Duration) float64 {
	return float64(r.mb*r.clients*r.each) / d.Seconds()
}

var attClient = &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

func TestAttachmentLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("attachment benchmark: set %s=1 to run it (make bench does)", envLoad)
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.Native(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE bench_blobs (id bigserial PRIMARY KEY, data bytea NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var runs []attRun
	for _, store := range []string{"postgres", "file"} {
		for _, mb := range []int{1, 20} {
			for _, clients := range []int{1, 16} {
				r := attRun{store: store, mb: mb, clients: clients, each: max(2, 120/mb/clients)}
				t.Run(fmt.Sprintf("%s/%dMB/%d", store, mb, clients), func(t *testing.T) { uploadRun(t, pool, &r) })
				runs = append(runs, r)
			}
		}
	}
	fmt.Printf("\nAttachment benchmark: POST /api/attachments, distinct random PDFs, server in a child process; raw = the same bytes written directly\n")
	fmt.Printf("  %-8s %5s %7s %7s %10s %9s %13s %15s\n", "store", "size", "clients", "uploads", "uploads/s", "MB/s", "raw MB/s", "peak RSS rise")
	for _, r := range runs {
		raw := "INSERT bytea"
		if r.store == "file" {
			raw = "write file"
		}
		fmt.Printf("  %-8s %3dMB %7d %7d %10.1f %9.1f %6.1f (%s) %9.1f MiB\n", r.store, r.mb, r.clients, r.clients*r.each,
			float64(r.clients*r.each)/r.elapsed.Seconds(), r.mbps(r.elapsed), r.mbps(r.raw), raw, float64(r.hwmKB-r.rssKB)/1024)
		if r.mb == 20 && r.clients == 16 {
			verdict := "below"
			if (r.hwmKB-r.rssKB)*1024 >= 320<<20 {
				verdict = "NOT below"
			}
			fmt.Printf("  %-8s 16 × 20 MB: peak RSS rise %.1f MiB (baseline %.1f MiB), %s 320 MiB\n", r.store,
				float64(r.hwmKB-r.rssKB)/1024, float64(r.rssKB)/1024, verdict)
		}
	}
	t.Run("job start", func(t *testing.T) { jobStartRun(t, pool) })
}

// uploadRun uploads r.each files per client to a fresh server on r.store,
// then writes the same bytes directly.
func uploadRun(t *testing.T, pool *pgxpool.Pool, r *attRun) {
	spec := childSpec{Kind: "enrich", DatabaseURL: pgtest.Native(t), FakeURL: "http://127.0.0.1:1/v1", Sandbox: true}
	if r.store == "file" {
		spec.BlobURL = "file://" + t.TempDir()
	}
	base, err := startChild(t, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, key := registerOwner(t, base, "att@example.com")
	bodies := make([]attBody, r.clients)
	for c := range bodies {
		bodies[c] = newAttBody(t, 1, r.mb<<20)
	}
	pid, _ := childPIDs.Load(base)
	r.rssKB = procKB(t, pid.(int), "VmRSS")
	r.elapsed = parallel(t, r.clients, r.each, func(c, i int) error {
		bodies[c].stamp(i)
		_, err := upload(base, key, bodies[c])
		return err
	})
	r.hwmKB = procKB(t, pid.(int), "VmHWM")
	dir := t.TempDir()
	r.raw = parallel(t, r.clients, r.each, func(c, i int) error {
		b := bodies[c]
		b.stamp(i + r.each)
		if r.store == "file" {
			return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-%d", c, i)), b.files[0], 0o600)
		}
		_, err := pool.Exec(context.Background(), `INSERT INTO bench_blobs (data) VALUES ($1)`, b.files[0])
		return err
	})
}

// jobStartRun measures the median latency of starting a job (sync, and the
// stream's start) with no attachment and with five, against SELECT 1.
func jobStartRun(t *testing.T, pool *pgxpool.Pool) {
	const calls = 50
	base, err := startChild(t, childSpec{Kind: "enrich", DatabaseURL: pgtest.Native(t), FakeURL: "http://127.0.0.1:1/v1", Sandbox: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, key := registerOwner(t, base, "job@example.com")
	var schema struct{ ID string }
	feedCall(t, base, "POST", "/api/schema/saved", key, map[string]any{"name": "Company",
		"schema": json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)}, &schema)
	ids, err := upload(base, key, newAttBody(t, 5, 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	// f times what it measures itself: a stream's start is timed alone,
	// and its job is then followed to its end untimed, so that no earlier
	// job runs beside the next start.
	median := func(f func() time.Duration) time.Duration {
		var d []time.Duration
		for range calls + 3 { // three to warm up
			d = append(d, f())
		}
		d = d[3:]
		slices.Sort(d)
		return d[len(d)/2]
	}
	fmt.Printf("\nJob start with attachments: median of %d calls, 1 client, sandbox::echo, 5 random PDFs of 64 KiB\n", calls)
	for _, path := range []string{"/api/single/enrich/sync", "/api/single/enrich/stream"} {
		var m [2]time.Duration
		for k, att := range [][]string{nil, ids} {
			m[k] = median(func() time.Duration {
				var started struct {
					JobID string `json:"job_id"`
				}
				t0 := time.Now()
				feedCall(t, base, "POST", path, key, map[string]any{"entity_data": map[string]any{"name": "Acme"}, "schema_id": schema.ID,
					"models": []string{"sandbox::echo"}, "attachment_ids": att}, &started)
				d := time.Since(t0)
				if strings.HasSuffix(path, "/stream") {
					followToEnd(t, base, key, started.JobID)
				}
				return d
			})
		}
		fmt.Printf("  %-26s 0 attachments %8s  5 attachments %8s  added %8s\n", path, m[0].Round(time.Microsecond),
			m[1].Round(time.Microsecond), (m[1] - m[0]).Round(time.Microsecond))
	}
	rt := median(func() time.Duration {
		t0 := time.Now()
		if _, err := pool.Exec(context.Background(), `SELECT 1`); err != nil {
			t.Fatal(err)
		}
		return time.Since(t0)
	})
	fmt.Printf("  PostgreSQL round trip (SELECT 1)          %8s\n", rt.Round(time.Microsecond))
}

// attBody is one multipart upload request of random PDFs; stamp makes its
// files' bytes distinct from every other upload's, so none is deduplicated.
type attBody struct {
	contentType string
	body        []byte
	files       [][]byte // the files' bytes, within body
}

const pdfHeader = "%PDF-1.4\n"

func newAttBody(t *testing.T, n, size int) attBody {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	var offs []int
	for i := range n {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files"; filename="f%d.pdf"`, i))
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		_, _ = rand.Read(data)
		copy(data, pdfHeader)
		offs = append(offs, buf.Len())
		_, _ = w.Write(data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	b := attBody{contentType: mw.FormDataContentType(), body: buf.Bytes()}
	for _, off := range offs {
		b.files = append(b.files, b.body[off:off+size])
	}
	return b
}

func (b attBody) stamp(i int) {
	for _, f := range b.files {
		binary.BigEndian.PutUint64(f[len(pdfHeader):], uint64(i))
	}
}

// upload posts b and returns the attachments' ids.
func upload(base, key string, b attBody) ([]string, error) {
	req, _ := http.NewRequest("POST", base+"/api/attachments", bytes.NewReader(b.body))
	req.Header.Set("Content-Type", b.contentType)
	req.Header.Set("X-API-Key", key)
	resp, err := attClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("upload: %d %s", resp.StatusCode, raw)
	}
	var out []struct{ ID string }
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != len(b.files) {
		return nil, fmt.Errorf("upload: %s", raw)
	}
	ids := make([]string, len(out))
	for i, a := range out {
		ids[i] = a.ID
	}
	return ids, nil
}

// parallel runs do(c, i) for i < each on clients goroutines and returns
// the time it took; the test fails on the first error.
func parallel(t *testing.T, clients, each int, do func(c, i int) error) time.Duration {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				if err := do(c, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return elapsed
}

// procKB reads a field of /proc/<pid>/status, in kB.
func procKB(t *testing.T, pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			if _, err := fmt.Sscan(v, &kb); err == nil {
				return kb
			}
		}
	}
	t.Fatalf("/proc/%d/status: no %s", pid, field)
	return 0
}

// followToEnd reads a job's event stream until the server closes it (after
// the job's last event).
func followToEnd(t *testing.T, base, key, jobID string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/llm/stream/"+jobID, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
}
