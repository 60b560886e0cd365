package e2e_test

import (
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestConceptMergeBesideLinkedEnds: on PostgreSQL, concept merges run
// while enrichments of the same schema end, and the schema feeds two
// registrations, so both sides append to two feeds: the merges' delete
// deltas and upserts, the ends' upserts. Every writer takes the feeds in
// registration id order, so every call answers 200 and the database
// counts no deadlock (a deadlock would be retried by the merge's unit of
// work, and so hidden from its answer, but not from pg_stat_database).
func TestConceptMergeBesideLinkedEnds(t *testing.T) {
	is := is.New(t)
	dsn := pgtestNative(t)
	s := start(t, testConfig(dsn))
	key := s.register("concepts-merge-race@example.com").key
	sc := s.createSchema(key, "Linked company", conceptSchema)
	for _, name := range []string{"wh-a", "wh-b"} {
		is.Equal(s.call("POST", "/api/schemas/"+sc+"/databases", key, obj{"name": name, "on_gaps": "reject_entity"}, nil), 201)
	}
	is.Equal(s.call("POST", "/api/schema/saved/"+sc+"/publish", key, nil, nil), 200)
	enrich := func(name string) (string, int) {
		var out conceptEnrichAnswer
		st := s.call("POST", "/api/single/enrich/sync", key, obj{"entity_data": obj{"name": name}, "schema_id": sc,
			"models": []string{"sandbox::echo"}}, &out)
		id, _ := out.Result["id"].(string)
		return id, st
	}
	// Names far apart, so that no two resolve to one concept.
	winnerNames := []string{"Acme Rockets", "Globex Shipping", "Initech Software", "Umbrella Pharma"}
	loserNames := []string{"Zephyr Quantum Labs", "Nimbus Textile Works", "Quasar Brewing Guild", "Falcon Orchard Farms"}
	fresh := []string{"Hooli Search", "Vandelay Imports", "Soylent Foods", "Tyrell Robotics", "Cyberdyne Systems", "Wonka Confections"}
	const pairs = 4
	var winners, losers []string
	seen := map[string]bool{}
	for i := range pairs {
		w, st := enrich(winnerNames[i])
		is.Equal(st, 200)
		l, st := enrich(loserNames[i])
		is.Equal(st, 200)
		is.True(!seen[w] && !seen[l] && w != l)
		seen[w], seen[l] = true, true
		winners, losers = append(winners, w), append(losers, l)
	}
	before := deadlocks(t, dsn)

	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range pairs {
		wg.Go(func() {
			if st := s.call("POST", "/api/semantic-concepts/merge", key, obj{"winner_id": winners[i], "loser_id": losers[i]}, nil); st != 200 {
				errs <- fmt.Sprintf("merge %d: %d", i, st)
			}
		})
	}
	for g := range 2 {
		wg.Go(func() {
			for j := range 6 {
				// New entities, and the winners' texts again (their
				// concepts' rows, their entities).
				name := fresh[g*3+j/2]
				if j%2 == 1 {
					name = winnerNames[(g+j)%pairs]
				}
				if _, st := enrich(name); st != 200 {
					errs <- fmt.Sprintf("enrich %q: %d", name, st)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	r := entityRun{t: t, s: s, key: key, schema: sc}
	is.Equal(r.entities("").Total, pairs+len(fresh)) // the winners' and the fresh ones
	is.Equal(deadlocks(t, dsn), before)
}

// pgtestNative is the native PostgreSQL backend's database.
func pgtestNative(t *testing.T) string { return backends[1].dsn(t) }

// deadlocks is the database's deadlock count as the statistics have it,
// once they have settled (a backend reports its counts within a second
// of going idle).
func deadlocks(t *testing.T, dsn string) int64 {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	time.Sleep(1500 * time.Millisecond)
	var n int64
	if err := db.QueryRow("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
