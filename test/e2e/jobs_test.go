package e2e_test

import (
	"bufio"
	"context"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// waitEvent reads the stream until an event named name arrives, then
// returns the open response (the caller closes it).
func (s *service) waitEvent(cred, jobID, name string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/llm/stream/"+jobID, nil)
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"event":"`+name+`"`) {
			return resp
		}
	}
	resp.Body.Close()
	s.t.Fatalf("stream ended before %s", name)
	return nil
}

func TestCancel(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("cancel@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}, "strategy": "multi_expertise"})
			s.waitEvent(ten.key, jobID, "attempt").Body.Close()

			t0 := time.Now()
			var out struct{ JobID, Status string }
			is.Equal(s.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, &out), 200)
			is.Equal(out.Status, "cancelled")
			evs := s.follow(ten.key, jobID, "")
			is.Equal(last(evs).Name, "cancelled")
			is.True(time.Since(t0) < time.Second) // the slow calls saw their context cancelled
			is.Equal(len(find(evs, "completed")), 0)
			is.Equal(len(find(evs, "model_completed")), 0)

			// A cancelled job cannot be cancelled again, nor continued.
			var e struct{ Detail, Code string }
			is.Equal(s.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, &e), 409)
			is.Equal(e.Code, "job_not_cancellable")
			is.True(strings.Contains(e.Detail, "cancelled"))
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &e), 409)

			// And it never completes: nothing is stored, even once its runner
			// has let go (after which nothing can store).
			is.Equal(s.runningAfter(5*time.Second), 0)
			var recs struct {
				Records []any `json:"records"`
			}
			is.Equal(s.call("GET", "/api/records?job_id="+jobID, ten.key, nil, &recs), 200)
			is.Equal(len(recs.Records), 0)

			// A finished job cannot be cancelled.
			done := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::echo"}})
			is.Equal(last(s.follow(ten.key, done, "")).Name, "completed")
			is.Equal(s.call("POST", "/api/llm/cancel/"+done, ten.key, nil, &e), 409)
			is.True(strings.Contains(e.Detail, "completed"))

			// Unknown and other organizations' jobs are 404.
			other := s.register("cancel-other@example.com")
			is.Equal(s.call("POST", "/api/llm/cancel/"+done, other.key, nil, &e), 404)
			is.Equal(s.call("GET", "/api/llm/stream/"+done, other.key, nil, &e), 404)
			is.Equal(s.call("POST", "/api/llm/cancel/nope", ten.key, nil, &e), 404)
		})
	}
}

func TestStreamHeartbeatAndDisconnect(t *testing.T) {
	is := is.New(t)
	cfg := testConfig("")
	cfg.SSEHeartbeat = 50 * time.Millisecond
	s := start(t, cfg)
	ten := s.register("hb@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}})

	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/api/llm/stream/"+jobID+"?token="+ten.token, nil)
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	is.Equal(resp.StatusCode, 200) // ?token= works for EventSource clients
	is.Equal(resp.Header.Get("Cache-Control"), "no-store")
	sc := bufio.NewScanner(resp.Body)
	heartbeat := false
	for sc.Scan() {
		if sc.Text() == ": heartbeat" {
			heartbeat = true
			break
		}
	}
	is.True(heartbeat)
	cancel()
	resp.Body.Close()
	// The handler's goroutine ends when the client goes away.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	is.True(runtime.NumGoroutine() <= before)
}

// TestShutdownHandsJobsBack: at shutdown a job that cannot finish within
// the grace period is handed back (its lease cleared), never left running:
// the next process on the same database resumes it, and it ends with one
// terminal event and one numbering. On memory storage, which dies with the
// process, it is failed with code shutdown instead.
func TestShutdownHandsJobsBack(t *testing.T) {
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			cfg := testConfig(b.dsn(t))
			cfg.ShutdownGrace = 100 * time.Millisecond
			cfg.Workers, cfg.PerOrgWorkers = 1, 1 // the second job waits in the queue
			s := start(t, cfg)
			ten := s.register("shutdown@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			jobID := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}})
			queued := s.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}})
			s.waitEvent(ten.key, jobID, "attempt").Body.Close()
			s.stop()

			if cfg.DatabaseURL == "" {
				return // memory storage died with the process
			}
			// A new process on the same database resumes both jobs.
			next := start(t, testConfig(cfg.DatabaseURL))
			for _, id := range []string{jobID, queued} {
				evs := next.follow(ten.key, id, "")
				is.Equal(last(evs).Name, "completed")
				is.Equal(len(find(evs, "completed"))+len(find(evs, "failed"))+len(find(evs, "cancelled")), 1)
				for i, e := range evs {
					is.Equal(e.ID, strconv.Itoa(i+1)) // one numbering, no gap
				}
			}
			is.Equal(len(find(next.follow(ten.key, jobID, ""), "job_resumed")), 1)
		})
	}
}

// TestCancelAcrossInstances: a job running on A, cancelled through B, stops
// its model calls on A at once, and both streams end with cancelled.
func TestCancelAcrossInstances(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	a, b := start(t, testConfig(dsn)), start(t, testConfig(dsn))
	ten := a.register("xcancel@example.com")
	id := a.createSchema(ten.key, "Company", companySchema)
	jobID := a.startJob(ten.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": id, "models": []string{"sandbox::slow"}, "strategy": "multi_expertise"})
	a.waitEvent(ten.key, jobID, "attempt").Body.Close()
	is.Equal(len(a.srv.RunningJobs()), 1)

	t0 := time.Now()
	var out struct{ Status string }
	is.Equal(b.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, &out), 200)
	is.Equal(out.Status, "cancelled")
	for len(a.srv.RunningJobs()) > 0 && time.Since(t0) < time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	is.Equal(len(a.srv.RunningJobs()), 0) // the 2 s calls on A were cancelled
	t.Logf("A stopped the job %v after B's cancel", time.Since(t0))

	for _, s := range []*service{a, b} {
		evs := s.follow(ten.key, jobID, "")
		is.Equal(last(evs).Name, "cancelled")
		is.Equal(len(find(evs, "cancelled")), 1)
		is.Equal(len(find(evs, "completed")), 0)
		for i, e := range evs {
			is.Equal(e.ID, strconv.Itoa(i+1)) // one numbering, no gap
		}
	}
	is.Equal(a.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, nil), 409)
}
