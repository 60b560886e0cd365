package bench_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/test/pgtest"
)

// keyedDoc is a schema the entity layer can key (database_key).
const keyedDoc = `{"type":"object","title":"company","properties":{
  "domain":{"type":"string","database_key":true},"name":{"type":"string"},"industry":{"type":"string"},
  "offices":{"type":"array","items":{"type":"object","properties":{"city":{"type":"string"}}}}}}`

// BenchmarkLinkedEnrichment (PostgreSQL) measures what the entity layer
// adds to an enrichment at one client: the same single-model enrichment
// on an unlinked schema and on a linked, published one (its entity row,
// revision and one data delta written with the record), alternated in one
// loop. Under an "rtt=" sub-benchmark the service reaches PostgreSQL
// through a loopback proxy that delays every answer by that time, so the
// difference divided by it counts the round trips the linked enrichment
// adds. Its figures are in docs/performance.md.
func BenchmarkLinkedEnrichment(b *testing.B) {
	for _, rtt := range []time.Duration{0, 2 * time.Millisecond} {
		name := "direct"
		if rtt > 0 {
			name = "rtt=" + rtt.String()
		}
		b.Run(name, func(b *testing.B) {
			dsn := pgtest.Native(b)
			if rtt > 0 {
				dsn = delayed(b, dsn, rtt)
			}
			benchLinked(b, dsn, rtt)
		})
	}
}

func benchLinked(b *testing.B, dsn string, rtt time.Duration) {
	ctx := context.Background()
	cfg := enrich.Config{DatabaseURL: dsn, Sandbox: true, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SchemaCacheTTL: time.Minute}
	e, err := enrich.NewEmbedded(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	sess, err := e.Access.Register(ctx, "linked@example.com", "benchmark password", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	newSchema := func(name string) string {
		sc, err := e.Schemas.Create(ctx, p, app.NewSchemaInput{Name: name, Schema: json.RawMessage(keyedDoc)})
		if err != nil {
			b.Fatal(err)
		}
		return sc.ID
	}
	plain, linked := newSchema("Plain"), newSchema("Linked")
	wh := "wh"
	if _, err := e.Databases.Create(ctx, p, linked, dbsync.Fields{Name: &wh}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := e.Schemas.Publish(ctx, p, linked, app.PublishInput{}); err != nil {
		b.Fatal(err)
	}
	entity := json.RawMessage(`{"domain":"acme.test","name":"Acme","industry":"Anvils","offices":[{"city":"Paris"},{"city":"Oslo"}]}`)
	run := func(schemaID string) time.Duration {
		t0 := time.Now()
		j, err := e.Enrichment.Start(ctx, p, app.EnrichRequest{EntityData: entity, SchemaID: schemaID, Models: []string{"sandbox::echo"}})
		if err != nil {
			b.Fatal(err)
		}
		var after int64
		saved := false
		for done := false; !done; {
			evs, err := e.Jobs.Events(ctx, j.ID, after)
			if err != nil {
				b.Fatal(err)
			}
			for _, ev := range evs {
				after = ev.Seq
				saved = saved || ev.Type == "database_saved"
				done = done || ev.Type.Terminal()
				if ev.Type.Terminal() && ev.Type != "completed" {
					b.Fatalf("job ended with %s: %+v", ev.Type, ev.Payload)
				}
			}
		}
		if (schemaID == linked) != saved {
			b.Fatalf("schema %s: database_saved %v", schemaID, saved)
		}
		return time.Since(t0)
	}
	for i := 0; i < 10; i++ { // warm up
		run(plain)
		run(linked)
	}
	var unl, lnk []time.Duration
	var sentUnl, sentLnk int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n0 := sent.Load()
		unl = append(unl, run(plain))
		n1 := sent.Load()
		lnk = append(lnk, run(linked))
		sentUnl, sentLnk = sentUnl+n1-n0, sentLnk+sent.Load()-n1
	}
	b.StopTimer()
	u, l := median(unl), median(lnk)
	b.ReportMetric(float64(u.Microseconds()), "unlinked-p50-µs/job")
	b.ReportMetric(float64(l.Microseconds()), "linked-p50-µs/job")
	b.ReportMetric(float64((l - u).Microseconds()), "added-p50-µs/job")
	if rtt > 0 {
		b.ReportMetric(float64(l-u)/float64(rtt), "added-round-trips")
		b.ReportMetric(float64(sentUnl)/float64(b.N), "unlinked-sends/job")
		b.ReportMetric(float64(sentLnk)/float64(b.N), "linked-sends/job")
	}
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// delayed starts a loopback proxy to dsn's server whose answers arrive d
// later than the server sent them (a round trip's latency; chunks of one
// pipelined answer are not delayed one after the other) and returns dsn
// through it.
func delayed(b *testing.B, dsn string, d time.Duration) string {
	u, err := url.Parse(dsn)
	if err != nil {
		b.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			go lag(c, s, 0, &sent)
			go lag(s, c, d, nil)
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

// sent counts the chunks clients sent through delayed proxies: about one
// per round trip.
var sent atomic.Int64

// lag copies from to to, each chunk d after it was read, counting the
// chunks in n (when not nil).
func lag(from, to net.Conn, d time.Duration, n *atomic.Int64) {
	type chunk struct {
		at   time.Time
		data []byte
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 64<<10)
			k, err := from.Read(buf)
			if k > 0 {
				if n != nil {
					n.Add(1)
				}
				q <- chunk{time.Now(), buf[:k]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at.Add(d)))
		if _, err := to.Write(c.data); err != nil {
			break
		}
	}
	_ = to.Close()
	_ = from.Close()
}
