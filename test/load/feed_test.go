package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// The feed benchmark (issue 28): one consumer claims a window over HTTP
// (GET /changes?claim=true&limit=W), applies its SQL to a scratch target
// database in one transaction (with its watermark, as `enrich sync` does),
// and acknowledges it (POST /ack), until the feed is drained; against the
// same loop in raw SQL on the same PostgreSQL and the same data shape: a
// transaction that claims the window with SELECT ... FOR UPDATE SKIP LOCKED,
// applies it, marks it acknowledged and commits. ENRICH_FEED_LOAD_DELTAS
// deltas per run (default 20,000), windows of 100 and 500. It reports
// deltas/s, the ratio and where the time goes (claim, apply, ack); the goal
// is at least 70% of raw SQL at each window. `make bench` runs it
// (ENRICH_LOAD=1); it fails only when a run loses or repeats a delta.
const envFeedDeltas = "ENRICH_FEED_LOAD_DELTAS"

type feedRun struct {
	name              string
	window, n         int
	elapsed           time.Duration
	claim, apply, ack time.Duration
}

func (r feedRun) rate() float64 { return float64(r.n) / r.elapsed.Seconds() }

func TestFeedLoad(t *testing.T) {
	if os.Getenv(envLoad) != "1" {
		t.Skipf("feed benchmark: set %s=1 to run it (make bench does)", envLoad)
	}
	n := envInt(envFeedDeltas)
	if n <= 0 {
		n = 20000
	}
	ctx := context.Background()
	dsn, target := pgtest.Native(t), pgtest.Native(t)
	base, orgID, key := feedServer(t, dsn)
	src, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(ctx)
	dst, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(ctx)
	if _, err := dst.Exec(ctx, `CREATE TABLE company (id bigint PRIMARY KEY, name text, revision bigint);
		CREATE TABLE ee_watermark (feed text PRIMARY KEY, delta_id bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var runs []feedRun
	for _, w := range []int{100, 500} {
		httpDB := seedFeedRows(t, dsn, orgID, n)
		h := feedRun{name: "http", window: w, n: n}
		start := time.Now()
		consumeHTTP(t, base, key, httpDB, w, dst, &h)
		h.elapsed = time.Since(start)

		rawDB := seedFeedRows(t, dsn, orgID, n)
		if _, err := src.Exec(ctx, `CREATE INDEX IF NOT EXISTS bench_pending_idx ON deltas (database_id, id) WHERE acked_at IS NULL`); err != nil {
			t.Fatal(err)
		}
		r := feedRun{name: "raw SQL", window: w, n: n}
		start = time.Now()
		consumeRaw(t, src, rawDB, w, dst, &r)
		r.elapsed = time.Since(start)
		if _, err := src.Exec(ctx, `DROP INDEX bench_pending_idx`); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, h, r)
	}
	fmt.Printf("\nFeed benchmark: %d deltas per run (batches of 1-3 rows), one consumer, claim + apply (one target transaction) + ack\n", n)
	for i := 0; i < len(runs); i += 2 {
		h, r := runs[i], runs[i+1]
		for _, x := range []feedRun{h, r} {
			fmt.Printf("  window %3d  %-8s %8.0f deltas/s  (claim %5.1f%%, apply %5.1f%%, ack %5.1f%% of %s)\n", x.window, x.name, x.rate(),
				pct(x.claim, x.elapsed), pct(x.apply, x.elapsed), pct(x.ack, x.elapsed), x.elapsed.Round(time.Millisecond))
		}
		verdict := "meets"
		if h.rate() < 0.7*r.rate() {
			verdict = "misses"
		}
		fmt.Printf("  window %3d  HTTP / raw = %.0f%% (%s the 70%% goal)\n", h.window, 100*h.rate()/r.rate(), verdict)
	}
}

func pct(part, whole time.Duration) float64 { return 100 * float64(part) / float64(whole) }

// feedServer starts the service on dsn and registers an organization; it
// returns the base URL, the organization and an owner key.
func feedServer(t *testing.T, dsn string) (string, string, string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := enrich.NewServer(ctx, enrich.Config{DatabaseURL: dsn, Sandbox: true, JWTSecret: strings.Repeat("s", 40),
		PasswordHashing: "fast", ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	orgID, key := registerOwner(t, base, "feed@example.com")
	return base, orgID, key
}

// registerOwner registers an organization on base and returns it and an
// owner key.
func registerOwner(t *testing.T, base, email string) (string, string) {
	var sess struct {
		AccessToken  string `json:"access_token"`
		Organization struct{ ID string }
	}
	feedCall(t, base, "POST", "/api/auth/register", "", map[string]any{"email": email, "password": "correct horse battery",
		"organization": "Bench"}, &sess)
	var k struct{ Key string }
	feedCall(t, base, "POST", "/api/auth/api-keys", sess.AccessToken, map[string]any{"name": "bench", "role": "owner"}, &k)
	return sess.Organization.ID, k.Key
}

var feedClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

func feedCall(t *testing.T, base, method, path, cred string, body, out any) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if strings.HasPrefix(cred, "ent_") {
		req.Header.Set("X-API-Key", cred)
	} else if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := feedClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// seedFeedRows registers a database of orgID and appends n deltas in
// batches of 1-3 rows, each an idempotent upsert of the target's company
// table.
func seedFeedRows(t *testing.T, dsn, orgID string, n int) string {
	ctx := context.Background()
	db, err := postgres.Open(ctx, dsn, postgres.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	id := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy, index_scalars,
		notify_debounce_s, max_threshold_timeout_s, created_at, updated_at)
		VALUES (?, ?, ?, 100, 'skip_children', 'surrogate', 'filterable', 30, 300, now(), now())`, id, orgID, id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, id); err != nil {
		t.Fatal(err)
	}
	w := postgres.NewFeedWriter(db.DB)
	var rows []ports.FeedRow
	for i := 0; i < n; i++ {
		batch := fmt.Sprintf("b-%d", i-i%3+i/3%2) // runs of 1-3 rows
		rows = append(rows, ports.FeedRow{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert, BatchID: batch, Revision: 1,
			EntityType: "company", CreatedAt: time.Now(), Payload: []byte(`{"name":"Acme"}`),
			SQL: fmt.Sprintf(`INSERT INTO company (id, name, revision) VALUES (%d, 'Acme %d', 1) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, revision = EXCLUDED.revision WHERE company.revision <= EXCLUDED.revision`, i%5000, i)}})
		if len(rows) == 1000 || i == n-1 {
			if _, err := w.Append(ctx, id, rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if _, err := db.DB.ExecContext(ctx, `ANALYZE deltas`); err != nil {
		t.Fatal(err)
	}
	return id
}

// applyWindow runs a window's SQL and the consumer's watermark in one
// target transaction (one simple-protocol script).
func applyWindow(t *testing.T, dst *pgx.Conn, feed string, sqls []string, last int64) {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	for _, s := range sqls {
		b.WriteString(s)
		b.WriteString(";\n")
	}
	fmt.Fprintf(&b, "INSERT INTO ee_watermark VALUES ('%s', %d) ON CONFLICT (feed) DO UPDATE SET delta_id = EXCLUDED.delta_id;\nCOMMIT;", feed, last)
	if _, err := dst.Exec(context.Background(), b.String()); err != nil {
		t.Fatal(err)
	}
}

func consumeHTTP(t *testing.T, base, key, db string, window int, dst *pgx.Conn, run *feedRun) {
	next := int64(1)
	for {
		t0 := time.Now()
		var w struct {
			Deltas []struct {
				ID  int64  `json:"id"`
				SQL string `json:"sql"`
			} `json:"deltas"`
		}
		feedCall(t, base, "GET", fmt.Sprintf("/api/databases/%s/changes?claim=true&format=json&limit=%d", db, window), key, nil, &w)
		t1 := time.Now()
		if len(w.Deltas) == 0 {
			break
		}
		sqls := make([]string, len(w.Deltas))
		for i, d := range w.Deltas {
			if d.ID != next {
				t.Fatalf("delta %d, want %d", d.ID, next)
			}
			next++
			sqls[i] = d.SQL
		}
		last := w.Deltas[len(w.Deltas)-1].ID
		applyWindow(t, dst, db, sqls, last)
		t2 := time.Now()
		feedCall(t, base, "POST", "/api/databases/"+db+"/ack", key, map[string]any{"up_to_id": last}, nil)
		run.claim, run.apply, run.ack = run.claim+t1.Sub(t0), run.apply+t2.Sub(t1), run.ack+time.Since(t2)
	}
	if next != int64(run.n)+1 {
		t.Fatalf("http: delivered %d deltas, want %d", next-1, run.n)
	}
}

// consumeRaw is the queue in raw SQL: claim with SKIP LOCKED in a
// transaction, apply, mark acknowledged, commit.
func consumeRaw(t *testing.T, src *pgx.Conn, db string, window int, dst *pgx.Conn, run *feedRun) {
	ctx := context.Background()
	next := int64(1)
	for {
		t0 := time.Now()
		tx, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `SELECT id, sql FROM deltas WHERE database_id = $1 AND acked_at IS NULL AND quarantined_at IS NULL
			ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, db, window)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		var sqls []string
		for rows.Next() {
			var id int64
			var s string
			if err := rows.Scan(&id, &s); err != nil {
				t.Fatal(err)
			}
			ids, sqls = append(ids, id), append(sqls, s)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		t1 := time.Now()
		if len(ids) == 0 {
			_ = tx.Rollback(ctx)
			break
		}
		for _, id := range ids {
			if id != next {
				t.Fatalf("raw: delta %d, want %d", id, next)
			}
			next++
		}
		applyWindow(t, dst, db, sqls, ids[len(ids)-1])
		t2 := time.Now()
		if _, err := tx.Exec(ctx, `UPDATE deltas SET acked_at = now() WHERE database_id = $1 AND id = ANY($2)`, db, ids); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		run.claim, run.apply, run.ack = run.claim+t1.Sub(t0), run.apply+t2.Sub(t1), run.ack+time.Since(t2)
	}
	if next != int64(run.n)+1 {
		t.Fatalf("raw: delivered %d deltas, want %d", next-1, run.n)
	}
}
