package syncer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
	"github.com/entityenrich/enrich/cmd/enrich/internal/syncer"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) {
	if raw := os.Getenv(envCrashChild); raw != "" {
		os.Exit(runCrashChild(raw)) // a server of the crash matrix (crash_test.go)
	}
	pgtest.Main(m)
}

// fakeFeed serves /changes (claims), /ack and /quarantine/report over a
// fixed list of deltas with domain/delta's rules, on loopback.
type fakeFeed struct {
	mu     sync.Mutex
	state  delta.State
	deltas []delta.Delta
	lease  time.Duration
	claims int
	// failAcks makes the next acks fail (503), as a lost ack would.
	failAcks int
	// snapshotRequired pauses claims (snapshot_required) until the
	// snapshot is served: the DDL of the first delta and the watermark set
	// to the last delta.
	snapshotRequired bool
	snapshots        int
}

func (f *fakeFeed) handler(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/databases/{id}/changes", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if r.URL.Query().Get("claim") != "true" || limit == 0 {
			http.Error(w, "claim=true and limit expected", 400)
			return
		}
		if f.snapshotRequired {
			_ = json.NewEncoder(w).Encode(map[string]any{"deltas": []any{}, "has_more": false, "snapshot_required": true})
			return
		}
		res, st, err := delta.Claim(f.state, time.Now(), f.lease, f.deltas, limit)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		f.state = st
		f.claims++
		out := map[string]any{"deltas": []any{}, "has_more": res.HasMore}
		if !res.LeaseExpiresAt.IsZero() {
			out["lease_expires_at"] = res.LeaseExpiresAt
		}
		var rows []any
		for _, d := range res.Deltas {
			rows = append(rows, map[string]any{"id": d.ID, "kind": d.Kind, "op": d.Op, "sql": d.SQL, "batch_id": d.BatchID,
				"revision": d.Revision, "entity_type": d.EntityType, "created_at": d.CreatedAt, "payload": json.RawMessage(`{}`)})
		}
		if rows != nil {
			out["deltas"] = rows
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/databases/{id}/ack", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			UpToID int64 `json:"up_to_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failAcks > 0 {
			f.failAcks--
			http.Error(w, "unavailable", 503)
			return
		}
		res, st, err := delta.Ack(f.state, in.UpToID, time.Now(), delta.Settings{})
		if errors.Is(err, delta.ErrAckBeyondDelivered) {
			http.Error(w, `{"detail":"beyond","code":"ack_beyond_delivered"}`, 409)
			return
		}
		f.state = st
		_ = json.NewEncoder(w).Encode(map[string]any{"acked": res.Acked.Through - res.Acked.After})
	})
	mux.HandleFunc("GET /api/databases/{id}/snapshot", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		head := f.deltas[len(f.deltas)-1].ID
		set, err := dbsync.SetStateSQL(r.PathValue("id"), head)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]int64{"as_of_delta_id": head})
		_ = enc.Encode(map[string]string{"sql": f.deltas[0].SQL})
		_ = enc.Encode(map[string]string{"sql": set})
		_ = enc.Encode(map[string]bool{"end": true})
		f.snapshotRequired = false
		f.snapshots++
	})
	mux.HandleFunc("POST /api/databases/{id}/quarantine/report", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			DeltaID int64  `json:"delta_id"`
			Error   string `json:"error"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, d := range f.deltas {
			if d.ID == in.DeltaID {
				_, st, err := delta.Report(f.state, d)
				if err != nil {
					http.Error(w, err.Error(), 409)
					return
				}
				f.state = st
				w.WriteHeader(200)
				return
			}
		}
		http.Error(w, "no such delta", 404)
	})
	return mux
}

// serve starts the fake on 127.0.0.1.
func (f *fakeFeed) serve(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: f.handler(t)}}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// buildFeed makes the feed: the projection's DDL (a schema delta with the
// revision log table), then per round an upsert of each entity at the
// next revision, each its own batch, with a refused batch after the
// first round. Every data delta also appends (delta id, entity, revision)
// to revlog, the per-entity log the test reads.
func buildFeed(t *testing.T, entities, rounds int) (deltas []delta.Delta, badID int64) {
	m := contract.TestMap(t, relmap.Surrogate)
	ddl := strings.Join(append(relmap.DDL(*m), `CREATE TABLE IF NOT EXISTS revlog (seq bigserial PRIMARY KEY, delta_id bigint, entity text, revision bigint)`), ";\n")
	deltas = append(deltas, delta.Delta{ID: 1, Kind: delta.Schema, Op: delta.Migrate, SQL: ddl, BatchID: "ddl", CreatedAt: time.Now()})
	ids := make([]string, entities)
	for i := range ids {
		ids[i] = contract.TestUUID()
	}
	for rev := 1; rev <= rounds; rev++ {
		for i := range entities {
			id := int64(len(deltas) + 1)
			state, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("e%d", i), "employees": rev, "tags": make([]string, rev%3)})
			w, err := relmap.UpsertWithID(*m, ids[i], state, int64(rev))
			if err != nil {
				t.Fatal(err)
			}
			sql := w.SQL() + fmt.Sprintf("INSERT INTO revlog (delta_id, entity, revision) VALUES (%d, 'e%d', %d)", id, i, rev)
			deltas = append(deltas, delta.Delta{ID: id, Kind: delta.Data, Op: delta.Upsert, SQL: sql, BatchID: fmt.Sprintf("b%d", id),
				Revision: int64(rev), EntityType: m.EntityType, CreatedAt: time.Now()})
		}
		if rev == 1 {
			badID = int64(len(deltas) + 1)
			deltas = append(deltas, delta.Delta{ID: badID, Kind: delta.Data, Op: delta.Upsert, SQL: "SELECT 1/0", BatchID: "bad",
				Revision: 1, EntityType: m.EntityType, CreatedAt: time.Now()})
		}
	}
	return deltas, badID
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	c, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func newSyncer(t *testing.T, url, dsn string, limit int) *syncer.Syncer {
	feed := &syncer.HTTPFeed{Client: api.New(url, nil), DatabaseID: "db1", Limit: limit}
	return &syncer.Syncer{Feed: feed, Target: connect(t, dsn), DatabaseID: "db1"}
}

// checkReplica: every data delta but the refused one applied exactly once,
// in order per entity, and the entities at their last revision.
func checkReplica(t *testing.T, dsn string, deltas []delta.Delta, badID int64, entities, rounds int) {
	is := is.New(t)
	ctx := context.Background()
	c := connect(t, dsn)
	var n, distinct int64
	is.NoErr(c.QueryRow(ctx, `SELECT count(*), count(DISTINCT delta_id) FROM revlog`).Scan(&n, &distinct))
	is.Equal(n, int64(len(deltas)-2)) // every data delta but the refused one: none lost
	is.Equal(distinct, n)             // none twice
	var disordered int64
	is.NoErr(c.QueryRow(ctx, `SELECT count(*) FROM (SELECT revision < lag(revision) OVER (PARTITION BY entity ORDER BY seq) AS back
		FROM revlog) s WHERE back`).Scan(&disordered))
	is.Equal(disordered, int64(0)) // none out of order
	var rows, atLast int64
	is.NoErr(c.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE ee_revision = $1) FROM company`, rounds).Scan(&rows, &atLast))
	is.Equal(rows, int64(entities))
	is.Equal(atLast, int64(entities))
	var wm int64
	is.NoErr(c.QueryRow(ctx, `SELECT last_delta_id FROM ee_sync_state WHERE database_id = 'db1'`).Scan(&wm))
	is.Equal(wm, deltas[len(deltas)-1].ID)
}

// TestSyncOnce: --once applies the whole feed and stops at the head; the
// refused batch is reported (quarantined at the fake) and the rest applied.
func TestSyncOnce(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	deltas, badID := buildFeed(t, 8, 4)
	f := &fakeFeed{deltas: deltas, lease: time.Minute}
	s := newSyncer(t, f.serve(t), dsn, 7)
	var notices []string
	s.Notice = func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	is.NoErr(s.Run(context.Background(), syncer.Options{}))
	checkReplica(t, dsn, deltas, badID, 8, 4)
	st := s.Stats()
	is.Equal(st.Refused, int64(1))
	is.Equal(len(notices), 1)
	is.True(strings.Contains(notices[0], "division by zero"))
	is.Equal(f.state.Watermark, deltas[len(deltas)-1].ID)
	is.Equal(f.state.Quarantined, []string{"bad"})
	// At the head, once more: nothing to do, exit at once.
	is.NoErr(newSyncer(t, f.serve(t), dsn, 7).Run(context.Background(), syncer.Options{}))
}

// TestSyncCrashBetweenCommitAndAck: the consumer dies after committing a
// window and before acknowledging it, at several points. A restart acks
// its own watermark, which releases the lease; when that ack is lost too,
// the window comes again once its lease expires and is skipped up to the
// watermark. In the end every change is applied once, in order.
func TestSyncCrashBetweenCommitAndAck(t *testing.T) {
	dsn := pgtest.Native(t)
	deltas, badID := buildFeed(t, 6, 5)
	f := &fakeFeed{deltas: deltas, lease: 300 * time.Millisecond}
	url := f.serve(t)
	for i, kill := range []int{1, 2, 1, 2} {
		f.mu.Lock()
		f.failAcks = i % 2 // every other restart loses its first ack
		f.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		s := newSyncer(t, url, dsn, 5)
		windows := 0
		s.AfterCommit = func(int64) {
			if windows++; windows == kill {
				cancel() // killed between commit and ack
			}
		}
		err := s.Run(ctx, syncer.Options{})
		cancel()
		if err == nil {
			t.Fatalf("kill at window %d: the run ended before it", kill)
		}
	}
	f.mu.Lock()
	f.failAcks = 1
	f.mu.Unlock()
	s := newSyncer(t, url, dsn, 5)
	if err := s.Run(context.Background(), syncer.Options{}); err != nil {
		t.Fatal(err)
	}
	checkReplica(t, dsn, deltas, badID, 6, 5)
	if s.Stats().Skipped == 0 {
		t.Fatal("no redelivered delta was skipped")
	}
}

// TestSyncSnapshotRequired: a registration that asks for a snapshot
// reload stops a plain run with ErrSnapshotRequired, target untouched;
// with Reload the run loads the snapshot, skips what it covers and
// acknowledges up to its head.
func TestSyncSnapshotRequired(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	deltas, _ := buildFeed(t, 3, 2)
	f := &fakeFeed{deltas: deltas, lease: time.Minute, snapshotRequired: true}
	url := f.serve(t)
	err := newSyncer(t, url, dsn, 4).Run(context.Background(), syncer.Options{})
	is.True(errors.Is(err, syncer.ErrSnapshotRequired))
	is.Equal(f.snapshots, 0)

	s := newSyncer(t, url, dsn, 4)
	var notices []string
	s.Notice = func(format string, args ...any) { notices = append(notices, fmt.Sprintf(format, args...)) }
	is.NoErr(s.Run(context.Background(), syncer.Options{Reload: true}))
	head := deltas[len(deltas)-1].ID
	is.Equal(f.snapshots, 1)
	is.Equal(s.Stats().Watermark, head)
	is.Equal(f.state.Watermark, head) // acknowledged
	is.Equal(len(notices), 1)
	is.True(strings.Contains(notices[0], "snapshot reloaded"))
	var applied int64
	is.NoErr(connect(t, dsn).QueryRow(context.Background(), `SELECT count(*) FROM revlog`).Scan(&applied))
	is.Equal(applied, int64(0)) // the snapshot covered every delta
}
