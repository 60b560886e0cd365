package e2e_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

// registration stores a registration of org linked to a fresh schema id
// (shipped with contract.TestMap) through the server's own store.
func (s *service) registration(org string) *dbsync.Database {
	s.t.Helper()
	d := contract.TestDatabase(s.t, org, "schema-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := s.srv.Stores.Databases.CreateDatabase(context.Background(), d); err != nil {
		s.t.Fatal(err)
	}
	return d
}

type credentialCreated struct {
	Credential struct {
		ID         string  `json:"id"`
		Status     string  `json:"status"`
		DatabaseID string  `json:"schema_database_id"`
		LastSeenAt *string `json:"last_seen_at"`
		LastSeenIP *string `json:"last_seen_ip"`
	} `json:"credential"`
	RefreshToken string `json:"refresh_token"`
	ServerURL    string `json:"server_url"`
}

type accessToken struct {
	AccessToken  string `json:"access_token"`
	ExpiresIn    int    `json:"expires_in"`
	DatabaseID   string `json:"database_id"`
	DatabaseName string `json:"database_name"`
	Dialect      string `json:"dialect"`
	Code         string `json:"code"`
}

func (s *service) exchange(refresh string) (int, accessToken) {
	s.t.Helper()
	var out accessToken
	st := s.call("POST", "/api/database-sync/exchange?refresh_token="+refresh, "", nil, &out)
	return st, out
}

// TestDatabaseCredential: a credential's access token reads its own
// registration's feed side (snapshot, checksum) and nothing else; a new
// credential or a revocation stops the old tokens at once; bad tokens are
// 401 with invalid_refresh_token.
func TestDatabaseCredential(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	home, other := s.register("cred-home@example.com"), s.register("cred-other@example.com")
	d1, d2, d3 := s.registration(home.orgID), s.registration(home.orgID), s.registration(other.orgID)
	editor, operator := s.newKey(home.token, "editor"), s.newKey(home.token, "operator")

	is.Equal(s.call("POST", "/api/databases/"+d1.ID+"/credential", operator, nil, nil), 403) // editor
	is.Equal(s.call("POST", "/api/databases/"+d3.ID+"/credential", editor, nil, nil), 404)   // another organization's
	var state struct{ Credential *json.RawMessage }
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/credential", editor, nil, &state), 200)
	is.True(state.Credential == nil) // none yet: null

	var c1 credentialCreated
	is.Equal(s.call("POST", "/api/databases/"+d1.ID+"/credential", editor, nil, &c1), 201)
	is.True(strings.HasPrefix(c1.RefreshToken, dbsync.RefreshTokenPrefix))
	is.Equal(c1.ServerURL, s.url)
	is.Equal(c1.Credential.Status, "active")
	is.Equal(c1.Credential.DatabaseID, d1.ID)

	// The exchange: query or body; wrong tokens are 401.
	st, tok := s.exchange(c1.RefreshToken)
	is.Equal(st, 200)
	is.True(strings.HasPrefix(tok.AccessToken, dbsync.AccessTokenPrefix))
	is.Equal(tok.DatabaseID, d1.ID)
	is.Equal(tok.DatabaseName, d1.Name)
	is.Equal(tok.Dialect, "postgres")
	is.True(tok.ExpiresIn > 0)
	var viaBody accessToken
	is.Equal(s.call("POST", "/api/database-sync/exchange", "", obj{"refresh_token": c1.RefreshToken}, &viaBody), 200)
	for _, bad := range []string{"eesr_nope", "rt_nope", c1.RefreshToken + "x"} {
		st, out := s.exchange(bad)
		is.Equal(st, 401)
		is.Equal(out.Code, "invalid_refresh_token")
	}
	is.Equal(s.call("POST", "/api/database-sync/exchange", "", nil, nil), 400)

	// The token reads its registration's snapshot and checksum, nothing
	// else, and no other registration.
	at := tok.AccessToken
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", at, nil, nil), 200)
	resp := s.get("/api/databases/"+d1.ID+"/snapshot", at)
	is.Equal(resp.StatusCode, 200)
	resp.Body.Close()
	is.Equal(s.call("GET", "/api/databases/"+d2.ID+"/checksum", at, nil, nil), 403)
	is.Equal(s.call("GET", "/api/databases/"+d3.ID+"/snapshot", at, nil, nil), 403)
	for _, r := range [][2]string{{"GET", "/api/schema/saved"}, {"GET", "/api/auth/me"}, {"GET", "/api/records"},
		{"GET", "/api/databases/" + d1.ID + "/credential"}, {"POST", "/api/databases/" + d1.ID + "/credential"},
		{"DELETE", "/api/databases/" + d1.ID + "/credential"}} {
		is.Equal(s.call(r[0], r[1], at, nil, nil), 403) // not a feed action
	}
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", at+"x", nil, nil), 401)
	// A token past its expiry: signed as the server signs them, an hour ago.
	past := crypto.NewTokens([]byte(strings.Repeat("s", 40)), time.Minute, func() time.Time { return time.Now().Add(-time.Hour) }).WithType("database")
	old, err := past.Issue(ports.TokenClaims{ID: "old", UserID: c1.Credential.ID, OrgID: home.orgID, DatabaseID: d1.ID})
	is.NoErr(err)
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", dbsync.AccessTokenPrefix+old, nil, nil), 401)

	// The credential shows its use.
	var seen credentialCreated
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/credential", editor, nil, &seen), 200)
	is.True(seen.Credential.LastSeenAt != nil)
	is.Equal(*seen.Credential.LastSeenIP, "127.0.0.1")

	// A new credential revokes the old one and stops its tokens at once.
	var c2 credentialCreated
	is.Equal(s.call("POST", "/api/databases/"+d1.ID+"/credential", editor, nil, &c2), 201)
	st, _ = s.exchange(c1.RefreshToken)
	is.Equal(st, 401)
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", at, nil, nil), 401)
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", viaBody.AccessToken, nil, nil), 401)
	st, tok2 := s.exchange(c2.RefreshToken)
	is.Equal(st, 200)
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", tok2.AccessToken, nil, nil), 200)

	// Revocation: the owner's; at once; idempotent; 404 elsewhere.
	is.Equal(s.call("DELETE", "/api/databases/"+d1.ID+"/credential", editor, nil, nil), 403)
	is.Equal(s.call("DELETE", "/api/databases/"+d3.ID+"/credential", home.key, nil, nil), 404)
	is.Equal(s.call("DELETE", "/api/databases/"+d1.ID+"/credential", home.key, nil, nil), 204)
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/checksum", tok2.AccessToken, nil, nil), 401)
	st, _ = s.exchange(c2.RefreshToken)
	is.Equal(st, 401)
	is.Equal(s.call("DELETE", "/api/databases/"+d1.ID+"/credential", home.key, nil, nil), 204)
	var revoked credentialCreated
	is.Equal(s.call("GET", "/api/databases/"+d1.ID+"/credential", editor, nil, &revoked), 200)
	is.Equal(revoked.Credential.Status, "revoked")
}

// get makes a GET and returns the response as it is (the caller closes it).
func (s *service) get(path, cred string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// seedEntities writes entities and moves the feed's head, as the entity
// layer would, on the server's PostgreSQL.
func seedEntities(t *testing.T, dsn, databaseID string, head int64, es []*dbsync.Entity) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE delta_feeds SET next_id = $1 WHERE database_id = $2`, head+1, databaseID); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		keys, _ := json.Marshal(e.Keys)
		if _, err := db.Exec(`INSERT INTO entities (id, org_id, schema_id, entity_type, key_identity, keys, payload, revision,
			updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())`, e.ID, e.OrgID, e.SchemaID, e.EntityType, e.KeyIdentity,
			string(keys), string(e.Payload), e.Revision); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotLoadsAndChecksumAgrees: the snapshot loads into an empty
// PostgreSQL with psql (or, without psql, one Exec per unit of the jsonl
// form), names its delta id in the header and on its first line, sets the
// watermark, and the checksum the consumer computes over the loaded
// tables equals the server's.
func TestSnapshotLoadsAndChecksumAgrees(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	s := start(t, testConfig(dsn))
	home := s.register("snap@example.com")
	d := s.registration(home.orgID)
	schema := d.Links[0].SchemaID
	es := []*dbsync.Entity{
		contract.TestEntity(home.orgID, schema, "Acme", 3, "a", "b"),
		contract.TestEntity(home.orgID, schema, "O'Brien; DROP TABLE x; --", 1, "semi;colon\n", "back\\slash"),
		contract.TestEntity(home.orgID, schema, "Empty", 2),
	}
	seedEntities(t, dsn, d.ID, 42, es)

	resp := s.get("/api/databases/"+d.ID+"/snapshot", home.key)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.NoErr(err)
	is.Equal(resp.StatusCode, 200)
	is.Equal(resp.Header.Get("X-EE-Snapshot-Delta-Id"), "42")
	is.Equal(resp.Header.Get("Content-Type"), "application/sql")
	is.True(strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment"))
	first, _, _ := strings.Cut(string(body), "\n")
	n, ok := dbsync.SnapshotDeltaID(first)
	is.True(ok)
	is.Equal(n, int64(42))
	is.True(strings.HasSuffix(string(body), "-- end of snapshot\n"))

	target := pgtest.Native(t)
	if psql, err := exec.LookPath("psql"); err == nil {
		f := t.TempDir() + "/snapshot.sql"
		is.NoErr(os.WriteFile(f, body, 0o600))
		out, err := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", target, "-f", f).CombinedOutput()
		if err != nil {
			t.Fatalf("psql: %v\n%s", err, out)
		}
	} else {
		loadJSONL(t, s, home.key, d.ID, target)
	}
	db, err := sql.Open("pgx", target)
	is.NoErr(err)
	defer db.Close()
	var wm int64
	is.NoErr(db.QueryRow(dbsync.ReadStateSQL(), d.ID).Scan(&wm))
	is.Equal(wm, int64(42))

	var sum struct {
		AsOf      int64             `json:"as_of_delta_id"`
		RowCounts map[string]int64  `json:"row_counts"`
		Tables    map[string]string `json:"tables"`
	}
	is.Equal(s.call("GET", "/api/databases/"+d.ID+"/checksum", home.key, nil, &sum), 200)
	is.Equal(sum.AsOf, int64(42))
	counts, hashes := replicaChecksum(t, db, *d.Links[0].Shipped)
	is.Equal(sum.RowCounts, counts)
	is.Equal(sum.Tables, hashes)
	is.Equal(counts[d.Links[0].Shipped.Root().Name], int64(3))

	// The jsonl form carries the same units.
	target2 := pgtest.Native(t)
	loadJSONL(t, s, home.key, d.ID, target2)
	db2, err := sql.Open("pgx", target2)
	is.NoErr(err)
	defer db2.Close()
	counts2, hashes2 := replicaChecksum(t, db2, *d.Links[0].Shipped)
	is.Equal(counts2, counts)
	is.Equal(hashes2, hashes)
}

// loadJSONL loads the jsonl snapshot into target, one Exec per unit, in one
// transaction (what enrich sync --snapshot does).
func loadJSONL(t *testing.T, s *service, cred, databaseID, target string) {
	t.Helper()
	resp := s.get("/api/databases/"+databaseID+"/snapshot?format=jsonl", cred)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("snapshot: %d", resp.StatusCode)
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	db, err := sql.Open("pgx", target+sep+"default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	ended := false
	for sc.Scan() {
		var u struct {
			SQL string `json:"sql"`
			End bool   `json:"end"`
		}
		if err := json.Unmarshal(sc.Bytes(), &u); err != nil {
			t.Fatal(err)
		}
		ended = ended || u.End
		if u.SQL != "" {
			if _, err := tx.Exec(u.SQL); err != nil {
				t.Fatalf("%v\n%s", err, u.SQL)
			}
		}
	}
	if !ended {
		t.Fatal("no end line")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// replicaChecksum computes a replica's checksum as a consumer does
// (dbsync.ChecksumSQL under dbsync.ChecksumSettings).
func replicaChecksum(t *testing.T, db *sql.DB, maps ...relmap.Map) (map[string]int64, map[string]string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range dbsync.ChecksumSettings {
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	counts, hashes := map[string]int64{}, map[string]string{}
	for _, m := range maps {
		for _, tb := range m.Tables {
			var n int64
			var h string
			if err := tx.QueryRow(dbsync.ChecksumSQL(tb)).Scan(&n, &h); err != nil {
				t.Fatalf("%s: %v", tb.Name, err)
			}
			counts[tb.Name], hashes[tb.Name] = n, h
		}
	}
	return counts, hashes
}
