package job_test

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
)

// sameAsJSON fails unless MarshalData writes m exactly as json.Marshal does,
// error included.
func sameAsJSON(t *testing.T, m map[string]any) {
	t.Helper()
	want, wantErr := json.Marshal(m)
	got, err := job.MarshalData(m)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("MarshalData(%#v): error %v, json.Marshal: %v", m, err, wantErr)
	}
	if string(got) != string(want) {
		t.Fatalf("MarshalData(%#v):\n got %s\nwant %s", m, got, want)
	}
	// A store writes the same value, keys in any order.
	if m == nil {
		return
	}
	stored, err := job.Event{Data: m}.StoredData()
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("StoredData(%#v): error %v, json.Marshal: %v", m, err, wantErr)
	}
	if err != nil {
		return
	}
	var a, b any
	if err := json.Unmarshal(stored, &a); err != nil {
		t.Fatalf("StoredData(%#v) wrote invalid JSON %s: %v", m, stored, err)
	}
	_ = json.Unmarshal(want, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("StoredData(%#v):\n got %s\nwant the value of %s", m, stored, want)
	}
}

func TestMarshalData(t *testing.T) {
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
		{"breakdown", map[string]any{"b": []map[string]any{{"k": 1}, nil}, "none": []map[string]any(nil)}},
		{"nested", map[string]any{"m": map[string]any{"z": []any{1, "x", nil, map[string]any{"k": []string{"a", "<b>"}}}, "a": nilList, "s": nilStrings}}},
		{"typed values", map[string]any{"code": job.CodeInternal, "at": time.Date(2026, 11, 26, 10, 0, 0, 5, time.UTC), "raw": json.RawMessage(`{"b": 1, "a":"<"}`), "state": job.Running}},
		{"nested typed", map[string]any{"list": []any{job.Completed, map[string]int{"b": 1, "a": 2}}, "bytes": []byte("hi")}},
		{"unsupported", map[string]any{"ch": make(chan int)}},
		{"nan", map[string]any{"x": math.NaN()}},
		{"inf in list", map[string]any{"x": []any{1.0, math.Inf(-1)}}},
	}
	many := map[string]any{}
	for i := range 40 { // more keys than MarshalData sorts on the stack
		many[fmt.Sprintf("k%02d", 39-i)] = i
	}
	cases = append(cases, struct {
		name string
		m    map[string]any
	}{"many keys", many})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { sameAsJSON(t, c.m) })
	}
}

// BenchmarkMarshalData encodes a stamped event, as every store and SSE line
// does for every event.
func BenchmarkMarshalData(b *testing.B) {
	var fields map[string]any // the merged map, built once
	benchEncode(b, func(e job.Event) ([]byte, error) {
		if fields == nil {
			fields = e.Fields()
		}
		return job.MarshalData(fields)
	})
}

// BenchmarkEventJSON encodes the same event as an SSE line does.
func BenchmarkEventJSON(b *testing.B) { benchEncode(b, job.Event.MarshalJSON) }

// BenchmarkStoredData encodes the same event as stores do.
func BenchmarkStoredData(b *testing.B) { benchEncode(b, job.Event.StoredData) }

func benchEncode(b *testing.B, encode func(job.Event) ([]byte, error)) {
	tr := job.NewTracker(job.TypeEnrichment)
	d := tr.Stamp(job.NewDraft(job.ExpertiseCompleted{Model: "p::m", Key: "k", Name: "Finance", Completed: 1, Total: 2,
		Success: true, PartialResult: map[string]any{"revenue": 1.25e6, "ticker": "ACME"}, InputTokens: 10,
		OutputTokens: 3, Cost: 167, KeySource: "global"}))
	e := job.Number("j", 0, time.Now(), []job.Draft{d})[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

// Every event payload is written the same way by both.
func TestMarshalDataPayloads(t *testing.T) {
	is := is.New(t)
	payloads := []job.Payload{
		job.ModelStarted{Model: "p::m", Strategy: "single_pass", Expertises: 2},
		job.ExpertiseCompleted{Model: "p::m", Key: "k", Name: "<Name>", Completed: 1, Total: 2, Success: true,
			PartialResult: map[string]any{"a": 1.25, "b": []any{"x"}}, InputTokens: 10, OutputTokens: 3, Cost: 167, KeySource: "global"},
		job.ModelCompleted{Model: "p::m", Success: true, Result: map[string]any{"name": "Acme & Co"}, RecordID: "r1", Cost: 1234567},
	}
	for _, p := range payloads {
		want, err := json.Marshal(p.Fields())
		is.NoErr(err)
		got, err := job.MarshalData(p.Fields())
		is.NoErr(err)
		is.Equal(string(got), string(want))
	}
}

// FuzzMarshalData: any JSON document, decoded, and any string and number,
// are written exactly as json.Marshal writes them.
func FuzzMarshalData(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":[1,"x",null,{"c":true}]}`, `{"f":1e-7,"g":12345678901234567890123}`, `"<&>"`, `"\u2028"`, `0.000001`, `[]`} {
		f.Add([]byte(s), "s\x00\xff<", 1.5, int64(-3))
	}
	f.Fuzz(func(t *testing.T, doc []byte, s string, x float64, n int64) {
		var v any
		_ = json.Unmarshal(doc, &v)
		sameAsJSON(t, map[string]any{"doc": v, "s": s, "x": x, "n": n, "list": []any{s, x, n, v}, s: []string{s}})
	})
}

// TestEventEncodings: an event stamped here (its own fields, its common
// block apart) is written as json.Marshal writes the merged map: SSE lines
// byte for byte, with event and job_id over every other field, and stored
// data as the same value. Its fields win over the block's, and the merged
// map (Fields) is the one the bytes hold.
func TestEventEncodings(t *testing.T) {
	tr := job.NewTracker(job.TypeBatchEnrichment)
	tr.SetTotalModels(2)
	pause := job.NewDraft(job.JobCancelled{Reason: "r"})
	pause.Data["status"], pause.Data["is_paused"] = string(job.Paused), true
	drafts := []job.Draft{
		job.NewDraft(job.BatchStarted{Total: 3, Selected: 3}),
		job.NewDraft(job.ModelStarted{Model: "p::<m>", Strategy: "single_pass", Expertises: 2}),
		job.NewDraft(job.Attempt{Model: "p::<m>", Expertise: "all", Attempt: 2, MaxAttempts: 5, Reason: "bad \"json\""}),
		job.NewDraft(job.ExpertiseCompleted{Model: "p::<m>", Key: "k", Name: "Zürich", Completed: 1, Total: 2, Success: true,
			PartialResult: map[string]any{"b": 1.5, "a": []any{"x", nil}}, InputTokens: 300, OutputTokens: 3, Cost: 167}),
		job.NewDraft(job.ModelCompleted{Model: "p::<m>", Success: true, Result: map[string]any{"name": "Acme"}, RecordID: "r1"}),
		// Every payload that lists its fields (pairer), each of its shapes.
		job.NewDraft(job.ExpertiseStarted{Model: "p::m", Key: "k", Name: "Zürich & Co"}),
		job.NewDraft(job.Attempt{Model: "p::m", Expertise: "all", Attempt: 1, MaxAttempts: 3, Reason: "not written"}),
		job.NewDraft(job.ExpertiseCompleted{Model: "p::m", Key: "k", Name: "n", Completed: 2, Total: 2, ErrorMessage: "bad <json>",
			ErrorCode: job.CodeOutputInvalid, KeySource: "organization", WebSearchCalls: 3, Cost: 1e12, ProcessingMS: 7}),
		job.NewDraft(job.ModelCompleted{Model: "p::m", PartialSuccess: true, ErrorMessage: "e", ErrorCode: job.CodeOutputInvalid,
			Cost: 3, InputTokens: 1, OutputTokens: 2, Breakdown: []job.Breakdown{{Key: "a", Name: "A\"", Success: true, Tokens: 3, Cost: 2},
				{Key: "b", Name: "B", Cost: 1}}}),
		job.NewDraft(job.JobCompleted{Result: map[string]any{"n": 1.0}, RecordID: "r1", RecordIDs: []string{"r1"}, Cost: 5}),
		job.NewDraft(job.JobCompleted{Result: map[string]any{"ok": 2.0}, RecordIDs: []string{"r1", "r2"}}),
		job.NewDraft(job.JobCompleted{Result: map[string]any{}, RecordID: "r1", RecordIDs: []string{"r1", "r2"}, Several: true,
			Results: map[string]any{"p::a": map[string]any{"n": 1.0}}, FailedModels: []string{"p::c"}}),
		job.NewDraft(job.JobCompleted{Result: map[string]any{}, RecordID: "r3", Several: true, Fused: true,
			Fusion: map[string]any{"conflicts": 1.0}, SourceModels: []string{"p::a", "p::b"}}),
		job.NewDraft(job.EntityCompleted{Index: 1}),
		pause,
		{Type: "custom", Data: map[string]any{"event": "shadowed", "job_id": "shadowed", "zz": 1}},
		{Type: "empty"},
	}
	for i, d := range drafts {
		d := tr.Stamp(d)
		e := job.Number("job-1", int64(i), time.Now(), []job.Draft{d})[0]
		t.Run(string(e.Type), func(t *testing.T) {
			is := is.New(t)
			fields := e.Fields()
			is.Equal(len(fields) >= 14, true) // the whole common block is there
			m := map[string]any{}
			for k, v := range fields {
				m[k] = v
			}
			m["event"], m["job_id"] = string(e.Type), e.JobID
			want, err := json.Marshal(m)
			is.NoErr(err)
			got, err := e.MarshalJSON()
			is.NoErr(err)
			is.Equal(string(got), string(want)) // an SSE line: json.Marshal's bytes
			stored, err := e.StoredData()
			is.NoErr(err)
			var a, b any
			is.NoErr(json.Unmarshal(stored, &a))
			fieldsJSON, err := json.Marshal(fields)
			is.NoErr(err)
			is.NoErr(json.Unmarshal(fieldsJSON, &b))
			is.Equal(a, b) // stored: the same value
			read := job.Event{JobID: e.JobID, Type: e.Type, Data: a.(map[string]any)}
			again, err := read.MarshalJSON()
			is.NoErr(err)
			is.Equal(string(again), string(got)) // read back from a store, it streams as before
		})
	}
	// The event's own fields win over the block's, in the merged map and
	// on the wire: a job_type of its own (which the tracker does not read).
	is := is.New(t)
	tr = job.NewTracker(job.TypeEnrichment)
	e := job.Number("j", 0, time.Now(), []job.Draft{tr.Stamp(job.Draft{Type: "custom", Data: map[string]any{"job_type": "own"}})})[0]
	is.Equal(e.Common.JobType, "single_enrichment") // the block's
	is.Equal(e.Fields()["job_type"], "own")
	is.Equal(e.Field("job_type"), "own")
	line, err := e.MarshalJSON()
	is.NoErr(err)
	is.True(strings.Contains(string(line), `"job_type":"own"`))
	is.True(!strings.Contains(string(line), "single_enrichment"))
}

// TestEventField: Field finds a field among the event's own and its common
// block's, as Fields holds them.
func TestEventField(t *testing.T) {
	is := is.New(t)
	tr := job.NewTracker(job.TypeEnrichment)
	e := job.Number("j", 0, time.Now(), []job.Draft{tr.Stamp(job.NewDraft(job.JobFailed{Code: job.CodeInternal, Msg: "m"}))})[0]
	for k, v := range e.Fields() {
		is.Equal(e.Field(k), v)
	}
	is.Equal(e.Field("status"), "failed") // the event's own, over the block's
	is.Equal(e.Field("job_type"), "single_enrichment")
	is.Equal(e.Field("nope"), nil)
}

// FuzzEventJSON: a stamped event with any fields, under any names (those of
// the common block, event and job_id included), streams as json.Marshal
// writes its merged fields with event and job_id, and stores the same value.
func FuzzEventJSON(f *testing.F) {
	f.Add("status", "paused", "x", 1.5, "model_started")
	f.Add("event", "<e>", "job_id", -2.0, "attempt")
	f.Add("running_models", "", "total_entities", 0.0, "completed")
	f.Fuzz(func(t *testing.T, k1, v1, k2 string, v2 float64, typ string) {
		if !utf8.ValidString(k1) || !utf8.ValidString(k2) {
			// Two keys that are not UTF-8 may both be written as
			// "\ufffd", and which one a decoder keeps then depends on
			// the order. Keys come from decoded JSON and from the code,
			// so they are always UTF-8.
			t.Skip()
		}
		tr := job.NewTracker(job.TypeBatchEnrichment)
		tr.Stamp(job.NewDraft(job.ModelStarted{Model: "p::m"}))
		d := tr.Stamp(job.Draft{Type: job.EventType(typ), Data: map[string]any{k1: v1, k2: v2}})
		e := job.Number("job\x00<1>", 3, time.Now(), []job.Draft{d})[0]
		m := map[string]any{}
		for k, v := range e.Fields() {
			m[k] = v
		}
		m["event"], m["job_id"] = typ, e.JobID
		want, wantErr := json.Marshal(m)
		got, err := e.MarshalJSON()
		if (err != nil) != (wantErr != nil) || string(got) != string(want) {
			t.Fatalf("MarshalJSON:\n got %s (%v)\nwant %s (%v)", got, err, want, wantErr)
		}
		if err != nil {
			return
		}
		stored, err := e.StoredData()
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		fields, _ := json.Marshal(e.Fields())
		if json.Unmarshal(stored, &a) != nil || json.Unmarshal(fields, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("StoredData %s, want the value of %s", stored, fields)
		}
	})
}

// A typed payload's map (Fields) holds each value in the type its map
// literal held before payloads listed pairs: readers switch on them.
func TestPairFieldTypes(t *testing.T) {
	mc := job.ModelCompleted{Model: "p::m", Success: true, Cost: 5, ProcessingMS: 7, InputTokens: 1, OutputTokens: 2,
		Breakdown: []job.Breakdown{{Key: "k", Cost: 5}}, Result: map[string]any{"a": 1.0}, RecordID: "r"}
	ec := job.ExpertiseCompleted{Model: "p::m", Completed: 1, Total: 2, Cost: 3, ProcessingMS: 4, WebSearchCalls: 1}
	jc := job.JobCompleted{Result: map[string]any{}, RecordIDs: []string{"r"}, Cost: 9}
	tests := []struct {
		name string
		p    job.Payload
		key  string
		want any
	}{
		{"model cost", mc, "cost", int64(5)},
		{"model ms", mc, "processing_time_ms", int64(7)},
		{"model tokens", mc, "input_tokens", 1},
		{"model usd", mc, "cost_usd", model.USD(5)},
		{"model breakdown", mc, "expertise_breakdown", []map[string]any{{"key": "k", "name": "", "success": false, "tokens": 0,
			"cost": int64(5), "cost_usd": model.USD(5)}}},
		{"model record", mc, "record_id", "r"},
		{"expertise counts", ec, "completed_expertises", 1},
		{"expertise cost", ec, "cost", int64(3)},
		{"expertise searches", ec, "web_search_calls", 1},
		{"expertise success", ec, "success", false},
		{"completed ids", jc, "record_ids", []string{"r"}},
		{"completed no record", jc, "record_id", nil},
		{"started index", job.ModelStarted{EntityIndex: 2}, "entity_index", 2},
		{"attempt", job.Attempt{Attempt: 2, Reason: "x"}, "reason", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, ok := tt.p.Fields()[tt.key]
			is.True(ok)
			is.Equal(got, tt.want)
			is.Equal(job.NewDraft(tt.p).Field(tt.key), tt.want) // Field finds the same without the map
		})
	}
}
