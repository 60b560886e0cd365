package jobcodec_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/domain/fusion"
	"github.com/entityenrich/enrich/domain/job"
)

// golden is one line of testdata/events.golden.jsonl: an event as the
// encoder that lived in domain/job wrote it (written by TestWriteGolden in
// domain/job/golden_test.go at commit 1a16b89, with goldenCases below in
// that API): its SSE line, its stored data (the bytes when they were always
// the same, else the value) and the SSE line a log reader served from the
// stored data. The file is the reference: never regenerate it from this
// codec.
type golden struct {
	Name   string          `json:"name"`
	Type   string          `json:"type"`
	SSE    string          `json:"sse"`
	Stored string          `json:"stored"`
	Exact  bool            `json:"stored_exact"`
	Value  json.RawMessage `json:"stored_value"`
	Served string          `json:"served"`
}

func readGolden(t *testing.T) []golden {
	t.Helper()
	f, err := os.Open("testdata/events.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []golden
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// sameValue fails unless a and b are the same JSON value.
func sameValue(t *testing.T, what string, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %s: %v", what, a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %s: %v", what, b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	if !bytes.Equal(xa, ya) {
		t.Fatalf("%s:\n got %s\nwant %s", what, a, b)
	}
}

// TestGolden holds every event type, in each of its shapes, to the bytes
// of the encoder this codec replaced: each SSE line byte for byte, stored
// data byte for byte where that encoder's were always the same (else the
// same value), and an event read back from stored data (ours, or that
// encoder's) served as a log reader served it. Only the events whose
// stored data their payload would not write back come back as job.Raw.
func TestGolden(t *testing.T) {
	codec := jobcodec.Events{}
	lines := readGolden(t)
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	n := 0
	// Of the events this version writes, only decisions with a reason:
	// encoding/json wrote them in the struct's order, a log reader sorted.
	raw := map[string]bool{"fused/arbitration_completed/4": true}
	for _, c := range goldenCases() {
		tr := job.NewTracker(c.jobType)
		tr.SetTotalModels(c.models)
		for i, d := range c.drafts {
			if !c.unstamped {
				d = tr.Stamp(d)
			}
			e := job.Number("job-<1>", int64(i), at, []job.Draft{d})[0]
			g := lines[n]
			n++
			name := c.name + "/" + string(e.Type) + "/" + strconv.Itoa(i)
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				is.Equal(g.Name, c.name)
				is.Equal(g.Type, string(e.Type))
				sse, err := codec.AppendJSON(nil, e)
				is.NoErr(err)
				is.Equal(string(sse), g.SSE) // the SSE line, byte for byte
				stored, err := codec.Encode(e)
				is.NoErr(err)
				if g.Exact {
					is.Equal(string(stored), g.Stored) // stored, byte for byte
				} else {
					sameValue(t, "stored", stored, g.Value)
				}
				old := []byte(g.Stored)
				if !g.Exact {
					old = g.Value
				}
				for _, data := range [][]byte{stored, old} {
					p, common, err := codec.Decode(e.Type, data)
					is.NoErr(err)
					_, isRaw := p.(job.Raw)
					is.Equal(isRaw, raw[name]) // typed unless it cannot be
					served, err := codec.AppendJSON(nil, job.Event{JobID: e.JobID, Seq: e.Seq, Type: e.Type, Payload: p, Common: common})
					is.NoErr(err)
					is.Equal(string(served), g.Served) // read back, served as before
					again, err := codec.Encode(job.Event{Type: e.Type, Payload: p, Common: common})
					is.NoErr(err)
					sameValue(t, "stored again", again, stored)
				}
			})
		}
	}
	for _, g := range lines[n:] {
		t.Run("stored/"+g.Name, func(t *testing.T) {
			is := is.New(t)
			p, common, err := codec.Decode(job.EventType(g.Type), []byte(g.Stored))
			is.NoErr(err)
			served, err := codec.AppendJSON(nil, job.Event{JobID: "job-<1>", Type: job.EventType(g.Type), Payload: p, Common: common})
			is.NoErr(err)
			is.Equal(string(served), g.Served)
			r, isRaw := p.(job.Raw)
			is.Equal(isRaw, g.Name != "before the common block")
			if isRaw {
				is.Equal(string(r.Data), g.Stored) // kept as it was
				stored, err := codec.Encode(job.Event{Type: job.EventType(g.Type), Payload: p})
				is.NoErr(err)
				is.Equal(string(stored), g.Stored)
			}
		})
	}
}

type goldenCase struct {
	name      string
	jobType   job.Type
	models    int
	unstamped bool
	drafts    []job.Draft
}

func drafts(ps ...job.Payload) []job.Draft {
	out := make([]job.Draft, len(ps))
	for i, p := range ps {
		out[i] = job.NewDraft(p)
	}
	return out
}

func goldenCases() []goldenCase {
	res := map[string]any{"name": "Acme & <Co>", "founded": 1901.0, "tags": []any{"a", nil, true}, "hq": map[string]any{"city": "Zürich"}}
	ix := 1
	summary := fusion.Summary{AgreedFields: 3, ConflictedFields: 1, TotalFields: 4, Method: "arbitrated", ArbitrationModel: "p::arb"}
	report := fusion.Report{Conflicts: []fusion.Conflict{{Path: "name", FieldType: "scalar"}}, AgreedFields: 3, ConflictedFields: 1, TotalFields: 4}
	prov := map[string]fusion.Provenance{"name": {Models: []string{"p::a"}, Arbitrated: true}}
	pause := job.NewDraft(job.ClassificationMismatchPause{Classification: map[string]any{"status": "warning", "kind": "person"},
		TimeoutSeconds: 600})
	samplePause := job.NewDraft(job.SampleClarificationPause{EntityTitle: "Company", Round: 1, SourceMode: "llm", TimeoutSeconds: 60,
		Questions: []job.SampleQuestion{{ID: "q1", Label: "Size", Text: "Which <size>?", AllowMultiple: true,
			Options: []job.SampleOption{{ID: "s", Label: "Small"}, {ID: "l", Label: "Large"}}, DefaultOptionID: "s"},
			{ID: "q2", Label: "Region", Text: "Where?", Options: []job.SampleOption{}}}})
	partial := job.PartialCancellation("client asked", map[string]any{"total_entities": 3, "completed": 1})
	partialNil := job.PartialCancellation("stopped", nil)
	return []goldenCase{
		{name: "enrichment", jobType: job.TypeEnrichment, models: 2, drafts: drafts(
			job.StrategySelected{Strategy: "multi_expertise", Requested: "auto", Reason: "many domains", Signals: map[string]any{"domains": 3, "fields": 12}},
			job.ModelAutoSelected{Model: "p::m", TaskType: "enrichment", Source: "pinned", Pinned: true},
			job.ModelStarted{Model: "p::m", Strategy: "multi_expertise", Expertises: 2, Sandbox: true},
			job.ModelStarted{Model: "p::<n>", Strategy: "multi_expertise", Expertises: 2},
			job.ExpertiseStarted{Model: "p::m", Key: "finance", Name: "Finance & Co"},
			job.ProviderQueued{Model: "p::m", Expertise: "finance", Provider: "openai"},
			job.Attempt{Model: "p::m", Expertise: "finance", Attempt: 1, MaxAttempts: 3, Reason: "not written"},
			job.Attempt{Model: "p::m", Expertise: "finance", Attempt: 2, MaxAttempts: 3, Reason: "model_output_invalid: \"x\" <y>"},
			job.ExpertiseCompleted{Model: "p::m", Key: "finance", Name: "Finance", Completed: 1, Total: 2, Success: true,
				PartialResult: map[string]any{"revenue": 1.25e6}, InputTokens: 300, OutputTokens: 20, Cost: 167, ProcessingMS: 12,
				KeySource: "global", WebSearchCalls: 2},
			job.ExpertiseCompleted{Model: "p::m", Key: "general", Name: "General", Completed: 2, Total: 2, Success: true,
				PartialResult: map[string]any{"name": "Acme"}, InputTokens: 3, OutputTokens: 4, Cost: 1234567, ProcessingMS: 5},
			job.ExpertiseCompleted{Model: "p::<n>", Key: "general", Name: "General", Completed: 1, Total: 2,
				ErrorMessage: "bad <json>", ErrorCode: job.CodeOutputInvalid, KeySource: "organization", Cost: 1e12},
			job.ModelCompleted{Model: "p::m", Success: true, Cost: 1234734, InputTokens: 303, OutputTokens: 24, ProcessingMS: 40,
				Breakdown: []job.Breakdown{{Key: "finance", Name: "Finance \"F\"", Success: true, Tokens: 320, Cost: 167},
					{Key: "general", Name: "General", Success: true, Tokens: 7, Cost: 1234567}},
				Result: map[string]any{"name": "Acme"}, RecordID: "rec-1"},
			job.ModelCompleted{Model: "p::<n>", PartialSuccess: true, ErrorMessage: "1 of 2 expertises failed", ErrorCode: job.CodeOutputInvalid,
				Cost: 3, InputTokens: 1, OutputTokens: 2, Breakdown: []job.Breakdown{{Key: "general", Name: "General", Cost: 3}}},
			job.ModelCompleted{Model: "p::z", ErrorMessage: "e", ErrorCode: job.CodeProviderTimeout},
			job.SomeModelsFailed{Message: "1 of 2 models failed", FailedModels: []string{"p::<n>"}},
			job.JobCompleted{Result: map[string]any{"name": "Acme"}, RecordID: "rec-1", RecordIDs: []string{"rec-1"}, Cost: 1234737,
				Several: true, Results: map[string]any{"p::m": map[string]any{"name": "Acme"}}, FailedModels: []string{"p::<n>"}},
		)},
		{name: "single", jobType: job.TypeEnrichment, models: 1, drafts: drafts(
			job.ModelStarted{Model: "sandbox::echo", Strategy: "single_pass", Expertises: 1, Sandbox: true},
			job.ExpertiseCompleted{Model: "sandbox::echo", Key: "all", Name: "All", Completed: 1, Total: 1, Success: true, PartialResult: res},
			job.ModelCompleted{Model: "sandbox::echo", Success: true, Result: res, RecordID: "r1"},
			job.JobCompleted{Result: res, RecordID: "r1", RecordIDs: []string{"r1"}},
		)},
		{name: "fused", jobType: job.TypeEnrichment, models: 2, drafts: drafts(
			job.FusionStarted{SourceRecordIDs: []string{"r1", "r2"}, ArbitrationModel: "p::arb"},
			job.FusionStarted{SourceRecordIDs: []string{}},
			job.ConflictsDetected{Agreed: 3, Conflicted: 1, Total: 4},
			job.ArbitrationStarted{Model: "p::arb", Conflicts: 1, Escalated: true},
			job.ArbitrationCompleted{Model: "p::arb", Success: true, Decisions: []job.Decision{{Path: "name", Value: "Acme", Reason: "majority"},
				{Path: "size", Value: map[string]any{"b": 1.0, "a": []any{2.0}}}}, Cost: 40, InputTokens: 10, OutputTokens: 2},
			job.ArbitrationCompleted{Model: "p::arb", Fallback: true, ErrorMessage: "arbiter <down>"},
			job.FusionCompleted{Success: true, Merged: (fusion.Result{Merged: map[string]any{"name": "Acme"}, Summary: summary}).Annotated(),
				Report: report, Summary: summary, Provenance: prov, RecordID: "f1", Cost: 40, ProcessingMS: 9, InputTokens: 10,
				OutputTokens: 2, ValidationWarnings: []string{"w <1>"}, ArbiterUsed: "p::arb", KeySource: "global"},
			job.FusionCompleted{Success: false, ErrorMessage: "no candidates"},
			job.JobCompleted{Result: map[string]any{"name": "Acme"}, RecordID: "f1", RecordIDs: []string{"r1", "r2", "f1"}, Cost: 80,
				Several: true, Results: map[string]any{}, Fused: true, Fusion: summary, SourceModels: []string{"p::a", "p::b"}},
			job.JobCompleted{Result: map[string]any{}, RecordID: "f2", Fused: true, Fusion: map[string]any{"method": "rule_based"}},
		)},
		{name: "merge", jobType: job.TypeFusion, drafts: drafts(
			job.FusionStarted{SourceRecordIDs: []string{"r1"}},
			job.FusionCompleted{Success: true, Merged: map[string]any{}, Summary: map[string]any{"method": "rule_based"}, RecordID: "f"},
			job.JobCompleted{Result: map[string]any{}, RecordID: "f", RecordIDs: []string{"f"}},
		)},
		{name: "batch", jobType: job.TypeBatchEnrichment, models: 2, drafts: drafts(
			job.StrategySelected{Strategy: "single_pass", Requested: "auto", Reason: "r", Signals: map[string]any{}},
			job.BatchStarted{Total: 3, Selected: 2},
			job.OfEntity(job.EntityStarted{Index: 0, Label: "Acme"}, 0),
			job.OfEntity(job.ClassificationStarted{Model: "p::c"}, 0),
			job.OfEntity(job.ClassificationCompleted{Model: "p::c", Success: true, Classification: map[string]any{"status": "ok"}}, 0),
			job.OfEntity(job.ModelStarted{Model: "p::m", EntityIndex: 0, Strategy: "single_pass", Expertises: 1}, 0),
			job.OfEntity(job.Attempt{Model: "p::m", Expertise: "all", Attempt: 2, MaxAttempts: 2, Reason: "timeout"}, 0),
			job.OfEntity(job.ExpertiseStarted{Model: "p::m", Key: "all", Name: "All"}, 0),
			job.OfEntity(job.ExpertiseCompleted{Model: "p::m", Key: "all", Name: "All", Completed: 1, Total: 1, Success: true,
				PartialResult: map[string]any{"n": 1.0}, Cost: 5}, 0),
			job.OfEntity(job.ModelCompleted{Model: "p::m", Success: true, Result: map[string]any{"n": 1.0}, RecordID: "r0", Cost: 5,
				Breakdown: []job.Breakdown{{Key: "all", Name: "All", Success: true, Cost: 5}}}, 0),
			job.OfEntity(job.FusionStarted{SourceRecordIDs: []string{"a", "b"}, EntityIndex: &ix}, 1),
			job.OfEntity(job.FusionCompleted{Success: false, ErrorMessage: "e", EntityIndex: &ix}, 1),
			job.OfEntity(job.EntityCompleted{Index: 0, Label: "Acme", Success: true, RecordID: "r0", Cost: 5, ProcessingMS: 30,
				Results: []job.EntityResult{{Model: "p::m", Success: true, Result: map[string]any{"n": 1.0}, RecordID: "r0", Cost: 5,
					InputTokens: 1, OutputTokens: 2, ProcessingMS: 3, Strategy: "single_pass", WebSearchCalls: 1},
					{Model: "p::x", ErrorMessage: "bad", ErrorCode: "model_output_invalid", Cost: 2, Sandbox: true}}}, 0),
			job.OfEntity(job.EntityCompleted{Index: 1, Label: "B", Error: "all models failed", ErrorCode: job.CodeLLMUnavailable}, 1),
			job.OfEntity(job.EntityCompleted{Index: 2}, 2),
			job.OfEntity(job.EntitySkipped{Index: 2, Label: "C", Code: job.SkipClassificationMismatch, Reason: "a person",
				Classification: map[string]any{"status": "mismatch"}, Paths: []string{"name"}}, 2),
			job.OfEntity(job.EntitySkipped{Index: 1, Code: job.SkipCancelled, Reason: "r"}, 1),
			job.BatchCompleted{Summary: map[string]any{"total": 3, "completed": 1, "entities": []any{map[string]any{"i": 0}}}, StoppedEarlyReason: "cancelled"},
			job.BatchCompleted{Summary: map[string]any{}},
		)},
		{name: "batch partial cancel", jobType: job.TypeBatchEnrichment, drafts: append(drafts(job.BatchStarted{Total: 2, Selected: 2}), partial...)},
		{name: "batch partial cancel nil", jobType: job.TypeBatchEnrichment, drafts: partialNil},
		{name: "classification pause", jobType: job.TypeEnrichment, models: 1, drafts: append(drafts(
			job.ClassificationStarted{Model: "p::c"},
			job.ClassificationCompleted{Model: "p::c", ErrorMessage: "timeout"},
		), pause, job.NewDraft(job.JobContinued{Answers: job.Answers{}, Round: 1}))},
		{name: "samples", jobType: "sample_generation", models: 1, drafts: append(append(drafts(
			job.SampleInstanceRoster{Instances: []string{"Acme", "<B>"}},
			job.SampleInstanceRoster{},
			job.SampleInstanceProgress{Completed: 1, Total: 2, Index: 0, Instance: "Acme", Sample: map[string]any{"name": "Acme"},
				InputTokens: 1, OutputTokens: 2, Cost: 3},
		), samplePause), drafts(
			job.JobContinued{Answers: job.Answers{"q1": {OptionIDs: []string{"s", "l"}, Text: "both <really>"}, "q2": {}}, Round: 1},
			job.SamplesCompleted{Model: "p::m", Samples: []map[string]any{{"name": "Acme"}, nil}, Requested: 3, Note: "one short",
				InputTokens: 4, OutputTokens: 5, Cost: 6, ProcessingMS: 7},
			job.JobCompleted{Result: map[string]any{"samples": []any{}}, Cost: 6},
		)...)},
		{name: "schema", jobType: job.TypeSchemaGeneration, models: 1, drafts: drafts(
			job.SchemaModelStarted{Model: "p::m", Sandbox: true},
			job.JobCompleted{Result: job.SchemaResult{Model: "p::m", RecordID: "r", Cost: 2, Suggestions: []string{"s"},
				Schema: map[string]any{"type": "object"}, Generation: &job.SchemaGeneration{Created: true, ExpertiseCount: 2}}.Fields(),
				RecordID: "r", RecordIDs: []string{"r"}, Cost: 2},
		)},
		{name: "ends", jobType: job.TypeEnrichment, drafts: append(append(drafts(job.JobResumed{Attempt: 2, AfterEvent: 9}),
			job.Failure(job.CodeProviderTimeout, "provider <timed> out\n")...), job.Cancellation("client went away")...)},
		{name: "unstamped", unstamped: true, drafts: append(append(job.Failure(job.CodeInterrupted, "m"), job.Cancellation("c")...),
			job.NewDraft(job.ExpertiseStarted{Model: "p::m", Key: "k", Name: "K"}))},
	}
}

type storedCase struct{ name, typ, data string }

// storedOnly are stored events this version does not write: types it does
// not know, and shapes of earlier versions.
func storedOnly() []storedCase {
	return []storedCase{
		{"unknown type", "legacy_event", `{"zz":1,"status":"running","a":{"b":[1,2.5,"x<"]},"event":"shadowed","job_id":"shadowed"}`},
		{"unknown without data", "legacy_empty", ``},
		{"unknown empty", "legacy_empty", `{}`},
		{"before the common block", "model_started", `{"status":"running","model":"p::m","entity_index":0,"strategy":"single_pass","total_expertises":1,"sandbox":false}`},
		{"before cost_usd", "expertise_completed", `{"status":"running","model":"p::m","expertise_key":"k","expertise_name":"K","completed_expertises":1,"total_expertises":1,"success":true,"partial_result":{"a":1},"tokens":3,"input_tokens":1,"output_tokens":2,"cost":3,"processing_time_ms":4}`},
		{"common block without batch counters", "attempt", `{"status":"running","model":"p::m","expertise":"all","attempt":1,"max_attempts":3,"job_type":"single_enrichment","is_paused":false,"total_models":1,"completed_models":0,"running_models":["p::m"],"current_model":"p::m","current_attempt":1,"last_error_summary":null}`},
		{"completed record_id empty", "completed", `{"status":"completed","result":{},"record_ids":["a","b"],"cost":0,"cost_usd":0,"record_id":""}`},
		{"extra key", "job_resumed", `{"status":"running","attempt":2,"after_event":3,"worker":"w1"}`},
		{"float count", "conflicts_detected", `{"status":"running","agreed_fields":1.5,"conflicted_fields":0,"total_fields":2}`},
	}
}
