package relmaptest

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/test/pgtest"
)

// hostile is a value that would break naive quoting under either setting
// of standard_conforming_strings.
const hostile = `O'Brien \'); DROP TABLE company; -- \\ "東京" 🚀`

func TestMain(m *testing.M) { pgtest.Main(m) }

// backends are the servers a consumer's database may be: the native
// PostgreSQL, and PGlite where no PostgreSQL is installed.
var backends = []struct {
	name string
	dsn  func(testing.TB) string
}{{"native", pgtest.Native}, {"pglite", pgtest.PGlite}}

func TestApplyToPostgres(t *testing.T) {
	contract, err := os.ReadFile("../../domain/relmap/testdata/company.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		for _, pk := range []string{relmap.Surrogate, relmap.Natural} {
			t.Run(b.name+"/"+pk, func(t *testing.T) { applyToPostgres(t, b.dsn, contract, pk) })
		}
	}
}

func applyToPostgres(t *testing.T, dsn func(testing.TB) string, contract []byte, pk string) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn(t))
	is.NoErr(err)
	defer conn.Close(context.Background())
	m, err := relmap.Project(contract, relmap.Options{PKStrategy: pk, IndexScalars: relmap.IndexAll})
	is.NoErr(err)
	script := strings.Join(relmap.DDL(m), ";\n")
	run(t, conn, script)
	run(t, conn, script) // idempotent

	st := state{Name: "Acme", Country: "IE", City: "Cork",
		People: []person{{"Ann", []string{"ann@acme.ie", "a@x.ie"}}, {"Bob", nil}, {"Cid", []string{"c@x.ie"}}},
		Tags:   []string{"a", "b", "c"}}
	r1 := upsert(t, m, st, 1)
	st.City, st.People, st.Tags = hostile, []person{{hostile, []string{"ann@acme.ie"}}}, []string{hostile}
	r2 := upsert(t, m, st, 2)

	run(t, conn, r1)
	check(t, conn, m, 1, 3, 3, 3)
	run(t, conn, r2) // the arrays shrink
	check(t, conn, m, 2, 1, 1, 1)
	run(t, conn, r1) // an older revision replayed: no change
	check(t, conn, m, 2, 1, 1, 1)
	is.Equal(scalar(t, conn, `SELECT hq_city FROM company`), hostile)
	run(t, conn, r2) // the same revision replayed: same rows
	check(t, conn, m, 2, 1, 1, 1)
	is.Equal(scalar(t, conn, `SELECT hq_city FROM company`), hostile)
	is.Equal(scalar(t, conn, `SELECT value FROM company_tags`), hostile)
	is.Equal(scalar(t, conn, `SELECT string_agg(p.`+personName(m)+`, ',') FROM company_people p`), hostile)

	// The same literals read alike with standard_conforming_strings off.
	run(t, conn, "SET standard_conforming_strings = off")
	st.City = `back\slash 'quoted' \\`
	run(t, conn, upsert(t, m, st, 3))
	is.Equal(scalar(t, conn, `SELECT hq_city FROM company`), st.City)
	run(t, conn, "SET standard_conforming_strings = on")

	// A published change: new column and array, applied additively.
	next := extend(t, contract, m)
	changes, err := relmap.Diff(m, next)
	is.NoErr(err)
	is.True(!relmap.NeedsConfirm(changes))
	run(t, conn, strings.Join(relmap.Additive(changes), ";\n"))
	w, err := relmap.Upsert(next, json.RawMessage(`{"name": "Acme", "country": "IE", "slogan": "new", "awards": ["x", "y"]}`), 4)
	is.NoErr(err)
	run(t, conn, w.SQL())
	is.Equal(scalar(t, conn, `SELECT slogan FROM company`), "new")
	check(t, conn, next, 4, 0, 0, 0)

	k, err := relmap.KeyOf(m, map[string]any{"name": "Acme", "country": "IE"})
	is.NoErr(err)
	old, err := relmap.Delete(m, k, 3)
	is.NoErr(err)
	run(t, conn, old.SQL()) // a delete older than the row: no change
	is.Equal(scalar(t, conn, `SELECT count(*)::text FROM company`), "1")
	del, err := relmap.Delete(m, k, 5)
	is.NoErr(err)
	run(t, conn, del.SQL())
	run(t, conn, del.SQL())
	for _, tb := range next.Tables {
		is.Equal(scalar(t, conn, `SELECT count(*)::text FROM `+relmap.QuoteIdent(tb.Name)), "0") // children cascade
	}
}

type person struct {
	Name   string   `json:"name"`
	Emails []string `json:"emails,omitempty"`
}

type state struct {
	Name    string   `json:"name"`
	Country string   `json:"country"`
	City    string   `json:"-"`
	People  []person `json:"people"`
	Tags    []string `json:"tags"`
}

func upsert(t *testing.T, m relmap.Map, st state, rev int64) string {
	t.Helper()
	type withHQ struct {
		state
		HQ map[string]any `json:"hq"`
	}
	raw, err := json.Marshal(withHQ{st, map[string]any{"city": st.City, "geo": map[string]any{"lat": 51.9}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := relmap.Upsert(m, raw, rev)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	return w.SQL()
}

// run applies a script in one transaction with the simple protocol, as a
// consumer does.
func run(t *testing.T, conn *pgx.Conn, script string) {
	t.Helper()
	ctx := context.Background()
	if _, err := conn.PgConn().Exec(ctx, "BEGIN;\n"+script+";\nCOMMIT").ReadAll(); err != nil {
		_, _ = conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll()
		t.Fatalf("apply: %v\n%s", err, script)
	}
}

func scalar(t *testing.T, conn *pgx.Conn, q string) string {
	t.Helper()
	// Through the connection's own Exec, without arguments: pgx refuses
	// its simple protocol (PGlite's DSN asks for it) while
	// standard_conforming_strings is off, and the test turns it off.
	res, err := conn.PgConn().Exec(context.Background(), q).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		t.Fatalf("%s: want one value", q)
	}
	return string(res[0].Rows[0][0])
}

// check asserts the entity's revision and the child row counts.
func check(t *testing.T, conn *pgx.Conn, m relmap.Map, rev, people, emails, tags int) {
	t.Helper()
	is := is.NewRelaxed(t)
	count := func(table string) string {
		return scalar(t, conn, `SELECT count(*)::text FROM `+relmap.QuoteIdent(table))
	}
	is.Equal(count(m.Root().Name), "1")
	is.Equal(scalar(t, conn, `SELECT ee_revision::text FROM company`), strconv.Itoa(rev))
	is.Equal(count("company_people"), strconv.Itoa(people))
	is.Equal(count("company_people_emails"), strconv.Itoa(emails))
	is.Equal(count("company_tags"), strconv.Itoa(tags))
}

// extend publishes the contract with a new property and a new array.
func extend(t *testing.T, contract []byte, prev relmap.Map) relmap.Map {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(contract, &doc); err != nil {
		t.Fatal(err)
	}
	props := doc["root"].(map[string]any)["properties"].(map[string]any)
	props["slogan"] = map[string]any{"type": "string"}
	props["awards"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	raw, _ := json.Marshal(doc)
	m, err := relmap.Project(raw, relmap.Options{PKStrategy: prev.PKStrategy, IndexScalars: prev.IndexScalars, Previous: &prev})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// personName is the column of a person's name (renamed under natural,
// where the inherited key column "name" takes the plain name).
func personName(m relmap.Map) string {
	for _, c := range m.Table("company_people").Columns {
		if c.Source == "name" {
			return relmap.QuoteIdent(c.Name)
		}
	}
	return `"name"`
}
