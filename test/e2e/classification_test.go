package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// bcBackends are the storages the classification and batch flows run on:
// memory and native PostgreSQL (the engine's pause is already proven on
// PGlite by the sample generation tests).
var bcBackends = backends[:2]

// classifiedBody is a stream request whose entity the sandbox classifies by
// its kind: "person" is a confident mismatch for the Company schema.
func classifiedBody(schemaID string, kind string, extra obj) obj {
	b := obj{"entity_data": obj{"name": "Acme", "kind": kind}, "schema_id": schemaID, "models": []string{"sandbox::echo"},
		"classification_model": "sandbox::echo"}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// TestClassificationPauseContinue: a mismatch pauses the stream with the
// classification; the continue (no body) resumes it on the same stream, the
// run goes on past the classification (not classified again) and completes
// with the verdict in its prompts; the call is in the ledger.
func TestClassificationPauseContinue(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("class-pause@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			jobID := s.startJob(ten.key, classifiedBody(id, "person", nil))
			done := make(chan []event, 1)
			go func() { done <- s.follow(ten.key, jobID, "") }()

			s.waitEvent(ten.key, jobID, "classification_mismatch_pause").Body.Close()
			paused := s.eventsSoFar(ten.key, jobID)
			is.Equal(names(paused), []string{"classification_started", "classification_completed", "classification_mismatch_pause"})
			started := paused[0]
			is.Equal(started.Data["model"], "sandbox::echo")
			completed := paused[1]
			is.Equal(completed.Data["success"], true)
			is.Equal(completed.Data["error_message"], nil)
			pause := paused[2]
			is.Equal(pause.Data["status"], "paused")
			is.Equal(pause.Data["is_paused"], true)
			is.Equal(pause.Data["timeout_seconds"], float64(600))
			c, _ := pause.Data["classification"].(obj)
			is.Equal(c["status"], "mismatch")
			is.Equal(c["entity_description"], "a person")
			is.Equal(c["expected_type"], "Company")
			is.Equal(c["confidence"], 0.9)
			is.Equal(c["classification_model"], "sandbox::echo")
			is.True(c["reasoning"] != "")
			is.Equal(completed.Data["classification"], pause.Data["classification"])
			for _, e := range paused {
				conforms(t, e.Name, e.Data, wireEvent)
			}
			conforms(t, "classification_mismatch_pause", pause.Data, shape{"classification": "object", "timeout_seconds": "number"})
			var st struct{ Status string }

			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &st), 200)
			is.Equal(st.Status, "running")
			var evs []event
			select {
			case evs = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end after the continue")
			}
			consecutive(t, evs)
			is.Equal(last(evs).Name, "completed")
			is.Equal(len(find(evs, "classification_started")), 1) // not classified again
			is.Equal(evs[3].Name, "job_continued")
			is.True(indexOf(evs, "model_started") > indexOf(evs, "job_continued"))
			rec, _ := last(evs).Data["record_id"].(string)
			is.True(rec != "")

			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
			is.NoErr(err)
			tasks := map[string]int{}
			for _, e := range entries {
				if e.JobID == jobID {
					tasks[e.Task]++
				}
			}
			is.Equal(tasks["classification"], 1)
			is.Equal(tasks["enrichment"], 3) // three expertise domains
			var e struct{ Code string }
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &e), 409)
			is.Equal(e.Code, "job_not_paused")
		})
	}
}

// TestClassificationPauseCancelAndTimeout: a paused classification is ended
// by a cancel, and one nobody answers is cancelled at its timeout; unknown
// and ambiguous verdicts pause too, a match does not.
func TestClassificationPauseCancelAndTimeout(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("class-cancel@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)

			// Cancel while paused (an unknown verdict pauses too).
			jobID := s.startJob(ten.key, classifiedBody(id, "unknown", nil))
			s.waitEvent(ten.key, jobID, "classification_mismatch_pause").Body.Close()
			var st struct{ Status string }
			is.Equal(s.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, &st), 200)
			is.Equal(st.Status, "cancelled")
			evs := s.follow(ten.key, jobID, "")
			consecutive(t, evs)
			is.Equal(names(evs), []string{"classification_started", "classification_completed", "classification_mismatch_pause", "cancelled"})
			c, _ := find(evs, "classification_mismatch_pause")[0].Data["classification"].(obj)
			is.Equal(c["status"], "unknown")

			// Continued, then cancelled while it runs.
			jobID = s.startJob(ten.key, classifiedBody(id, "person", obj{"models": []string{"sandbox::slow"}}))
			s.waitEvent(ten.key, jobID, "classification_mismatch_pause").Body.Close()
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &st), 200)
			s.waitEvent(ten.key, jobID, "model_started").Body.Close()
			is.Equal(s.call("POST", "/api/llm/cancel/"+jobID, ten.key, nil, &st), 200)
			is.Equal(st.Status, "cancelled")
			evs = s.follow(ten.key, jobID, "")
			consecutive(t, evs)
			is.Equal(last(evs).Name, "cancelled")
			is.Equal(indexOf(evs, "model_completed"), -1)

			// Timeout (an ambiguous verdict, a one-second pause).
			jobID = s.startJob(ten.key, classifiedBody(id, "ambiguous", obj{"pause_timeout_seconds": 1}))
			t0 := time.Now()
			evs = s.follow(ten.key, jobID, "")
			is.Equal(names(evs), []string{"classification_started", "classification_completed", "classification_mismatch_pause", "cancelled"})
			is.Equal(find(evs, "classification_mismatch_pause")[0].Data["timeout_seconds"], float64(1))
			reason, _ := last(evs).Data["reason"].(string)
			is.True(strings.Contains(reason, "pause timed out"))
			is.True(time.Since(t0) >= 900*time.Millisecond)
			var e struct{ Code string }
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &e), 409)

			// A match never pauses (the kind is in the schema's name).
			evs = s.follow(ten.key, s.startJob(ten.key, classifiedBody(id, "company", nil)), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(indexOf(evs, "classification_mismatch_pause"), -1)
			c, _ = find(evs, "classification_completed")[0].Data["classification"].(obj)
			is.Equal(c["status"], "match")
			// Bad pause timeouts are 400 naming the field.
			var bad struct{ Code, Field string }
			is.Equal(s.call("POST", "/api/single/enrich/stream", ten.key, classifiedBody(id, "person", obj{"pause_timeout_seconds": 0}), &bad), 400)
			is.Equal(bad.Field, "pause_timeout_seconds")
		})
	}
}

// TestClassificationSync: on /sync a warning verdict is 422 with the
// classification (the job is cancelled); a match completes; a failed
// classification call never blocks, on the stream or on /sync.
func TestClassificationSync(t *testing.T) {
	for _, b := range bcBackends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("class-sync@example.com")
			id := s.createSchema(ten.key, "Company", companySchema)
			var e struct {
				Code, Detail   string
				Classification obj
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, classifiedBody(id, "person", nil), &e), 422)
			is.Equal(e.Code, "classification_mismatch")
			is.Equal(e.Classification["status"], "mismatch")
			is.Equal(e.Classification["entity_description"], "a person")
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, classifiedBody(id, "ambiguous", nil), &e), 422)
			is.Equal(e.Code, "classification_warning")
			is.Equal(e.Classification["status"], "ambiguous")
			// The refused jobs were cancelled and stored nothing.
			var recs struct {
				Records []any `json:"records"`
			}
			is.Equal(s.call("GET", "/api/records", ten.key, nil, &recs), 200)
			is.Equal(len(recs.Records), 0)

			var ok struct {
				Success bool
				Result  obj
			}
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, classifiedBody(id, "company", nil), &ok), 200)
			is.True(ok.Success)

			// sandbox::broken never answers a classification: the call fails
			// after its retry and the run goes on without it.
			broken := classifiedBody(id, "person", obj{"classification_model": "sandbox::broken"})
			is.Equal(s.call("POST", "/api/single/enrich/sync", ten.key, broken, &ok), 200)
			is.True(ok.Success)
			evs := s.follow(ten.key, s.startJob(ten.key, broken), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(indexOf(evs, "classification_mismatch_pause"), -1)
			cc := find(evs, "classification_completed")[0]
			is.Equal(cc.Data["success"], false)
			is.Equal(cc.Data["classification"], nil)
			msg, _ := cc.Data["error_message"].(string)
			is.True(strings.Contains(msg, "classification answer unusable"))
			// auto resolves to the organization's default model.
			evs = s.follow(ten.key, s.startJob(ten.key, classifiedBody(id, "company", obj{"classification_model": "auto"})), "")
			is.Equal(last(evs).Name, "completed")
			is.Equal(find(evs, "classification_started")[0].Data["model"], "sandbox::echo")
		})
	}
}
