// Package bench measures the service's own cost of one enrichment, with the
// model's time subtracted: `make bench`.
package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/entityenrich/enrich"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// timedLLM records how long each model call takes, so the model's time can
// be subtracted from the job's.
type timedLLM struct {
	inner ports.LLM
	mu    sync.Mutex
	calls map[string][]time.Duration // by expertise (SchemaName)
}

func (l *timedLLM) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	t0 := time.Now()
	resp, err := l.inner.Generate(ctx, req)
	d := time.Since(t0)
	l.mu.Lock()
	l.calls[req.SchemaName] = append(l.calls[req.SchemaName], d)
	l.mu.Unlock()
	return resp, err
}

// take returns the critical path of the calls made since the last take (the
// calls run in parallel, so the longest one) and how many there were.
func (l *timedLLM) take() (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	n := 0
	for _, ds := range l.calls {
		for _, d := range ds {
			n++
			longest = max(longest, d)
		}
	}
	l.calls = map[string][]time.Duration{}
	return longest, n
}

const schemaDoc = `{
  "type": "object",
  "x-expertiseDomains": {"finance": {"name": "Finance"}},
  "properties": {
    "name": {"type": "string"}, "industry": {"type": "string"}, "founded": {"type": "integer"},
    "revenue": {"type": "number", "expertise": "finance"}, "ticker": {"type": "string", "expertise": "finance"},
    "headquarters": {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}}}
  }
}`

func BenchmarkEnrichment(b *testing.B) {
	for _, be := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"memory", func(testing.TB) string { return "" }},
		{"postgres", func(t testing.TB) string { return pgtest.Native(t) }},
	} {
		b.Run(be.name, func(b *testing.B) { benchEnrichment(b, be.dsn(b)) })
	}
}

func benchEnrichment(b *testing.B, dsn string) {
	ctx := context.Background()
	cfg := enrich.Config{DatabaseURL: dsn, Sandbox: true, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e, err := enrich.NewEmbedded(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	llm := &timedLLM{inner: e.Enrichment.Enricher.Calls.LLM, calls: map[string][]time.Duration{}}
	e.Enrichment.Enricher.Calls.LLM = llm
	sess, err := e.Access.Register(ctx, "bench@example.com", "benchmark password", "Bench")
	if err != nil {
		b.Fatal(err)
	}
	p := &access.Principal{OrgID: sess.Org.ID, UserID: sess.User.ID, Role: access.Owner, Scopes: access.DefaultScopes()}
	sc, err := e.Schemas.Create(ctx, p, app.NewSchemaInput{Name: "Company", Schema: json.RawMessage(schemaDoc)})
	if err != nil {
		b.Fatal(err)
	}
	req := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme","industry":"Anvils"}`), SchemaID: sc.ID,
		Models: []string{"sandbox::echo"}, Strategy: "multi_expertise"}

	run := func() (wall, model time.Duration, calls int) {
		t0 := time.Now()
		j, err := e.Enrichment.Start(ctx, p, req)
		if err != nil {
			b.Fatal(err)
		}
		var after int64
		for done := false; !done; {
			evs, err := e.Jobs.Events(ctx, j.ID, after)
			if err != nil {
				b.Fatal(err)
			}
			for _, ev := range evs {
				after = ev.Seq
				done = done || ev.Type.Terminal()
				if ev.Type.Terminal() && ev.Type != "completed" {
					b.Fatalf("job ended with %s: %+v", ev.Type, ev.Payload)
				}
			}
		}
		wall = time.Since(t0)
		model, calls = llm.take()
		return wall, model, calls
	}
	for i := 0; i < 20; i++ { // warm up
		run()
	}
	overhead := make([]time.Duration, 0, b.N)
	var modelTotal time.Duration
	calls := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wall, model, n := run()
		overhead = append(overhead, wall-model)
		modelTotal += model
		calls = n
	}
	b.StopTimer()
	sort.Slice(overhead, func(i, j int) bool { return overhead[i] < overhead[j] })
	p50, p99 := overhead[len(overhead)/2], overhead[len(overhead)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "overhead-p50-µs/job")
	b.ReportMetric(float64(p99.Microseconds()), "overhead-p99-µs/job")
	b.ReportMetric(float64(p50.Microseconds())/float64(calls), "overhead-p50-µs/call")
	b.ReportMetric(float64(p99.Microseconds())/float64(calls), "overhead-p99-µs/call")
	b.ReportMetric(float64(modelTotal.Microseconds())/float64(b.N), "model-µs/job")
	b.ReportMetric(float64(calls), "calls/job")
}

// BenchmarkSSEFirstEvent measures, through real HTTP, the time from the
// stream request's answer (job_id) to the first SSE event on the wire.
func BenchmarkSSEFirstEvent(b *testing.B) {
	for _, be := range []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"memory", func(testing.TB) string { return "" }},
		{"postgres", func(t testing.TB) string { return pgtest.Native(t) }},
	} {
		b.Run(be.name, func(b *testing.B) { benchSSE(b, be.dsn(b)) })
	}
}

func benchSSE(b *testing.B, dsn string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := enrich.Config{DatabaseURL: dsn, Sandbox: true, JWTSecret: strings.Repeat("x", 40), PasswordHashing: "fast",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := enrich.NewServer(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	post := func(path, cred string, body any, out any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		if cred != "" {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("POST %s: %d %s", path, resp.StatusCode, msg)
		}
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	var sess struct {
		AccessToken string `json:"access_token"`
	}
	post("/api/auth/register", "", map[string]any{"email": "sse@example.com", "password": "benchmark pw", "organization": "B"}, &sess)
	var sc struct{ ID string }
	post("/api/schema/saved", sess.AccessToken, map[string]any{"name": "Company", "schema": json.RawMessage(schemaDoc)}, &sc)
	body := map[string]any{"entity_data": map[string]any{"name": "Acme"}, "schema_id": sc.ID, "models": []string{"sandbox::echo"}, "strategy": "multi_expertise"}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var j struct {
			JobID string `json:"job_id"`
		}
		post("/api/single/enrich/stream", sess.AccessToken, body, &j)
		t0 := time.Now()
		req, _ := http.NewRequest("GET", base+"/api/llm/stream/"+j.JobID, nil)
		req.Header.Set("Authorization", "Bearer "+sess.AccessToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "id: 1\n" {
			b.Fatalf("first bytes %q: %v", buf, err)
		}
		lat = append(lat, time.Since(t0))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "first-event-p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "first-event-p99-µs")
}
