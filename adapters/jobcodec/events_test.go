package jobcodec

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
)

// sameAsJSON fails unless appendJSON writes v exactly as json.Marshal
// does, error included, and unsorted the same value.
func sameAsJSON(t *testing.T, v any) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := appendJSON(nil, v, true)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendJSON(%#v): error %v, json.Marshal: %v", v, err, wantErr)
	}
	if string(got) != string(want) {
		t.Fatalf("appendJSON(%#v):\n got %s\nwant %s", v, got, want)
	}
	if err != nil {
		return
	}
	unsorted, err := appendJSON(nil, v, false)
	if err != nil {
		t.Fatalf("appendJSON(%#v) unsorted: %v", v, err)
	}
	var a, b any
	if err := json.Unmarshal(unsorted, &a); err != nil {
		t.Fatalf("appendJSON(%#v) unsorted wrote invalid JSON %s: %v", v, unsorted, err)
	}
	_ = json.Unmarshal(want, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("appendJSON(%#v) unsorted:\n got %s\nwant the value of %s", v, unsorted, want)
	}
}

// TestAppendJSONValues: every kind of value an event holds is written as
// json.Marshal writes it.
func TestAppendJSONValues(t *testing.T) {
	var nilMap map[string]any
	var nilList []any
	var nilStrings []string
	cases := []struct {
		name string
		m    map[string]any
	}{
		{"empty", map[string]any{}},
		{"nil map", nilMap},
		{"scalars", map[string]any{"s": "plain", "t": true, "f": false, "n": nil, "i": 42, "i64": int64(-7), "zero": 0}},
		{"sorted keys", map[string]any{"b": 1, "a": 2, "B": 3, "é": 4, "": 5, "a<b": 6}},
		{"escapes", map[string]any{"q": `say "hi"`, "bs": `a\b`, "html": "<a href='x'>&</a>", "ctl": "tab\tnl\ncr\r\x01\b\f"}},
		{"unicode", map[string]any{"u": "Zürich – 東京", "sep": "a\u2028b\u2029c", "bad": "\xff\xfe", "lone": string([]byte{0xed, 0xa0, 0x80})}},
		{"floats", map[string]any{"a": 0.1, "b": 1.5e-7, "c": 1e21, "d": 123456789.125, "e": -0.0, "f": 3.0, "g": 1e-6, "h": 9.99e20, "i": math.SmallestNonzeroFloat64, "j": math.MaxFloat64}},
		{"float32 and other ints", map[string]any{"f32": float32(0.1), "i32": int32(5), "u": uint(9), "u8": uint8(200)}},
		{"list of maps", map[string]any{"b": []map[string]any{{"k": 1}, nil}, "none": []map[string]any(nil)}},
		{"nested", map[string]any{"m": map[string]any{"z": []any{1, "x", nil, map[string]any{"k": []string{"a", "<b>"}}}, "a": nilList, "s": nilStrings}}},
		{"typed values", map[string]any{"code": job.CodeInternal, "at": time.Date(2026, 11, 26, 10, 0, 0, 5, time.UTC), "raw": json.RawMessage(`{"b": 1, "a":"<"}`), "state": job.Running}},
		{"nested typed", map[string]any{"list": []any{job.Completed, map[string]int{"b": 1, "a": 2}}, "bytes": []byte("hi")}},
		{"decisions", map[string]any{"d": []job.Decision{{Path: "a<", Value: map[string]any{"z": 1, "y": []any{2.5}}, Reason: "r"}, {Path: "b"}}}},
		{"unsupported", map[string]any{"ch": make(chan int)}},
		{"nan", map[string]any{"x": math.NaN()}},
		{"inf in list", map[string]any{"x": []any{1.0, math.Inf(-1)}}},
	}
	many := map[string]any{}
	for i := range 40 { // more keys than a pooled list holds at first
		many[fmt.Sprintf("k%02d", 39-i)] = i
	}
	cases = append(cases, struct {
		name string
		m    map[string]any
	}{"many keys", many})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { sameAsJSON(t, c.m) })
	}
	// The lists of this package are written as encoding/json writes what
	// they stand for.
	t.Run("decisions", func(t *testing.T) {
		ds := []job.Decision{{Path: "a<", Value: map[string]any{"z": 1.0, "y": []any{2.5}}, Reason: "r"}, {Path: "b"}}
		want, _ := json.Marshal(ds)
		got, err := appendJSON(nil, decisions(ds), true)
		is.New(t).NoErr(err)
		is.New(t).Equal(string(got), string(want))
	})
}

// FuzzAppendJSON: any JSON document, decoded, and any string and number,
// are written exactly as json.Marshal writes them.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":[1,"x",null,{"c":true}]}`, `{"f":1e-7,"g":12345678901234567890123}`, `"<&>"`, `"\u2028"`, `0.000001`, `[]`} {
		f.Add([]byte(s), "s\x00\xff<", 1.5, int64(-3))
	}
	f.Fuzz(func(t *testing.T, doc []byte, s string, x float64, n int64) {
		var v any
		_ = json.Unmarshal(doc, &v)
		sameAsJSON(t, map[string]any{"doc": v, "s": s, "x": x, "n": n, "list": []any{s, x, n, v}, s: []string{s}})
	})
}

// FuzzDecode: whatever a log holds for an event of a type this version
// knows, reading it back serves exactly what a log reader served before the
// codec typed events: the stored object with event and job_id, as
// json.Marshal writes it.
func FuzzDecode(f *testing.F) {
	f.Add("attempt", []byte(`{"status":"running","model":"m","expertise":"e","attempt":2,"max_attempts":3,"reason":"r"}`))
	f.Add("model_completed", []byte(`{"status":"running","samples":[{"a":1},null],"model":"m","success":true}`))
	f.Add("completed", []byte(`{"status":"completed","result":{},"record_ids":null,"cost":0,"cost_usd":0,"record_id":null,"job_type":"x"}`))
	f.Add("expertise_started", []byte(`{"status":"running","model":"m","expertise":"k","expertise_key":"k","expertise_name":"K","entity_index":3}`))
	f.Add("job_continued", []byte(`{"status":"running","is_paused":false,"answers":{"q":{"option_ids":["a"],"text":""}},"round":1}`))
	f.Add("unknown", []byte(`{"event":"x","z":[1,2]}`))
	f.Add("error", []byte(`not json`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || m == nil {
			return
		}
		for k := range m {
			if !utf8.ValidString(k) {
				t.Skip() // two keys may both be written as "\ufffd"
			}
		}
		codec := Events{}
		p, c, err := codec.Decode(job.EventType(typ), data)
		if err != nil {
			t.Fatalf("Decode(%s, %s): %v", typ, data, err)
		}
		m["event"], m["job_id"] = typ, "job<1>"
		want, err := json.Marshal(m)
		if err != nil {
			return
		}
		got, err := codec.AppendJSON(nil, job.Event{JobID: "job<1>", Type: job.EventType(typ), Payload: p, Common: c})
		if err != nil || string(got) != string(want) {
			t.Fatalf("Decode(%s, %s) serves\n%s (%v)\nwant\n%s", typ, data, got, err, want)
		}
	})
}

// TestDecodeTyped: a stored event comes back as the payload it was written
// from (numbers inside maps as JSON gives them back; a batch entity's tag
// on a payload that carries its index itself is that index), its common
// block apart.
func TestDecodeTyped(t *testing.T) {
	res := map[string]any{"name": "Acme", "n": 1.5}
	ix := 2
	common := &job.Common{JobType: "batch_enrichment", Status: job.Running, TotalModels: 2, RunningModels: []string{"a"},
		CurrentModel: "a", TotalEntities: 3, CompletedEntities: 1}
	for _, p := range []job.Payload{
		job.ExpertiseCompleted{Model: "p:m", Key: "k", Name: "K", Completed: 1, Total: 2, Success: true, PartialResult: res,
			InputTokens: 1, OutputTokens: 2, Cost: 3, ProcessingMS: 4, KeySource: "global", WebSearchCalls: 2},
		job.ModelCompleted{Model: "p:m", Success: true, Result: res, RecordID: "r", Cost: 3, InputTokens: 1, OutputTokens: 2,
			ProcessingMS: 4, Breakdown: []job.Breakdown{{Key: "k", Name: "K", Success: true, Tokens: 3, Cost: 3}}},
		job.ModelCompleted{Model: "p:m", ErrorMessage: "boom", ErrorCode: job.CodeOutputInvalid},
		job.SchemaModelStarted{Model: "p:m", Sandbox: true},
		job.SamplesCompleted{Model: "p:m", Samples: []map[string]any{res, nil}, Requested: 2, Note: "n", InputTokens: 1,
			OutputTokens: 2, Cost: 3, ProcessingMS: 4},
		job.SomeModelsFailed{Message: "m", FailedModels: []string{"x"}},
		job.JobError{Code: job.CodeInternal, Msg: "m"},
		job.JobCompleted{Result: res, RecordID: "r", RecordIDs: []string{"r"}, Cost: 3, Several: true, Results: map[string]any{},
			FailedModels: []string{"x:y"}, Fused: true, Fusion: map[string]any{"n": 1.0}, SourceModels: []string{"a:b"}},
		job.PartialCancellation("asked", res)[0].Payload,
		job.JobContinued{Answers: job.Answers{"q": {OptionIDs: []string{"a"}, Text: "t"}, "r": {OptionIDs: []string{}}}, Round: 2},
		job.OfEntity(job.EntityCompleted{Index: 1, Label: "L", Success: false, Results: []job.EntityResult{{Model: "p:m", Cost: 3,
			CostUSD: 0.000003, ErrorMessage: "e", ErrorCode: "c", Strategy: "s"}}, Error: "boom", ErrorCode: job.CodeOutputInvalid}, 1),
		job.OfEntity(job.ExpertiseStarted{Model: "m", Key: "k", Name: "n"}, 4),
		job.ArbitrationCompleted{Model: "p:m", Success: true, Decisions: []job.Decision{{Path: "a", Value: "x"}}, Cost: 3,
			InputTokens: 1, OutputTokens: 2},
		job.FusionStarted{SourceRecordIDs: []string{"a"}, EntityIndex: &ix},
		job.SampleInstanceProgress{Completed: 1, Total: 2, Index: 1, Instance: "i", Sample: res, InputTokens: 1, OutputTokens: 2, Cost: 3},
		job.SampleClarificationPause{Questions: []job.SampleQuestion{{ID: "q", Label: "Q", Text: "?",
			Options: []job.SampleOption{{ID: "o", Label: "O"}}, DefaultOptionID: "o"}}, Round: 1, TimeoutSeconds: 5},
	} {
		t.Run(fmt.Sprintf("%s %T", p.EventType(), job.Inner(p)), func(t *testing.T) {
			is := is.New(t)
			codec := Events{}
			stamped := *common
			stamped.Status = job.StatusOf(p) // as the tracker stamps it
			e := job.Event{JobID: "j", Seq: 1, Type: p.EventType(), Payload: p, Common: &stamped}
			b, err := codec.Encode(e)
			is.NoErr(err)
			got, c, err := codec.Decode(e.Type, b)
			is.NoErr(err)
			is.Equal(job.Inner(got), job.Inner(p))
			i, tagged := job.EntityIndex(job.Event{Payload: got})
			wantI, wantTagged := job.EntityIndex(e)
			is.Equal(tagged, wantTagged)
			is.Equal(i, wantI)
			is.Equal(c, &stamped)
		})
	}
}

// TestEncodeUnknownPayload: a payload of a type the codec has no wire form
// for is an error, not an event written wrong.
func TestEncodeUnknownPayload(t *testing.T) {
	is := is.New(t)
	_, err := Events{}.Encode(job.Event{Type: "x", Payload: strange{}})
	is.True(err != nil)
	_, err = Events{}.AppendJSON(nil, job.Event{Type: "x", Payload: strange{}})
	is.True(err != nil)
}

type strange struct{}

func (strange) EventType() job.EventType { return "strange" }

// BenchmarkAppendJSON encodes a stamped event as an SSE line does.
func BenchmarkAppendJSON(b *testing.B) {
	buf := make([]byte, 0, 4096)
	benchEncode(b, func(e job.Event) ([]byte, error) { return Events{}.AppendJSON(buf[:0], e) })
}

// BenchmarkEncode encodes the same event as stores do.
func BenchmarkEncode(b *testing.B) { benchEncode(b, Events{}.Encode) }

// BenchmarkDecode reads the same event back from a store.
func BenchmarkDecode(b *testing.B) {
	stored, _ := Events{}.Encode(benchEvent())
	benchEncode(b, func(e job.Event) ([]byte, error) {
		_, _, err := Events{}.Decode(e.Type, stored)
		return nil, err
	})
}

func benchEvent() job.Event {
	tr := job.NewTracker(job.TypeEnrichment)
	d := tr.Stamp(job.NewDraft(job.ExpertiseCompleted{Model: "p::m", Key: "k", Name: "Finance", Completed: 1, Total: 2,
		Success: true, PartialResult: map[string]any{"revenue": 1.25e6, "ticker": "ACME"}, InputTokens: 10,
		OutputTokens: 3, Cost: 167, KeySource: "global"}))
	return job.Number("j", 0, time.Now(), []job.Draft{d})[0]
}

func benchEncode(b *testing.B, encode func(job.Event) ([]byte, error)) {
	e := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPayloadWireForm pins the JSON of every event payload (without its
// common block, keys sorted): exactly what clients read, keys left out
// included.
func TestPayloadWireForm(t *testing.T) {
	tests := []struct {
		p    job.Payload
		want string
	}{
		{job.StrategySelected{Strategy: "single_pass", Requested: "auto", Reason: "r", Signals: map[string]any{"domains": 1}},
			`{"reason":"r","requested":"auto","signals":{"domains":1},"status":"running","strategy":"single_pass"}`},
		{job.ModelAutoSelected{Model: "m::x", TaskType: "enrichment", Source: "first", Pinned: true},
			`{"model":"m::x","pinned":true,"source":"first","status":"running","task_type":"enrichment"}`},
		{job.ModelStarted{Model: "m::x", Strategy: "multi_expertise", Expertises: 3, Sandbox: true},
			`{"entity_index":0,"model":"m::x","sandbox":true,"status":"running","strategy":"multi_expertise","total_expertises":3}`},
		{job.ExpertiseStarted{Model: "m::x", Key: "general", Name: "General"},
			`{"expertise":"general","expertise_key":"general","expertise_name":"General","model":"m::x","status":"running"}`},
		{job.Attempt{Model: "m::x", Expertise: "general", Attempt: 1, MaxAttempts: 3, Reason: "ignored on the first"},
			`{"attempt":1,"expertise":"general","max_attempts":3,"model":"m::x","status":"running"}`},
		{job.Attempt{Model: "m::x", Expertise: "general", Attempt: 2, MaxAttempts: 3, Reason: "output_invalid: x"},
			`{"attempt":2,"expertise":"general","max_attempts":3,"model":"m::x","reason":"output_invalid: x","status":"running"}`},
		{job.ExpertiseCompleted{Model: "m::x", Key: "g", Name: "G", Completed: 1, Total: 2, Success: true,
			PartialResult: map[string]any{"a": 1}, InputTokens: 3, OutputTokens: 4, Cost: 5, ProcessingMS: 6},
			`{"completed_expertises":1,"cost":5,"cost_usd":0.000005,"expertise_key":"g","expertise_name":"G","input_tokens":3,"model":"m::x","output_tokens":4,"partial_result":{"a":1},"processing_time_ms":6,"status":"running","success":true,"tokens":7,"total_expertises":2}`},
		{job.ExpertiseCompleted{Model: "m::x", Key: "g", Name: "G", Completed: 1, Total: 1, Success: true,
			PartialResult: map[string]any{"a": 1}, InputTokens: 3, OutputTokens: 4, Cost: 5, ProcessingMS: 6, WebSearchCalls: 2},
			`{"completed_expertises":1,"cost":5,"cost_usd":0.000005,"expertise_key":"g","expertise_name":"G","input_tokens":3,"model":"m::x","output_tokens":4,"partial_result":{"a":1},"processing_time_ms":6,"status":"running","success":true,"tokens":7,"total_expertises":1,"web_search_calls":2}`},
		{job.ExpertiseCompleted{Model: "m::x", Key: "g", Name: "G", Completed: 1, Total: 1, ErrorMessage: "e", ErrorCode: job.CodeProviderTimeout},
			`{"completed_expertises":1,"cost":0,"cost_usd":0,"error_code":"provider_timeout","error_message":"e","expertise_key":"g","expertise_name":"G","input_tokens":0,"model":"m::x","output_tokens":0,"partial_result":null,"processing_time_ms":0,"status":"running","success":false,"tokens":0,"total_expertises":1}`},
		{job.ModelCompleted{Model: "m::x", Success: true, Cost: 1, InputTokens: 2, OutputTokens: 3, ProcessingMS: 4,
			Breakdown: []job.Breakdown{{Key: "g", Name: "G", Success: true, Tokens: 5, Cost: 1}}, Result: map[string]any{"a": 1}, RecordID: "r1"},
			`{"cancelled":false,"cost":1,"cost_usd":0.000001,"expertise_breakdown":[{"cost":1,"cost_usd":0.000001,"key":"g","name":"G","success":true,"tokens":5}],"input_tokens":2,"model":"m::x","output_tokens":3,"partial_success":false,"processing_time_ms":4,"record_id":"r1","result":{"a":1},"status":"running","success":true}`},
		{job.ModelCompleted{Model: "m::x", ErrorMessage: "e", ErrorCode: job.CodeOutputInvalid},
			`{"cancelled":false,"cost":0,"cost_usd":0,"error_code":"model_output_invalid","error_message":"e","expertise_breakdown":[],"input_tokens":0,"model":"m::x","output_tokens":0,"partial_success":false,"processing_time_ms":0,"status":"running","success":false}`},
		{job.SomeModelsFailed{Message: "1 of 2 models failed", FailedModels: []string{"m::y"}},
			`{"error_message":"1 of 2 models failed","failed_models":["m::y"],"status":"running"}`},
		{job.JobCompleted{Result: map[string]any{"a": 1}, RecordID: "r1", RecordIDs: []string{"r1"}, Cost: 2},
			`{"cost":2,"cost_usd":0.000002,"record_id":"r1","record_ids":["r1"],"result":{"a":1},"status":"completed"}`},
		{job.JobCompleted{Result: map[string]any{}, RecordID: "r1", RecordIDs: []string{"r1"}, Several: true, Results: map[string]any{}},
			`{"cost":0,"cost_usd":0,"failed_models":null,"is_fused":false,"record_id":"r1","record_ids":["r1"],"result":{},"results":{},"status":"completed"}`},
		{job.JobCompleted{Result: map[string]any{}, RecordID: "f", RecordIDs: []string{"r1", "r2", "f"}, Several: true, Results: map[string]any{},
			Fused: true, Fusion: map[string]any{"method": "rule_based"}, SourceModels: []string{"a::x", "b::y"}},
			`{"cost":0,"cost_usd":0,"failed_models":null,"fusion":{"method":"rule_based"},"is_fused":true,"record_id":"f","record_ids":["r1","r2","f"],"result":{},"results":{},"source_models":["a::x","b::y"],"status":"completed"}`},
		{job.ConflictsDetected{Agreed: 2, Conflicted: 1, Total: 3}, `{"agreed_fields":2,"conflicted_fields":1,"status":"running","total_fields":3}`},
		{job.FusionStarted{SourceRecordIDs: []string{"r1"}}, `{"arbitration_model":null,"source_record_ids":["r1"],"status":"running"}`},
		{job.JobError{Code: job.CodeProviderTimeout, Msg: "m"}, `{"error_code":"provider_timeout","error_message":"m","status":"running"}`},
		{job.JobFailed{Code: job.CodeProviderTimeout, Msg: "m"}, `{"error_code":"provider_timeout","error_message":"m","status":"failed"}`},
		{job.JobCancelled{Reason: "r"}, `{"reason":"r","status":"cancelled"}`},
		{job.JobResumed{Attempt: 2, AfterEvent: 9}, `{"after_event":9,"attempt":2,"status":"running"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.p.EventType()), func(t *testing.T) {
			is := is.New(t)
			b, err := appendEvent(nil, tt.p, nil, nil, true)
			is.NoErr(err)
			is.Equal(string(b), tt.want)
		})
	}
}
