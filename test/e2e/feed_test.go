package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// feedSeed stores registrations and appends deltas under a running service
// (the registry's routes are another part of issue 28): in the memory
// store's SyncStore, or by rows in PostgreSQL.
type feedSeed struct {
	t      *testing.T
	writer ports.FeedWriter
	add    func(orgID, id string, pageLimit int)
}

func newFeedSeed(t *testing.T, s *service, dsn string) feedSeed {
	t.Helper()
	if dsn == "" {
		st, ok := s.srv.Stores.Feed.(*memory.SyncStore)
		if !ok {
			t.Fatal("the memory store's feed is not a SyncStore")
		}
		return feedSeed{t: t, writer: st, add: func(orgID, id string, pageLimit int) {
			st.SeedDatabase(&dbsync.Database{ID: id, OrgID: orgID, Name: id, PageLimit: pageLimit, CreatedAt: time.Now()})
		}}
	}
	db, err := postgres.Open(context.Background(), dsn, postgres.PoolConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return feedSeed{t: t, writer: postgres.NewFeedWriter(db.DB), add: func(orgID, id string, pageLimit int) {
		ctx := context.Background()
		_, err := db.DB.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy, index_scalars,
			notify_debounce_s, max_threshold_timeout_s, created_at, updated_at)
			VALUES (?, ?, ?, ?, 'skip_children', 'surrogate', 'filterable', 30, 300, now(), now())`, id, orgID, id, pageLimit)
		if err == nil {
			_, err = db.DB.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, id)
		}
		if err != nil {
			t.Fatal(err)
		}
	}}
}

// register stores a registration of orgID and appends batches of the given
// sizes; it returns the registration's id.
func (f feedSeed) register(orgID string, pageLimit int, sizes ...int) string {
	f.t.Helper()
	id := fmt.Sprintf("db-%d", time.Now().UnixNano())
	f.add(orgID, id, pageLimit)
	f.append(id, sizes...)
	return id
}

func (f feedSeed) append(id string, sizes ...int) {
	f.t.Helper()
	var rows []ports.FeedRow
	for i, n := range sizes {
		batch := fmt.Sprintf("%s-%d-%d", id, time.Now().UnixNano(), i)
		for j := range n {
			rows = append(rows, ports.FeedRow{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert,
				SQL: fmt.Sprintf("INSERT INTO company VALUES (%d, %d)", i, j), Payload: []byte(`{"name":"Acme"}`), BatchID: batch,
				Revision: int64(j + 1), EntityType: "company", CreatedAt: time.Now()}, EntityID: "ent-1", SchemaID: "sch-1", RecordID: "rec-1"})
		}
	}
	if len(rows) > 0 {
		if _, err := f.writer.Append(context.Background(), id, rows); err != nil {
			f.t.Fatal(err)
		}
	}
}

type deltaBatch struct {
	Deltas []struct {
		ID             int64          `json:"id"`
		Kind, Op, SQL  string         `json:"-"`
		BatchID        *string        `json:"batch_id"`
		ClaimExpiresAt *string        `json:"claim_expires_at"`
		Payload        map[string]any `json:"payload"`
		RecordID       *string        `json:"record_id"`
		Revision       *int64         `json:"revision"`
	} `json:"deltas"`
	HasMore        bool    `json:"has_more"`
	LeaseExpiresAt *string `json:"lease_expires_at"`
	NextCursor     *int64  `json:"next_cursor"`
}

func (b deltaBatch) ids() []int64 {
	out := []int64{}
	for _, d := range b.Deltas {
		out = append(out, d.ID)
	}
	return out
}

type ackReply struct {
	Acked          int64 `json:"acked"`
	PurgedDeltas   int64 `json:"purged_deltas"`
	PurgedEntities int64 `json:"purged_entities"`
}

// TestFeedReferenceClient: the reference client's calls, in its shapes
// (GET /changes?since=0&claim=true&format=json, then POST /ack
// {"up_to_id": n}), a read that changes nothing, and a lease that expires
// and redelivers the same window.
func TestFeedReferenceClient(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			dsn := b.dsn(t)
			s := start(t, testConfig(dsn))
			ten := s.register("feed@example.com")
			seed := newFeedSeed(t, s, dsn)
			db := seed.register(ten.orgID, 3, 2, 2, 1) // batches 1-2, 3-4, 5; page_limit 3
			op := s.newKey(ten.token, "operator")
			base := "/api/databases/" + db

			var read deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=0&claim=false&format=json", op, nil, &read), 200)
			is.Equal(read.ids(), []int64{1, 2})
			is.True(read.LeaseExpiresAt == nil && read.Deltas[0].ClaimExpiresAt == nil)

			var w deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=0&claim=true&format=json", op, nil, &w), 200)
			is.Equal(w.ids(), []int64{1, 2}) // the read claimed nothing
			is.True(w.HasMore && w.LeaseExpiresAt != nil && *w.NextCursor == 2)
			is.Equal(*w.Deltas[0].ClaimExpiresAt, *w.LeaseExpiresAt)
			is.Equal(w.Deltas[0].Payload["name"], "Acme")
			is.Equal(*w.Deltas[0].RecordID, "rec-1")

			var busy deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=2&claim=true&format=json", op, nil, &busy), 200)
			is.Equal(len(busy.Deltas), 0) // leased
			is.Equal(*busy.LeaseExpiresAt, *w.LeaseExpiresAt)

			var ack ackReply
			is.Equal(s.call("POST", base+"/ack", op, map[string]any{"up_to_id": 5}, nil), 409) // never delivered
			is.Equal(s.call("POST", base+"/ack", op, map[string]any{"up_to_id": 2}, &ack), 200)
			is.Equal(ack.Acked, int64(2))
			is.Equal(s.call("POST", base+"/ack", op, map[string]any{"up_to_id": 2}, &ack), 200)
			is.Equal(ack.Acked, int64(0)) // idempotent

			// A short lease expires and the same window comes again.
			is.Equal(s.call("GET", base+"/changes?since=2&claim=true&format=json&lease_s=10", op, nil, &w), 200)
			is.Equal(w.ids(), []int64{3, 4, 5})
			time.Sleep(10*time.Second + 100*time.Millisecond)
			var again deltaBatch
			is.Equal(s.call("GET", base+"/changes?since=5&claim=true&format=json", op, nil, &again), 200)
			is.Equal(again.ids(), []int64{3, 4, 5})
			is.Equal(s.call("POST", base+"/ack", op, map[string]any{"up_to_id": 4}, &ack), 200) // partial: 5 stays leased
			is.Equal(ack.Acked, int64(2))
			is.Equal(s.call("GET", base+"/changes?since=4&claim=true&format=json", op, nil, &w), 200)
			is.Equal(len(w.Deltas), 0)

			var sum struct {
				AckWatermarkID *int64 `json:"ack_watermark_id"`
				PendingCount   int64  `json:"pending_count"`
				AckedCount     int64  `json:"acked_count"`
			}
			is.Equal(s.call("GET", base+"/deltas/summary", op, nil, &sum), 200)
			is.Equal([]int64{*sum.AckWatermarkID, sum.PendingCount, sum.AckedCount}, []int64{4, 1, 4})

			// A refused batch is set aside; the next claim moves on.
			var rep struct {
				BatchID       string `json:"batch_id"`
				LeaseReleased bool   `json:"lease_released"`
			}
			is.Equal(s.call("POST", base+"/quarantine/report", op, map[string]any{"delta_id": 5, "error": "relation does not exist"}, &rep), 200)
			is.True(rep.LeaseReleased)
			var q struct {
				Entities []struct {
					FailingDeltaID *int64  `json:"failing_delta_id"`
					ApplyError     *string `json:"apply_error"`
				} `json:"entities"`
				TotalDeltas int `json:"total_deltas"`
			}
			is.Equal(s.call("GET", base+"/quarantine", op, nil, &q), 200)
			is.Equal(q.TotalDeltas, 1)
			is.Equal(*q.Entities[0].FailingDeltaID, int64(5))
			var rd struct{ Queued, Removed int64 }
			is.Equal(s.call("POST", base+"/quarantine/redrive", op, map[string]any{"delta_ids": []int64{5}}, &rd), 200)
			is.Equal([]int64{rd.Queued, rd.Removed}, []int64{1, 1})
			is.Equal(s.call("GET", base+"/changes?since=5&claim=true&format=json", op, nil, &w), 200)
			is.Equal(w.ids(), []int64{6})
			is.Equal(s.call("POST", base+"/ack", op, map[string]any{"up_to_id": 6}, &ack), 200)
			is.Equal(s.call("POST", base+"/clear-acked", op, nil, &ack), 200)
			is.Equal(ack.PurgedDeltas, int64(5))

			// Another organization sees nothing; a read-only key reads but
			// cannot claim.
			other := s.register("feed-other@example.com")
			is.Equal(s.call("GET", base+"/changes", other.key, nil, nil), 404)
			var k struct{ Key string }
			is.Equal(s.call("POST", "/api/auth/api-keys", ten.token, map[string]any{"name": "ro", "role": "operator", "scopes": []string{"read"}}, &k), 201)
			ro := k.Key
			is.Equal(s.call("GET", base+"/changes?claim=false", ro, nil, nil), 200)
			is.Equal(s.call("GET", base+"/changes?claim=true", ro, nil, nil), 403)
		})
	}
}

// TestFeedTwoReplicas: two servers on one PostgreSQL, consumers claiming
// through both at once, never lease the same window twice, and every delta
// is delivered once, in order.
func TestFeedTwoReplicas(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	a := start(t, testConfig(dsn))
	b := start(t, testConfig(dsn))
	ten := a.register("replicas-feed@example.com")
	seed := newFeedSeed(t, a, dsn)
	sizes := make([]int, 60)
	total := 0
	for i := range sizes {
		sizes[i] = 1 + i%4
		total += sizes[i]
	}
	db := seed.register(ten.orgID, 7, sizes...)
	path := "/api/databases/" + db
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for _, s := range []*service{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
				mu.Lock()
				done := len(got) >= total
				mu.Unlock()
				if done {
					return
				}
				var w deltaBatch
				if st := s.call("GET", path+"/changes?since=0&claim=true&format=json", ten.key, nil, &w); st != 200 {
					t.Errorf("claim: %d", st)
					return
				}
				if len(w.Deltas) == 0 {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				mu.Lock()
				got = append(got, w.ids()...)
				mu.Unlock()
				if st := s.call("POST", path+"/ack", ten.key, map[string]any{"up_to_id": w.Deltas[len(w.Deltas)-1].ID}, nil); st != 200 {
					t.Errorf("ack: %d", st)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := make([]int64, total)
	for i := range want {
		want[i] = int64(i + 1)
	}
	is.Equal(got, want) // no window leased twice, nothing lost, in order
}

// TestHostileFeed: the feed routes' parameters and bodies out of range or
// of the wrong type answer 400 naming the field; an ack beyond the end 409.
func TestHostileFeed(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	ten := s.register("hostile-feed@example.com")
	seed := newFeedSeed(t, s, "")
	db := seed.register(ten.orgID, 100, 2)
	base := "/api/databases/" + db
	for _, c := range []struct{ query, field string }{
		{"limit=1000000000000000000000", "limit"}, {"limit=1001", "limit"}, {"limit=0", "limit"}, {"limit=abc", "limit"},
		{"since=-1", "since"}, {"since=1.5", "since"}, {"since=abc", "since"}, {"before=0", "before"},
		{"before=5", "before"}, {"lease_s=9", "lease_s"}, {"lease_s=3601", "lease_s"}, {"claim=maybe", "claim"},
		{"format=sql", "format"}, {"include=everything", "include"}, {"order=up", "order"},
		{"claim=true&order=desc", "order"}, {"claim=true&include=all", "include"}, {"since=1&since=2", "since"},
	} {
		r, err := s.do(context.Background(), "GET", base+"/changes?"+c.query, ten.key, "", nil)
		is.NoErr(err)
		if r.status != 400 || r.err.Field != c.field {
			t.Errorf("%s: %d field %q (%s), want 400 field %q", c.query, r.status, r.err.Field, r.err.Detail, c.field)
		}
	}
	for _, c := range []struct{ path, body, field string }{
		{"/ack", `{"up_to_id":-1}`, "up_to_id"}, {"/ack", `{"up_to_id":1.5}`, "up_to_id"}, {"/ack", `{"up_to_id":"3"}`, "up_to_id"},
		{"/ack", `{}`, "up_to_id"}, {"/ack", `{"up_to_id":99999999999999999999999}`, "up_to_id"},
		{"/quarantine/report", `{"delta_id":0,"error":"x"}`, "delta_id"}, {"/quarantine/report", `{"delta_id":1}`, "error"},
		{"/quarantine/delete", `{}`, "delta_ids"}, {"/quarantine/delete", `{"delta_ids":[-1]}`, "delta_ids.0"},
		{"/quarantine/redrive", `{"delta_ids":[]}`, "delta_ids"}, {"/quarantine/redrive", `{"delta_ids":["a"]}`, "delta_ids.0"},
	} {
		r, err := s.do(context.Background(), "POST", base+c.path, ten.key, c.body, nil)
		is.NoErr(err)
		if r.status != 400 || r.err.Field != c.field {
			t.Errorf("%s %s: %d field %q (%s), want 400 field %q", c.path, c.body, r.status, r.err.Field, r.err.Detail, c.field)
		}
	}
	r, err := s.do(context.Background(), "POST", base+"/ack", ten.key, `{"up_to_id":9223372036854775807}`, nil)
	is.NoErr(err)
	is.Equal(r.status, 409) // beyond the end
	is.Equal(r.err.Code, "ack_beyond_delivered")
	r, err = s.do(context.Background(), "POST", base+"/quarantine/report", ten.key, `{"delta_id":1,"error":"never claimed"}`, nil)
	is.NoErr(err)
	is.Equal(r.status, 409)
	is.Equal(r.err.Code, "delta_not_delivered")
	// A long error is kept in part; text the stores cannot keep is refused.
	is.Equal(s.call("GET", base+"/changes?claim=true", ten.key, nil, nil), 200)
	var rep struct{ Already bool }
	is.Equal(s.call("POST", base+"/quarantine/report", ten.key, map[string]any{"delta_id": 1, "error": strings.Repeat("é", 50000)}, &rep), 200)
	for _, h := range hostiles {
		r, err := s.do(context.Background(), "POST", base+"/quarantine/report", ten.key, `{"delta_id":1,"error":"x`+h.json+`"}`, nil)
		is.NoErr(err)
		if r.status != 400 || r.err.Field != "error" {
			t.Errorf("report error with %s: %d field %q", h.name, r.status, r.err.Field)
		}
	}
}

// TestFeedLeaseSurvivesRestart: the replica that granted a lease stops
// while the lease is live; another replica on the same PostgreSQL keeps the
// lease (a claim gets nothing new, told when it ends), then delivers the
// same window again, first and in order, and the consumer's ack completes
// the feed with nothing lost or duplicated beyond that redelivery.
func TestFeedLeaseSurvivesRestart(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	a := start(t, testConfig(dsn))
	ten := a.register("lease-restart@example.com")
	db := newFeedSeed(t, a, dsn).register(ten.orgID, 4, 2, 2, 1, 3)
	path := "/api/databases/" + db + "/changes?since=0&claim=true&format=json&lease_s=10"

	var first deltaBatch
	is.Equal(a.call("GET", path, ten.key, nil, &first), 200)
	is.Equal(first.ids(), []int64{1, 2, 3, 4}) // whole batches up to the limit
	a.stop()                                   // the replica goes away with the lease live

	b := start(t, testConfig(dsn))
	var busy deltaBatch
	is.Equal(b.call("GET", path, ten.key, nil, &busy), 200)
	is.Equal(len(busy.Deltas), 0) // the lease outlived its replica
	is.True(busy.LeaseExpiresAt != nil)
	is.True(busy.HasMore)
	until, err := time.Parse(time.RFC3339Nano, *busy.LeaseExpiresAt)
	is.NoErr(err)
	time.Sleep(time.Until(until) + 100*time.Millisecond)

	var again deltaBatch
	is.Equal(b.call("GET", path, ten.key, nil, &again), 200)
	is.Equal(again.ids(), first.ids()) // redelivered, same order
	is.Equal(b.call("POST", "/api/databases/"+db+"/ack", ten.key, map[string]any{"up_to_id": 4}, nil), 200)
	var rest deltaBatch
	is.Equal(b.call("GET", path, ten.key, nil, &rest), 200)
	is.Equal(rest.ids(), []int64{5, 6, 7, 8})
	is.Equal(b.call("POST", "/api/databases/"+db+"/ack", ten.key, map[string]any{"up_to_id": 8}, nil), 200)
	var none deltaBatch
	is.Equal(b.call("GET", path, ten.key, nil, &none), 200)
	is.Equal(len(none.Deltas), 0)
	is.True(!none.HasMore)
}
