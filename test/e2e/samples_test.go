package e2e_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func (s *service) startSamples(cred string, body obj) string {
	s.t.Helper()
	var out struct {
		JobID   string `json:"job_id"`
		Message string `json:"message"`
	}
	if st := s.call("POST", "/api/schema/sample/generate/stream", cred, body, &out); st != 200 || out.JobID == "" || out.Message == "" {
		s.t.Fatalf("start sample generation: %d", st)
	}
	return out.JobID
}

// consecutive checks that the events' ids are 1..n: one stream, numbers
// going on across the pause.
func consecutive(t *testing.T, evs []event) {
	t.Helper()
	for i, e := range evs {
		if e.ID != strconv.Itoa(i+1) {
			t.Fatalf("event %d (%s) has id %q: want %d", i, e.Name, e.ID, i+1)
		}
	}
}

func samplesOf(t *testing.T, e event) []obj {
	t.Helper()
	raw, _ := e.Data["samples"].([]any)
	out := make([]obj, len(raw))
	for i, r := range raw {
		out[i], _ = r.(obj)
	}
	return out
}

// TestSampleGenerationPauseContinue: a vague entity type pauses the job on
// its clarification questions; one SSE connection sees the roster and the
// pause, then, after the continue answers, the rest of the job with the
// numbers going on, and samples shaped by the answers.
func TestSampleGenerationPauseContinue(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("samples-pause@example.com")
			jobID := s.startSamples(ten.key, obj{"entity_type": "thing", "fields": []string{"name", "size"}, "sample_count": 3,
				"auto_answer": false})
			done := make(chan []event, 1)
			go func() { done <- s.follow(ten.key, jobID, "") }() // one connection for the whole job

			s.waitEvent(ten.key, jobID, "sample_clarification_pause").Body.Close()
			var st struct{ Status string }
			paused := s.eventsSoFar(ten.key, jobID)
			pause := find(paused, "sample_clarification_pause")
			is.Equal(len(pause), 1)
			is.Equal(pause[0].Data["status"], "paused")
			is.Equal(pause[0].Data["is_paused"], true)
			is.Equal(pause[0].Data["source_mode"], "describe_subject")
			is.Equal(pause[0].Data["round"], float64(0))
			is.Equal(pause[0].Data["timeout_seconds"], float64(600))
			qs, _ := pause[0].Data["questions"].([]any)
			is.Equal(len(qs), 2) // the vague type and the ambiguous field "size"
			q0, _ := qs[0].(obj)
			is.Equal(q0["id"], "entity_kind")
			is.Equal(q0["default_option_id"], "product")
			is.Equal(len(find(paused, "sample_instance_progress")), 0) // nothing generated before the answers

			// A bad answer is refused; the job stays paused.
			var e struct{ Code, Field string }
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, obj{"answers": obj{"entity_kind": obj{"option_ids": "org"}}}, &e), 400)
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key,
				obj{"answers": obj{"entity_kind": obj{"option_ids": []string{"org"}}, "field_size": obj{"option_ids": []string{"count"}}}}, &st), 200)
			is.Equal(st.Status, "running")

			var evs []event
			select {
			case evs = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the stream did not end after the continue")
			}
			consecutive(t, evs)
			is.Equal(last(evs).Name, "completed")
			want := []string{"model_auto_selected", "sample_instance_roster", "sample_clarification_pause", "job_continued",
				"sample_instance_progress", "sample_instance_progress", "sample_instance_progress", "model_completed", "completed"}
			is.Equal(names(evs), want)
			cont := find(evs, "job_continued")[0]
			is.Equal(cont.Data["status"], "running")
			is.Equal(cont.Data["is_paused"], false)
			roster := find(evs, "sample_instance_roster")[0]
			is.Equal(roster.Data["total"], float64(3))
			prog := find(evs, "sample_instance_progress")
			is.Equal(prog[2].Data["completed"], float64(3))
			smp := samplesOf(t, find(evs, "model_completed")[0])
			is.Equal(len(smp), 3)
			seen := map[string]bool{}
			for _, x := range smp {
				is.Equal(len(x), 2) // sample 1's field set, on every sample
				_, isNum := x["size"].(float64)
				is.True(isNum) // "size" answered as a count
				name, _ := x["name"].(string)
				is.True(name != "" && !seen[name]) // a different instance each
				seen[name] = true
			}
			res, _ := last(evs).Data["result"].(obj)
			is.Equal(res["samples_requested"], float64(3))
			clar, _ := res["clarifications"].(obj)
			is.Equal(len(clar), 2)

			// Every call is in the ledger: sample 1 before the pause (written
			// with the pause), sample 1 again with the answers, samples 2 and 3.
			entries, err := s.srv.Stores.Usage.ListUsage(context.Background(), ten.orgID, time.Time{}, time.Now().Add(time.Hour))
			is.NoErr(err)
			calls := 0
			for _, e := range entries {
				if e.JobID == jobID {
					calls++
					is.Equal(e.Outcome, "ok")
					is.True(e.InputTokens > 0)
				}
			}
			is.Equal(calls, 4)

			// Continued once; the job is over now.
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &e), 409)
			is.Equal(e.Code, "job_not_paused")
		})
	}
}

// TestSampleGenerationPauseTimesOut: a pause nobody answers ends the job at
// its timeout with a cancelled event saying why; a late continue is 409.
func TestSampleGenerationPauseTimesOut(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("samples-timeout@example.com")
			jobID := s.startSamples(ten.key, obj{"entity_type": "item", "sample_count": 2, "pause_timeout_seconds": 1})
			t0 := time.Now()
			evs := s.follow(ten.key, jobID, "")
			consecutive(t, evs)
			is.Equal(names(evs), []string{"model_auto_selected", "sample_instance_roster", "sample_clarification_pause", "cancelled"})
			is.Equal(find(evs, "sample_clarification_pause")[0].Data["timeout_seconds"], float64(1))
			reason, _ := last(evs).Data["reason"].(string)
			is.True(strings.Contains(reason, "pause timed out"))
			is.True(time.Since(t0) >= 900*time.Millisecond)
			var e struct{ Code string }
			is.Equal(s.call("POST", "/api/llm/continue/"+jobID, ten.key, nil, &e), 409)
			is.Equal(e.Code, "job_not_paused")
		})
	}
}

// TestSampleGenerationAutoAnswer: with auto_answer the questions take their
// defaults and the job never pauses; a cancel of a paused job works.
func TestSampleGenerationAutoAnswer(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("samples-auto@example.com")
			jobID := s.startSamples(ten.key, obj{"entity_type": "thing", "fields": []string{"Product Name", "value"}, "sample_count": 2,
				"auto_answer": true, "naming_convention": "camelCase", "model": "sandbox::echo"})
			evs := s.follow(ten.key, jobID, "")
			consecutive(t, evs)
			is.Equal(indexOf(evs, "sample_clarification_pause"), -1)
			is.Equal(last(evs).Name, "completed")
			smp := samplesOf(t, find(evs, "model_completed")[0])
			is.Equal(len(smp), 2)
			for _, x := range smp {
				_, ok := x["productName"]
				is.True(ok) // camelCase
				_, isNum := x["value"].(float64)
				is.True(isNum) // the default reading: money
			}
			res, _ := last(evs).Data["result"].(obj)
			clar, _ := res["clarifications"].(obj)
			is.Equal(len(clar), 2)

			// Cancel while paused ends the job.
			paused := s.startSamples(ten.key, obj{"entity_type": "object"})
			s.waitEvent(ten.key, paused, "sample_clarification_pause").Body.Close()
			var st struct{ Status, Code, Detail string }
			code := s.call("POST", "/api/llm/cancel/"+paused, ten.key, nil, &st)
			is.Equal(code, 200)
			if code != 200 {
				t.Logf("%+v", st)
			}
			is.Equal(st.Status, "cancelled")
			is.Equal(last(s.follow(ten.key, paused, "")).Name, "cancelled")
		})
	}
}

// TestSampleGenerationSync: the blocking variant returns the samples (never
// pausing); bad counts and capabilities to come are 400 naming the field.
func TestSampleGenerationSync(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			ten := s.register("samples-sync@example.com")
			var out struct {
				JobID     string `json:"job_id"`
				Success   bool   `json:"success"`
				Samples   []obj  `json:"samples"`
				Requested int    `json:"samples_requested"`
				Model     string `json:"model"`
			}
			is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company", "sample_count": 4,
				"typical_objects": []string{"Apple Inc."}}, &out), 200)
			is.True(out.Success)
			is.Equal(out.Requested, 4)
			is.Equal(len(out.Samples), 4)
			is.Equal(out.Samples[0]["name"], "Apple Inc.") // the typical object, in order
			keys := func(o obj) string {
				var ks []string
				for k := range o {
					ks = append(ks, k)
				}
				slices.Sort(ks)
				return strings.Join(ks, ",")
			}
			names := map[any]bool{}
			for _, x := range out.Samples {
				is.Equal(keys(x), keys(out.Samples[0])) // the same fields
				names[x["name"]] = true
			}
			is.Equal(len(names), 4)
			// An invalid first answer is retried with the problem fed back; a
			// model that never answers well fails the job.
			is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company", "sample_count": 2,
				"model": "sandbox::flaky"}, &out), 200)
			is.Equal(len(out.Samples), 2)
			var fail struct{ Code, Detail string }
			is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company",
				"model": "sandbox::broken"}, &fail), 502)
			is.Equal(fail.Code, "model_output_invalid")
			is.True(strings.Contains(fail.Detail, "sample 1"))
			// Web search with auto takes sandbox::search, the one sandbox model
			// that searches.
			is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "company", "sample_count": 1,
				"enable_web_search": true}, &out), 200)
			is.Equal(len(out.Samples), 1)
			// A vague type auto-answers on the sync route: no pause.
			is.Equal(s.call("POST", "/api/schema/sample/generate/sync", ten.key, obj{"entity_type": "thing", "auto_answer": false}, &out), 200)
			is.Equal(len(out.Samples), 1)

			for _, tt := range []struct {
				body        obj
				field, code string
			}{
				{obj{"entity_type": "company", "sample_count": 0}, "sample_count", ""},
				{obj{"entity_type": "company", "sample_count": 21}, "sample_count", ""},
				{obj{"entity_type": ""}, "entity_type", ""},
				{obj{"entity_type": "company", "naming_convention": "kebab"}, "naming_convention", ""},
				{obj{"entity_type": "company", "sample_count": 1, "typical_objects": []string{"a", "b"}}, "typical_objects", ""},
				{obj{"entity_type": "company", "attachment_ids": []string{"a1"}}, "attachment_ids.0", "attachment_not_found"},
				{obj{"entity_type": "company", "model": "nope::nothing"}, "model", "invalid_model"},
			} {
				for _, route := range []string{"stream", "sync"} {
					var e struct{ Code, Field string }
					is.Equal(s.call("POST", "/api/schema/sample/generate/"+route, ten.key, tt.body, &e), 400)
					is.Equal(e.Field, tt.field)
					if tt.code != "" {
						is.Equal(e.Code, tt.code)
					}
				}
			}
		})
	}
}

// TestSampleContinueAcrossInstances: a job paused on A, whose replica then
// stops, is continued through B and finished by B's worker on the same
// stream: the pause is durable and holds no worker.
func TestSampleContinueAcrossInstances(t *testing.T) {
	is := is.New(t)
	dsn := backends[1].dsn(t)
	a, b := start(t, testConfig(dsn)), start(t, testConfig(dsn))
	ten := a.register("xsamples@example.com")
	jobID := a.startSamples(ten.key, obj{"entity_type": "record", "sample_count": 2})
	a.waitEvent(ten.key, jobID, "sample_clarification_pause").Body.Close()
	for t0 := time.Now(); len(a.srv.RunningJobs()) > 0 && time.Since(t0) < 2*time.Second; {
		time.Sleep(5 * time.Millisecond)
	}
	is.Equal(len(a.srv.RunningJobs()), 0) // a paused job holds no worker
	a.stop()

	var st struct{ Status string }
	is.Equal(b.call("POST", "/api/llm/continue/"+jobID, ten.key, obj{"answers": obj{"entity_kind": obj{"option_ids": []string{"person"}}}}, &st), 200)
	evs := b.follow(ten.key, jobID, "")
	consecutive(t, evs)
	is.Equal(last(evs).Name, "completed")
	is.Equal(indexOf(evs, "job_resumed"), -1)
	smp := samplesOf(t, find(evs, "model_completed")[0])
	is.Equal(len(smp), 2)
	_, ok := smp[0]["full_name"] // the answer: a person
	is.True(ok)
}
