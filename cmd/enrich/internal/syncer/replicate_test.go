package syncer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
	"github.com/entityenrich/enrich/cmd/enrich/internal/syncer"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/test/pgtest"
	"github.com/entityenrich/enrich/test/serve"
)

// replicaSchema has an identifying key, scalars, an array of objects and
// an array of scalars.
const replicaSchema = `{"type":"object","title":"company","properties":{
  "domain":{"type":"string","database_key":true},
  "name":{"type":"string"},
  "employees":{"type":"integer"},
  "tags":{"type":"array","items":{"type":"string"}},
  "offices":{"type":"array","items":{"type":"object","properties":{
    "city":{"type":"string"},"size":{"type":"integer"}}}}}}`

// replicaN is the number of enrichments (ENRICH_REPLICATION_N, default 200).
func replicaN(t *testing.T) int {
	n := 200
	if s := os.Getenv("ENRICH_REPLICATION_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 8 {
			t.Fatalf("ENRICH_REPLICATION_N=%q: a number ≥ 8 expected", s)
		}
		n = v
	}
	return n
}

// TestSyncReplicates: enrichments of a linked, published schema through the
// real HTTP API (a server on native PostgreSQL with the sandbox models)
// replicate into a second database with enrich sync's engine: updates of
// the same identities, arrays that grow and shrink, a published structural
// change midway, syncs interleaved with the writes and one consumer killed
// between commit and ack, restarted as the enrich binary (enrich sync
// --once with the database credential). Afterwards enrich sync --verify
// agrees with the server's checksum, the target equals a fresh snapshot
// loaded into a third database row for row, every entity holds its last
// enrichment, and a trigger's log shows every entity's revisions applied
// once, in order.
func TestSyncReplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	serverDSN, targetDSN, freshDSN := pgtest.Native(t), pgtest.Native(t), pgtest.Native(t)
	n := replicaN(t)
	ctx := context.Background()
	r := newReplication(t, serve.Sandbox(t, enrich.Config{DatabaseURL: serverDSN}))
	target := connectTarget(t, targetDSN)

	r.sync(ctx, target) // the DDL: the tables exist
	installRevisionLog(t, target)
	r.build()

	start := time.Now()
	third := n / 3
	r.enrichRange(0, third)
	r.sync(ctx, target) // interleaved
	r.enrichRange(third, 2*third)

	// A published structural change: a nullable property.
	added := strings.Replace(replicaSchema, `"name":{"type":"string"},`, `"name":{"type":"string"},"ticker":{"type":["string","null"]},`, 1)
	r.call("PATCH", "/api/schema/saved/"+r.schema, map[string]any{"schema": json.RawMessage(added)}, nil)
	var pub struct {
		DeltaIDs []int64 `json:"delta_ids"`
	}
	r.call("POST", "/api/schema/saved/"+r.schema+"/publish", nil, &pub)
	if len(pub.DeltaIDs) != 1 {
		t.Fatalf("the second publish shipped %v, one DDL delta expected", pub.DeltaIDs)
	}
	r.withTicker = true

	// Killed between commit and ack once, then restarted.
	killCtx, cancel := context.WithCancel(ctx)
	killed := false
	err := r.syncer(target).runWith(killCtx, func(int64) {
		if !killed {
			killed = true
			cancel()
		}
	})
	cancel()
	if !killed || err == nil {
		t.Fatalf("the consumer was not killed between commit and ack (killed %v, err %v)", killed, err)
	}
	// The restart is the command itself (what the kill left).
	out := r.command(targetDSN, "--once")
	if !strings.HasPrefix(out, "applied ") || strings.HasPrefix(out, "applied 0 ") {
		t.Fatalf("enrich sync --once: %q", out)
	}
	r.enrichRange(2*third, n)
	// A merge of two records of one entity: the fused record is the
	// entity's next revision.
	r.mergeLastTwo("c00000.example")
	r.mergeLastTwo("c00001.example")
	st := r.sync(ctx, target)
	writes := time.Since(start)
	t.Logf("N=%d enrichments, %d deltas in the feed; writes and syncs %s (%.0f enrichments/s); syncing alone %s for %d deltas (%.0f deltas/s)",
		n, st.Watermark, writes.Round(time.Millisecond), float64(n)/writes.Seconds(),
		r.syncTime.Round(time.Millisecond), r.applied, float64(r.applied)/r.syncTime.Seconds())

	// Verify (enrich sync --verify) against the server's checksum.
	asOf, diffs, err := r.syncer(target).s.Verify(ctx)
	if err != nil || len(diffs) > 0 {
		t.Fatalf("verify as of %d: %v %v", asOf, err, diffs)
	}
	if asOf != st.Watermark {
		t.Fatalf("checksum as of %d, the target at %d", asOf, st.Watermark)
	}

	if out := r.command(targetDSN, "--verify"); !strings.Contains(out, fmt.Sprintf("checksum agrees as of delta %d", st.Watermark)) {
		t.Fatalf("enrich sync --verify: %q", out)
	}
	r.compareSnapshot(ctx, target, freshDSN, st.Watermark)
	checkRevisionLog(t, target, r.revisions)
	checkLatest(t, target, r.latest)
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// compareSnapshot loads a fresh snapshot into the empty database at dsn:
// as of head, equal to the target table by table, row for row, and in
// agreement with the checksum, which sees a lost row.
func (r *replication) compareSnapshot(ctx context.Context, target *pgx.Conn, dsn string, head int64) {
	r.t.Helper()
	// A fresh snapshot in a third database equals the target.
	fresh := connectTarget(r.t, dsn)
	fs := r.syncer(fresh)
	loaded, err := fs.s.Bootstrap(ctx)
	if err != nil || !loaded {
		r.t.Fatalf("snapshot: loaded %v, %v", loaded, err)
	}
	if fs.s.Stats().Watermark != head {
		r.t.Fatalf("snapshot as of %d, the target at %d", fs.s.Stats().Watermark, head)
	}
	compareDatabases(r.t, target, fresh)
	// The snapshot agrees with the checksum too, and a lost row shows
	// (the checksum hashes keys and revisions, not values: comparing
	// values is what compareDatabases does).
	if _, diffs, err := fs.s.Verify(ctx); err != nil || len(diffs) > 0 {
		r.t.Fatalf("verify the snapshot: %v %v", err, diffs)
	}
	if _, err := fresh.Exec(ctx, `DELETE FROM company_tags WHERE ee_id = (SELECT ee_id FROM company_tags ORDER BY ee_id LIMIT 1)`); err != nil {
		r.t.Fatal(err)
	}
	if _, diffs, err := fs.s.Verify(ctx); err != nil || len(diffs) != 1 || !strings.HasPrefix(diffs[0], "company_tags:") {
		r.t.Fatalf("verify after a change: %v %v, company_tags expected", err, diffs)
	}
}

// replication is the server side: a tenant, its schema, its registration.
type replication struct {
	t          *testing.T
	cl         *api.Client
	url        string
	schema, db string
	refresh    string
	key        string // the owner's access key
	withTicker bool
	revisions  map[string]int // enrichments per identity
	latest     map[string]latest
	syncTime   time.Duration // spent in sync (claim, apply, ack)
	applied    int64
	bin        string              // the enrich binary
	records    map[string][]string // record ids per identity
}

// latest is what an identity's last enrichment sent.
type latest struct {
	name          string
	tags, offices int
}

func newReplication(t *testing.T, url string) *replication {
	t.Helper()
	return newReplicationOf(t, url, replicaSchema)
}

// newReplicationOf is newReplication on the schema contract.
func newReplicationOf(t *testing.T, url, contract string) *replication {
	t.Helper()
	r := &replication{t: t, url: url, revisions: map[string]int{}, latest: map[string]latest{}, records: map[string][]string{}}
	anon := api.New(url, nil)
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	ctx := context.Background()
	if err := anon.Do(ctx, "POST", "/api/auth/register", map[string]any{"email": "replica@example.com",
		"password": "correct horse battery", "organization": "Replica"}, &sess); err != nil {
		t.Fatal(err)
	}
	var key struct {
		Key string `json:"key"`
	}
	bearer := api.New(url, bearerToken(sess.AccessToken))
	if err := bearer.Do(ctx, "POST", "/api/auth/api-keys", map[string]any{"name": "owner", "role": "owner"}, &key); err != nil {
		t.Fatal(err)
	}
	r.key = key.Key
	r.cl = api.New(url, api.Key(key.Key))
	var sc struct {
		ID string `json:"id"`
	}
	r.call("POST", "/api/schema/saved", map[string]any{"name": "Company", "schema": json.RawMessage(contract)}, &sc)
	r.schema = sc.ID
	var created struct {
		Database struct {
			ID string `json:"id"`
		} `json:"database"`
	}
	r.call("POST", "/api/schemas/"+r.schema+"/databases", map[string]any{"name": "replica", "page_limit": 25}, &created)
	r.db = created.Database.ID
	r.call("POST", "/api/schema/saved/"+r.schema+"/publish", nil, nil)
	var cred struct {
		RefreshToken string `json:"refresh_token"`
	}
	r.call("POST", "/api/databases/"+r.db+"/credential", nil, &cred)
	if cred.RefreshToken == "" {
		t.Fatal("no refresh token")
	}
	r.refresh = cred.RefreshToken
	return r
}

type bearerToken string

func (b bearerToken) Apply(_ context.Context, _ *api.Client, req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+string(b))
	return nil
}

func (bearerToken) Refresh(context.Context, *api.Client) (bool, error) { return false, nil }

func (r *replication) call(method, path string, body, out any) {
	r.t.Helper()
	if err := r.cl.Do(context.Background(), method, path, body, out); err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// identities is how many entities the enrichments spread over: each is
// enriched about four times.
func (r *replication) identities(n int) int { return max(n/4, 2) }

// enrichRange runs enrichments i in [from, to): identity i mod k, its
// arrays longest on its first enrichment and shorter on later ones.
func (r *replication) enrichRange(from, to int) {
	r.t.Helper()
	k := r.identities(replicaN(r.t))
	for i := from; i < to; i++ {
		id := i % k
		round := i / k
		domain := fmt.Sprintf("c%05d.example", id)
		tags := []string{}
		for j := range 4 - min(round, 3) {
			tags = append(tags, fmt.Sprintf("tag-%d-%d", j, round))
		}
		offices := []map[string]any{}
		for j := range 3 - min(round, 2) + id%2 {
			offices = append(offices, map[string]any{"city": fmt.Sprintf("City %d/%d", j, round), "size": 10*j + round})
		}
		data := map[string]any{"domain": domain, "name": fmt.Sprintf("Company %d round %d", id, round),
			"employees": 100*id + round, "tags": tags, "offices": offices}
		if r.withTicker && id%2 == 0 {
			data["ticker"] = fmt.Sprintf("T%d", id)
		}
		var res struct {
			RecordID string `json:"record_id"`
		}
		r.call("POST", "/api/single/enrich/sync", map[string]any{"entity_data": data, "schema_id": r.schema,
			"models": []string{"sandbox::echo"}}, &res)
		r.records[domain] = append(r.records[domain], res.RecordID)
		r.revisions[domain]++
		r.latest[domain] = latest{name: data["name"].(string), tags: len(tags), offices: len(offices)}
	}
}

// build builds the enrich binary.
func (r *replication) build() {
	r.t.Helper()
	r.bin = filepath.Join(r.t.TempDir(), "enrich")
	if out, err := exec.Command("go", "build", "-o", r.bin, "github.com/entityenrich/enrich/cmd/enrich").CombinedOutput(); err != nil {
		r.t.Fatalf("build enrich: %v\n%s", err, out)
	}
}

// command runs the enrich binary's sync on the target with the database
// credential, as a person would; it returns the standard output.
func (r *replication) command(targetDSN string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, append([]string{"sync", "--database", r.db, "--target", targetDSN}, args...)...)
	cmd.Env = []string{"HOME=" + r.t.TempDir(), "ENRICH_URL=" + r.url, "ENRICH_SYNC_CREDENTIAL=" + r.refresh}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("enrich sync %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// mergeLastTwo fuses an identity's last two records (POST
// /api/fusion/merge): a new revision of the entity, its arrays the union.
func (r *replication) mergeLastTwo(domain string) {
	r.t.Helper()
	ids := r.records[domain]
	var res struct {
		MergedResult struct {
			Name    string           `json:"name"`
			Tags    []string         `json:"tags"`
			Offices []map[string]any `json:"offices"`
		} `json:"merged_result"`
	}
	r.call("POST", "/api/fusion/merge", map[string]any{"result_ids": ids[len(ids)-2:]}, &res)
	m := res.MergedResult
	r.t.Logf("merged %s: %+v", domain, m)
	r.revisions[domain]++
	r.latest[domain] = latest{name: m.Name, tags: len(m.Tags), offices: len(m.Offices)}
}

// consumer is one run of the engine on a target.
type consumer struct {
	s *syncer.Syncer
}

func (r *replication) syncer(target *pgx.Conn) consumer {
	feed := &syncer.HTTPFeed{Client: api.New(r.url, &syncer.Credential{RefreshToken: r.refresh}), DatabaseID: r.db, LeaseS: 10}
	return consumer{s: &syncer.Syncer{Feed: feed, Target: target, DatabaseID: r.db,
		Notice: func(format string, a ...any) { r.t.Errorf("notice: "+format, a...) }}}
}

func (c consumer) runWith(ctx context.Context, afterCommit func(int64)) error {
	c.s.AfterCommit = afterCommit
	return c.s.Run(ctx, syncer.Options{})
}

// sync runs the engine once to the head (--once).
func (r *replication) sync(ctx context.Context, target *pgx.Conn) syncer.Stats {
	r.t.Helper()
	c := r.syncer(target)
	began := time.Now()
	defer func() { r.syncTime += time.Since(began); r.applied += c.s.Stats().Applied }()
	if err := c.runWith(ctx, nil); err != nil {
		r.t.Fatalf("sync: %v", err)
	}
	if c.s.Stats().Refused > 0 {
		r.t.Fatalf("%d windows refused", c.s.Stats().Refused)
	}
	return c.s.Stats()
}

func connectTarget(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// installRevisionLog records every write to the entity table's revision.
func installRevisionLog(t *testing.T, c *pgx.Conn) {
	t.Helper()
	_, err := c.Exec(context.Background(), `
CREATE TABLE revision_log (seq bigserial PRIMARY KEY, op text NOT NULL, domain text, revision bigint);
CREATE FUNCTION log_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO revision_log (op, domain, revision) VALUES (TG_OP, to_jsonb(OLD)->>'domain', (to_jsonb(OLD)->>'ee_revision')::bigint);
    RETURN OLD;
  END IF;
  INSERT INTO revision_log (op, domain, revision) VALUES (TG_OP, to_jsonb(NEW)->>'domain', (to_jsonb(NEW)->>'ee_revision')::bigint);
  RETURN NEW;
END $$;
CREATE TRIGGER log_revision AFTER INSERT OR UPDATE OR DELETE ON company FOR EACH ROW EXECUTE FUNCTION log_revision();`)
	if err != nil {
		t.Fatalf("install the revision log: %v", err)
	}
}

// checkRevisionLog: each entity's writes carry revisions 1, 2, ... its
// enrichment count, each once, in order.
func checkRevisionLog(t *testing.T, c *pgx.Conn, want map[string]int) {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT op, domain, revision FROM revision_log ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for rows.Next() {
		var op, domain string
		var rev int64
		if err := rows.Scan(&op, &domain, &rev); err != nil {
			t.Fatal(err)
		}
		if op == "DELETE" {
			t.Errorf("entity %s deleted at revision %d", domain, rev)
		}
		got[domain] = append(got[domain], rev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d entities written, %d enriched", len(got), len(want))
	}
	for domain, k := range want {
		revs := got[domain]
		ok := len(revs) == k
		for i := 0; ok && i < k; i++ {
			ok = revs[i] == int64(i+1)
		}
		if !ok {
			t.Errorf("entity %s: revisions %v applied, 1..%d expected", domain, revs, k)
		}
	}
}

// compareDatabases compares every table of the public schema (but the
// test's own revision log), its columns and its rows (every column).
func compareDatabases(t *testing.T, a, b *pgx.Conn) {
	t.Helper()
	ta, tb := tables(t, a), tables(t, b)
	if strings.Join(ta, ",") != strings.Join(tb, ",") {
		t.Fatalf("tables differ: target %v, snapshot %v", ta, tb)
	}
	rows := 0
	for _, name := range ta {
		if name == "revision_log" {
			continue
		}
		ca, cb := columns(t, a, name), columns(t, b, name)
		if ca != cb {
			t.Errorf("%s: columns differ:\n target   %s\n snapshot %s", name, ca, cb)
			continue
		}
		ra, rb := tableRows(t, a, name), tableRows(t, b, name)
		if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
			t.Errorf("%s: rows differ:\n target   %v\n snapshot %v", name, head(ra), head(rb))
		}
		rows += len(ra)
	}
	t.Logf("%d tables, %d rows equal", len(ta)-1, rows)
}

func head(s []string) []string { return s[:min(len(s), 5)] }

func tables(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	var out []string
	err := c.QueryRow(context.Background(), `SELECT coalesce(array_agg(table_name::text ORDER BY table_name), '{}')
		FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'revision_log'`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, "revision_log")
}

func columns(t *testing.T, c *pgx.Conn, table string) string {
	t.Helper()
	var out string
	err := c.QueryRow(context.Background(), `SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, ''), ', ' ORDER BY column_name)
		FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`, table).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tableRows is every row as JSON (every column), sorted.
func tableRows(t *testing.T, c *pgx.Conn, table string) []string {
	t.Helper()
	var out []string
	row := "to_jsonb(x)"
	if table == dbsync.StateTable {
		row = "to_jsonb(x) - 'updated_at'" // when it was written, not what
	}
	err := c.QueryRow(context.Background(), `SELECT coalesce(array_agg((`+row+`)::text), '{}') FROM `+pgx.Identifier{table}.Sanitize()+` x`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// checkLatest: every entity holds its last enrichment's name and array
// lengths (arrays that shrank lost their extra rows).
func checkLatest(t *testing.T, c *pgx.Conn, want map[string]latest) {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT e.domain, e.name,
		(SELECT count(*) FROM company_tags g WHERE g.ee_parent_id = e.ee_id),
		(SELECT count(*) FROM company_offices o WHERE o.ee_parent_id = e.ee_id)
		FROM company e`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]latest{}
	for rows.Next() {
		var domain string
		var l latest
		if err := rows.Scan(&domain, &l.name, &l.tags, &l.offices); err != nil {
			t.Fatal(err)
		}
		got[domain] = l
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d entities in the target, %d enriched", len(got), len(want))
	}
	for domain, w := range want {
		if got[domain] != w {
			t.Errorf("entity %s: %+v in the target, %+v sent last", domain, got[domain], w)
		}
	}
}
