package syncer_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// crashQuery runs sql on the server's database and scans every row.
func (m *crashMatrix) crashQuery(conn *pgx.Conn, sql string, scan func(pgx.Rows) error, args ...any) {
	m.t.Helper()
	rows, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		m.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		m.t.Fatal(err)
	}
}

// checkServer: every job ended completed or failed, a completed one with
// exactly one record; every record has its deltas, in one batch of one
// revision; each entity's batches carry revisions 1..k in feed order,
// k its records, and the entity layer holds revision k; the feed's ids
// run 1..head without a gap.
func (m *crashMatrix) checkServer(head int64) map[string]int {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, m.dsn)
	if err != nil {
		m.t.Fatal(err)
	}
	defer conn.Close(ctx)
	states := map[string]int{}
	codes := map[string]int{}
	m.crashQuery(conn, `SELECT state, error_code, count(*) FROM jobs GROUP BY 1, 2`, func(r pgx.Rows) error {
		var s, code string
		var n int
		err := r.Scan(&s, &code, &n)
		states[s] += n
		if code != "" {
			codes[code] += n
		}
		return err
	})
	if states["completed"]+states["failed"] < int(m.submitted.Load()) {
		m.t.Errorf("jobs by state %v, %d submitted", states, m.submitted.Load())
	}
	m.t.Logf("jobs by state: %v; failed by error code: %v", states, codes)
	for s := range states {
		if s != "completed" && s != "failed" {
			m.t.Errorf("jobs by state %v: only completed and failed expected", states)
		}
	}
	m.crashQuery(conn, `SELECT j.id, count(r.id) FROM jobs j LEFT JOIN records r ON r.job_id = j.id
		WHERE j.state = 'completed' GROUP BY 1 HAVING count(r.id) <> 1`, func(r pgx.Rows) error {
		var id string
		var n int
		err := r.Scan(&id, &n)
		m.t.Errorf("completed job %s has %d records, one expected", id, n)
		return err
	})
	var count, maxID int64
	if err := conn.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0) FROM deltas WHERE database_id = $1`, m.r.db).Scan(&count, &maxID); err != nil {
		m.t.Fatal(err)
	}
	if count != head || maxID != head {
		m.t.Errorf("the feed holds %d deltas, ids up to %d, head %d: a gap", count, maxID, head)
	}
	m.crashQuery(conn, `SELECT r.id, count(DISTINCT d.batch_id), count(DISTINCT d.revision), count(d.id)
		FROM records r LEFT JOIN deltas d ON d.record_id = r.id AND d.database_id = $1 AND d.kind = 'data'
		WHERE r.schema_id = $2 GROUP BY 1 HAVING count(DISTINCT d.batch_id) <> 1 OR count(DISTINCT d.revision) <> 1`,
		func(r pgx.Rows) error {
			var id string
			var batches, revs, n int
			err := r.Scan(&id, &batches, &revs, &n)
			m.t.Errorf("record %s: %d deltas in %d batches of %d revisions, one batch of one revision expected", id, n, batches, revs)
			return err
		}, m.r.db, m.r.schema)
	return m.checkEntities(conn)
}

// checkEntities: each identity's batches in feed order carry revisions
// 1..k, k its records, and the entity holds revision k. It returns k by
// identity.
func (m *crashMatrix) checkEntities(conn *pgx.Conn) map[string]int {
	want := map[string]int{}
	m.crashQuery(conn, `SELECT entity_data->>'domain', count(*) FROM records WHERE schema_id = $1 GROUP BY 1`, func(r pgx.Rows) error {
		var d string
		var n int
		err := r.Scan(&d, &n)
		want[d] = n
		return err
	}, m.r.schema)
	revs := map[string][]int{}
	m.crashQuery(conn, `SELECT r.entity_data->>'domain', d.revision FROM deltas d JOIN records r ON r.id = d.record_id
		WHERE d.database_id = $1 AND d.kind = 'data' GROUP BY 1, 2, d.batch_id ORDER BY min(d.id)`, func(r pgx.Rows) error {
		var d string
		var rev int
		err := r.Scan(&d, &rev)
		revs[d] = append(revs[d], rev)
		return err
	}, m.r.db)
	held := map[string]int{}
	m.crashQuery(conn, `SELECT r.entity_data->>'domain', e.revision FROM entities e JOIN records r ON r.id = e.last_record_id
		WHERE e.schema_id = $1`, func(r pgx.Rows) error {
		var d string
		var rev int
		err := r.Scan(&d, &rev)
		held[d] = rev
		return err
	}, m.r.schema)
	domains := make([]string, 0, len(want))
	for d := range want {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	for _, d := range domains {
		k := want[d]
		if !isRun(revs[d], k) {
			m.t.Errorf("entity %s: batches of revisions %v in the feed, 1..%d expected (its records)", d, revs[d], k)
		}
		if held[d] != k {
			m.t.Errorf("entity %s: the entity layer holds revision %d, %d records", d, held[d], k)
		}
	}
	if len(revs) != len(want) || len(held) != len(want) {
		m.t.Errorf("%d identities with records, %d in the feed, %d in the entity layer", len(want), len(revs), len(held))
	}
	return want
}

// isRun reports whether revs is 1, 2, ... k.
func isRun(revs []int, k int) bool {
	if len(revs) != k {
		return false
	}
	for i, r := range revs {
		if r != i+1 {
			return false
		}
	}
	return true
}

// checkTarget: the target's revision log shows each entity's revisions
// 1..k applied once, in order, and the target equals a fresh snapshot
// load (through server a).
func (m *crashMatrix) checkTarget(targetDSN, freshDSN string, head int64, want map[string]int) {
	target := connectTarget(m.t, targetDSN)
	checkRevisionLog(m.t, target, want)
	m.r.url = m.upURL()
	m.r.cl.BaseURL = m.r.url
	m.r.compareSnapshot(context.Background(), target, freshDSN, head)
}

// checkEvents: every event id the outbox queued arrived at least once,
// every record's enrichment_result among them; nothing failed to verify.
func (m *crashMatrix) checkEvents() {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, m.dsn)
	if err != nil {
		m.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rc := m.rc
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		m.t.Errorf("%d deliveries did not verify, e.g. %s", len(rc.bad), strings.Join(rc.bad[:min(5, len(rc.bad))], "; "))
	}
	var missing []string
	queued := 0
	m.crashQuery(conn, `SELECT event_id FROM event_deliveries`, func(r pgx.Rows) error {
		var id string
		err := r.Scan(&id)
		queued++
		if rc.byID[id] == 0 {
			missing = append(missing, id)
		}
		return err
	})
	m.crashQuery(conn, `SELECT id FROM records WHERE schema_id = $1`, func(r pgx.Rows) error {
		var id string
		err := r.Scan(&id)
		if rc.records[id] == "" {
			missing = append(missing, "enrichment_result of "+id)
		}
		return err
	}, m.r.schema)
	if len(missing) > 0 {
		m.t.Errorf("%d of %d queued events never arrived, e.g. %v", len(missing), queued, missing[:min(5, len(missing))])
	}
	if rc.notices == 0 {
		m.t.Error("no delta notification arrived")
	}
	m.t.Logf("events: %d queued, %d distinct ids arrived, %s", queued, len(rc.byID), fmt.Sprint(dupes(rc.byID), " delivered more than once"))
}

func dupes(byID map[string]int) int {
	n := 0
	for _, c := range byID {
		if c > 1 {
			n++
		}
	}
	return n
}

// upURL waits until a server is up (the last one killed may still be
// restarting) and returns its URL.
func (m *crashMatrix) upURL() string {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		for _, r := range m.reps {
			if u := r.url(); u != "" {
				return u
			}
		}
		if time.Now().After(deadline) {
			m.t.Fatal("no server came up for the final checks")
		}
	}
}
