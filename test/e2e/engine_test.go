package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	sse "github.com/tmaxmax/go-sse"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/test/fakeopenai"
	"github.com/entityenrich/enrich/test/pgtest"
)

// oneTerminal checks a stream's numbering and its single end.
func oneTerminal(t *testing.T, evs []event) {
	t.Helper()
	n := len(find(evs, "completed")) + len(find(evs, "failed")) + len(find(evs, "cancelled"))
	mustf(t, n == 1, "%d terminal events", n)
	for i, e := range evs {
		mustf(t, e.ID == strconv.Itoa(i+1), "event %d has id %s", i+1, e.ID)
	}
}

func buildEnrichd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "enrichd")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/enrichd")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build enrichd: %v", err)
	}
	return bin
}

// TestResumeSkipsDoneExpertises: a replica dies (SIGKILL) with two of a
// job's three expertise calls done and the third in flight. Another replica
// takes the job over: it says job_resumed, calls only the unfinished
// expertise again, and ends the job once, in one numbering.
func TestResumeSkipsDoneExpertises(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	var hang atomic.Bool
	hang.Store(true)
	calls := map[string]*atomic.Int64{}
	for _, k := range []string{"headquarters", "other"} {
		calls[k] = &atomic.Int64{}
	}
	fake := fakeopenai.New(t, fakeopenai.WithModels("m"))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		props, _ := req.Schema["properties"].(map[string]any)
		if _, hq := props["headquarters"]; hq {
			calls["headquarters"].Add(1)
			for hang.Load() {
				time.Sleep(20 * time.Millisecond) // in flight until the replica dies
			}
		} else {
			calls["other"].Add(1)
		}
		return fakeopenai.DefaultAnswer(req), 0
	})
	bin := buildEnrichd(t)
	a := &replica{t: t, bin: bin, addr: freeAddr(t), env: []string{
		"DATABASE_URL=" + dsn, "ENRICH_JWT_SECRET=" + strings.Repeat("r", 40), "ENRICH_PASSWORD_HASHING=fast",
		"ENRICH_LOG_LEVEL=error", "ENRICH_LEASE_TTL=2s",
		"ENRICH_PROVIDER_FAKE_TYPE=openai", "ENRICH_PROVIDER_FAKE_BASE_URL=" + fake.URL(),
		"ENRICH_PROVIDER_FAKE_API_KEY=k", "ENRICH_PROVIDER_FAKE_MODELS=m",
	}}
	a.start()
	sa := &service{t: t, url: "http://" + a.addr, http: testHTTPClient()}
	ten := sa.register("resume@example.com")
	schemaID := sa.createSchema(ten.key, "Company", companySchema)
	jobID := sa.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": schemaID, "model": "fake::m", "strategy": "multi_expertise"})
	// Wait until both quick expertises are durable, then kill A.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs := sa.eventsSoFar(ten.key, jobID)
		if len(find(evs, "expertise_completed")) == 2 {
			break
		}
		mustf(t, time.Now().Before(deadline), "the quick expertises did not complete")
	}
	a.kill()
	hang.Store(false)

	cfg := testConfig(dsn)
	cfg.Sandbox = false
	cfg.LeaseTTL = 2 * time.Second
	cfg.Providers = []llm.ProviderConfig{{Name: "fake", Type: "openai", BaseURL: fake.URL(), APIKey: "k", Models: []string{"m"}}}
	b := start(t, cfg)
	evs := b.follow(ten.key, jobID, "")
	oneTerminal(t, evs)
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "job_resumed")), 1)
	is.Equal(len(find(evs, "model_started")), 1)       // not repeated by the new holder
	is.Equal(len(find(evs, "expertise_completed")), 3) // two before, one after the takeover
	is.Equal(calls["other"].Load(), int64(2))          // the two durable expertises were not called again
	is.Equal(calls["headquarters"].Load(), int64(2))   // the one in flight at the kill was
	is.Equal(b.call("GET", "/api/records?job_id="+jobID, ten.key, nil, nil), 200)
}

// TestAttemptsExhaustedFailInterrupted: a job whose holders died as many
// times as ENRICH_JOB_ATTEMPTS allows is failed with code interrupted, its
// error and failed events numbered after its log.
func TestAttemptsExhaustedFailInterrupted(t *testing.T) {
	is := is.New(t)
	cfg := testConfig(backends[1].dsn(t))
	cfg.JobAttempts = 2
	s := start(t, cfg)
	ten := s.register("attempts@example.com")
	ctx := context.Background()
	old := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	j := &job.Job{ID: "exhausted-" + strconv.FormatInt(time.Now().UnixNano(), 36), OrgID: ten.orgID, Type: job.TypeEnrichment,
		State: job.Running, Request: []byte(`{}`), CreatedAt: old, UpdatedAt: old, HeartbeatAt: old,
		Attempt: 2, Owner: "a-replica-that-died", LeaseUntil: old}
	is.NoErr(s.srv.Stores.Jobs.CreateJob(ctx, j))
	is.NoErr(s.srv.Stores.Events.Append(ctx, []job.Event{{JobID: j.ID, Seq: 1, Type: job.EventModelStarted,
		Data: map[string]any{"model": "sandbox::echo"}, CreatedAt: old}}))
	evs := s.follow(ten.key, j.ID, "") // the next sweep (every 5 s) finds it
	oneTerminal(t, evs)
	is.Equal(len(evs), 3)
	is.Equal(evs[1].Name, "error")
	is.Equal(evs[2].Data["error_code"], "interrupted")
	got, err := s.srv.Stores.Jobs.GetJob(ctx, ten.orgID, j.ID)
	is.NoErr(err)
	is.Equal(got.State, job.Failed)
	is.Equal(got.ErrorCode, job.CodeInterrupted)
}

// TestOutageDuringJob: PostgreSQL becomes unreachable while a job runs and
// comes back 2 s later. The job's event and state writes are retried, and it
// ends once, in one numbering, with nothing lost.
func TestOutageDuringJob(t *testing.T) {
	is := is.New(t)
	proxy, dsn := pgtest.ProxyDSN(t, pgtest.Native(t))
	s := start(t, testConfig(dsn))
	ten := s.register("outage-job@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}, "strategy": "multi_expertise"})
	s.waitEvent(ten.key, jobID, "attempt").Body.Close()
	proxy.Cut()
	// The 2 s calls end while the database is away.
	for deadline := time.Now().Add(15 * time.Second); s.llmCallsEnded("sandbox", "slow") < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 3 calls ended within 15 s", s.llmCallsEnded("sandbox", "slow"))
		}
	}
	proxy.Restore()
	evs := s.follow(ten.key, jobID, "")
	oneTerminal(t, evs)
	is.Equal(last(evs).Name, "completed")
	is.Equal(len(find(evs, "expertise_completed")), 3)
}

// TestUnstorableOutputFailsJob: a model answer that PostgreSQL cannot store
// (a NUL in a string) fails the job with storage_error; its stream ends.
func TestUnstorableOutputFailsJob(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithModels("m"))
	fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) {
		return strings.Replace(fakeopenai.DefaultAnswer(req), `"Acme`, `"Ac\u0000me`, 1), 0
	})
	cfg := testConfig(backends[1].dsn(t))
	cfg.Sandbox = false
	cfg.Providers = []llm.ProviderConfig{{Name: "fake", Type: "openai", BaseURL: fake.URL(), APIKey: "k", Models: []string{"m"}}}
	s := start(t, cfg)
	ten := s.register("nul-output@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	done := make(chan []event, 1)
	go func() {
		jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "model": "fake::m", "strategy": "single_pass"})
		done <- s.follow(ten.key, jobID, "")
	}()
	select {
	case evs := <-done:
		oneTerminal(t, evs)
		is.Equal(last(evs).Name, "failed")
		is.Equal(last(evs).Data["error_code"], "storage_error")
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not end")
	}
	is.Equal(s.runningAfter(5*time.Second), 0)
}

func testHTTPClient() *http.Client { return &http.Client{Timeout: 60 * time.Second} }

// eventsSoFar reads the job's events that are durable now, without waiting
// for its end.
func (s *service) eventsSoFar(cred, jobID string) []event {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/llm/stream/"+jobID, nil)
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var evs []event
	for e, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			break
		}
		var d obj
		if json.Unmarshal([]byte(e.Data), &d) == nil {
			name, _ := d["event"].(string)
			evs = append(evs, event{ID: e.LastEventID, Name: name, Data: d})
		}
	}
	return evs
}

// TestCancelPendingJob: a job waiting for a worker (pending) is cancelled
// before it runs: its stream ends with cancelled and no model is called.
func TestCancelPendingJob(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.Workers, cfg.PerOrgWorkers = 1, 1
			s := start(t, cfg)
			ten := s.register("pending@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			body := obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}, "strategy": "single_pass"}
			running := s.startJob(ten.key, body)
			pending := s.startJob(ten.key, body)
			var out struct{ Status string }
			is.Equal(s.call("POST", "/api/llm/cancel/"+pending, ten.key, nil, &out), 200)
			is.Equal(out.Status, "cancelled")
			evs := s.follow(ten.key, pending, "")
			oneTerminal(t, evs)
			is.Equal(len(evs), 1)
			is.Equal(evs[0].Name, "cancelled")
			is.Equal(last(s.follow(ten.key, running, "")).Name, "completed")
			is.Equal(s.call("POST", "/api/llm/cancel/"+pending, ten.key, nil, nil), 409)
		})
	}
}
