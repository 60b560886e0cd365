package jobcodec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/entityenrich/enrich/domain/job"
)

// Decode reads a stored event back into its payload and common block. Its
// data is decoded as JSON, each field read into the payload of its type
// (decoders), and the result written again: the payload stands only when
// it writes back exactly what a log reader served from the data (the same
// keys, values and nesting, sorted), so that reading an event never
// changes what clients get. An event of a type this version does not know,
// or whose data its payload would not write back (an earlier version's
// shape, or decisions whose keys encoding/json ordered), comes back as a
// job.Raw that keeps the data as it was, with what could be read of it.
func (Events) Decode(typ job.EventType, data []byte) (job.Payload, *job.Common, error) {
	dec := decoders[typ]
	if len(data) == 0 {
		return job.Raw{Type: typ, Data: data}, nil, nil
	}
	var f fields
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("jobcodec: stored %s event: %w", typ, err)
	}
	if dec == nil {
		return job.Raw{Type: typ, Data: data}, nil, nil
	}
	p := dec(f)
	ps := getPairs()
	defer putPairs(ps)
	*ps, _ = payloadPairs((*ps)[:0], p)
	if f["entity_index"] != nil && !hasKey(*ps, "entity_index") {
		p = job.OfEntity(p, f.int("entity_index")) // a batch entity's event
		*ps = append(*ps, intPair("entity_index", 0))
	}
	c := readCommon(f, func(k string) bool { return hasKey(*ps, k) })
	if !writesBack(f, p, c) {
		return job.Raw{Type: typ, Data: data, Typed: p}, nil, nil
	}
	return p, c, nil
}

func hasKey(ps []pair, k string) bool {
	for i := range ps {
		if ps[i].key == k {
			return true
		}
	}
	return false
}

// writesBack reports whether payload p and block c, written sorted, are
// exactly the fields f written sorted.
func writesBack(f fields, p job.Payload, c *job.Common) bool {
	ap, bp := scratch.Get().(*[]byte), scratch.Get().(*[]byte)
	a, err := appendEvent((*ap)[:0], p, (*commonBlock)(c), nil, true)
	if err == nil {
		*ap = a
	}
	b, err2 := appendMap((*bp)[:0], f, true)
	if err2 == nil {
		*bp = b
	}
	same := err == nil && err2 == nil && bytes.Equal(a, b)
	for _, x := range []*[]byte{ap, bp} {
		if cap(*x) <= maxScratch {
			scratch.Put(x)
		}
	}
	return same
}

// fields is an event's stored data, decoded. Its readers give the zero
// value for a key that is absent, null or of another type: writesBack
// finds those.
type fields map[string]any

func (f fields) str(k string) string { s, _ := f[k].(string); return s }
func (f fields) bool(k string) bool  { b, _ := f[k].(bool); return b }
func (f fields) int64(k string) int64 {
	n, _ := f[k].(float64)
	return int64(n)
}
func (f fields) int(k string) int            { return int(f.int64(k)) }
func (f fields) obj(k string) map[string]any { m, _ := f[k].(map[string]any); return m }
func (f fields) list(k string) []any         { l, _ := f[k].([]any); return l }
func (f fields) has(k string) bool           { _, ok := f[k]; return ok }
func (f fields) code(k string) job.ErrorCode { return job.ErrorCode(f.str(k)) }
func (f fields) each(k string) func(func(int, fields) bool) {
	return func(yield func(int, fields) bool) {
		for i, v := range f.list(k) {
			m, _ := v.(map[string]any)
			if !yield(i, m) {
				return
			}
		}
	}
}

// strs reads a list of strings: nil for null, empty for [].
func (f fields) strs(k string) []string {
	l, ok := f[k].([]any)
	if !ok {
		return nil
	}
	out := make([]string, len(l))
	for i, v := range l {
		out[i], _ = v.(string)
	}
	return out
}

// index reads an optional entity index.
func (f fields) index(k string) *int {
	if f[k] == nil {
		return nil
	}
	i := f.int(k)
	return &i
}

// decoders read each event type's payload from its stored fields, the
// inverse of payloadPairs. A type with two payloads tells them apart by a
// key only one of them writes.
var decoders = map[job.EventType]func(f fields) job.Payload{
	job.EventDatabaseSaved: func(f fields) job.Payload {
		return job.DatabaseOutcome{RecordID: f.str("record_id"), Database: f.obj("database"), EntityIndex: f.index("entity_index")}
	},
	job.EventDatabaseRejected: func(f fields) job.Payload {
		return job.DatabaseOutcome{RecordID: f.str("record_id"), Database: f.obj("database"), Rejected: true,
			EntityIndex: f.index("entity_index")}
	},
	job.EventStrategySelected: func(f fields) job.Payload {
		return job.StrategySelected{Strategy: f.str("strategy"), Requested: f.str("requested"), Reason: f.str("reason"),
			Signals: f["signals"]}
	},
	job.EventModelAutoSelected: func(f fields) job.Payload {
		return job.ModelAutoSelected{Model: f.str("model"), TaskType: f.str("task_type"), Source: f.str("source"),
			Pinned: f.bool("pinned")}
	},
	job.EventModelStarted: func(f fields) job.Payload {
		if !f.has("strategy") {
			return job.SchemaModelStarted{Model: f.str("model"), Sandbox: f.bool("sandbox")}
		}
		return job.ModelStarted{Model: f.str("model"), Strategy: f.str("strategy"), EntityIndex: f.int("entity_index"),
			Expertises: f.int("total_expertises"), Sandbox: f.bool("sandbox")}
	},
	job.EventExpertiseStarted: func(f fields) job.Payload {
		return job.ExpertiseStarted{Model: f.str("model"), Key: f.str("expertise_key"), Name: f.str("expertise_name")}
	},
	job.EventAttempt: func(f fields) job.Payload {
		return job.Attempt{Model: f.str("model"), Expertise: f.str("expertise"), Reason: f.str("reason"),
			Attempt: f.int("attempt"), MaxAttempts: f.int("max_attempts")}
	},
	job.EventProviderQueued: func(f fields) job.Payload {
		return job.ProviderQueued{Model: f.str("model"), Expertise: f.str("expertise"), Provider: f.str("provider")}
	},
	job.EventExpertiseCompleted: func(f fields) job.Payload {
		return job.ExpertiseCompleted{Model: f.str("model"), Key: f.str("expertise_key"), Name: f.str("expertise_name"),
			Completed: f.int("completed_expertises"), Total: f.int("total_expertises"), Success: f.bool("success"),
			PartialResult: f.obj("partial_result"), InputTokens: f.int("input_tokens"), OutputTokens: f.int("output_tokens"),
			Cost: f.int64("cost"), ProcessingMS: f.int64("processing_time_ms"), ErrorMessage: f.str("error_message"),
			ErrorCode: f.code("error_code"), KeySource: f.str("api_key_source"), WebSearchCalls: f.int("web_search_calls")}
	},
	job.EventModelCompleted: func(f fields) job.Payload {
		if f.has("samples") {
			return job.SamplesCompleted{Model: f.str("model"), Samples: objects(f.list("samples")),
				Requested: f.int("samples_requested"), Note: f.str("samples_note"), InputTokens: f.int("input_tokens"),
				OutputTokens: f.int("output_tokens"), Cost: f.int64("cost"), ProcessingMS: f.int64("processing_time_ms")}
		}
		p := job.ModelCompleted{Model: f.str("model"), Success: f.bool("success"), PartialSuccess: f.bool("partial_success"),
			Cost: f.int64("cost"), ProcessingMS: f.int64("processing_time_ms"), InputTokens: f.int("input_tokens"),
			OutputTokens: f.int("output_tokens"), Result: f.obj("result"), RecordID: f.str("record_id"),
			ErrorMessage: f.str("error_message"), ErrorCode: f.code("error_code")}
		for _, b := range f.each("expertise_breakdown") {
			p.Breakdown = append(p.Breakdown, job.Breakdown{Key: b.str("key"), Name: b.str("name"), Success: b.bool("success"),
				Tokens: b.int("tokens"), Cost: b.int64("cost")})
		}
		return p
	},
	job.EventError: func(f fields) job.Payload {
		if f.has("failed_models") {
			return job.SomeModelsFailed{Message: f.str("error_message"), FailedModels: f.strs("failed_models")}
		}
		return job.JobError{Code: f.code("error_code"), Msg: f.str("error_message")}
	},
	job.EventCompleted: func(f fields) job.Payload {
		return job.JobCompleted{Result: f.obj("result"), RecordID: f.str("record_id"), RecordIDs: f.strs("record_ids"),
			Cost: f.int64("cost"), Several: f.has("results"), Results: f.obj("results"), FailedModels: f.strs("failed_models"),
			Fused: f.bool("is_fused"), Fusion: f["fusion"], SourceModels: f.strs("source_models")}
	},
	job.EventFailed: func(f fields) job.Payload {
		return job.JobFailed{Code: f.code("error_code"), Msg: f.str("error_message")}
	},
	job.EventCancelled: func(f fields) job.Payload {
		return job.JobCancelled{Reason: f.str("reason"), Partial: f.has("result"), Result: f.obj("result")}
	},
	job.EventJobResumed: func(f fields) job.Payload {
		return job.JobResumed{Attempt: f.int("attempt"), AfterEvent: f.int64("after_event")}
	},
	job.EventJobContinued: func(f fields) job.Payload {
		p := job.JobContinued{Answers: job.Answers{}, Round: f.int("round")}
		for id, v := range f.obj("answers") {
			a := fields(asObject(v))
			p.Answers[id] = job.Answer{OptionIDs: a.strs("option_ids"), Text: a.str("text")}
		}
		return p
	},
	job.EventClassificationStarted: func(f fields) job.Payload { return job.ClassificationStarted{Model: f.str("model")} },
	job.EventClassificationCompleted: func(f fields) job.Payload {
		return job.ClassificationCompleted{Model: f.str("model"), Success: f.bool("success"),
			Classification: f.obj("classification"), ErrorMessage: f.str("error_message")}
	},
	job.EventClassificationMismatchPause: func(f fields) job.Payload {
		return job.ClassificationMismatchPause{Classification: f.obj("classification"), TimeoutSeconds: f.int("timeout_seconds")}
	},
	job.EventBatchStarted: func(f fields) job.Payload {
		return job.BatchStarted{Total: f.int("total_entities"), Selected: f.int("selected_entities")}
	},
	job.EventEntityStarted: func(f fields) job.Payload {
		return job.EntityStarted{Index: f.int("entity_index"), Label: f.str("entity_label")}
	},
	job.EventEntityCompleted: func(f fields) job.Payload {
		p := job.EntityCompleted{Index: f.int("entity_index"), Label: f.str("entity_label"), Success: f.bool("success"),
			Cost: f.int64("total_cost"), ProcessingMS: f.int64("total_processing_time_ms"), Error: f.str("error"),
			ErrorCode: f.code("error_code"), RecordID: f.str("record_id")}
		for _, r := range f.each("results") {
			p.Results = append(p.Results, job.EntityResult{Model: r.str("model"), Success: r.bool("success"),
				Result: r.obj("result"), RecordID: r.str("record_id"), Cost: r.int64("cost"), CostUSD: floatOf(r["cost_usd"]),
				InputTokens: r.int("input_tokens"), OutputTokens: r.int("output_tokens"),
				ProcessingMS: r.int64("processing_time_ms"), Strategy: r.str("strategy"), Sandbox: r.bool("sandbox"),
				ErrorMessage: r.str("error_message"), ErrorCode: r.str("error_code"), WebSearchCalls: r.int("web_search_calls")})
		}
		return p
	},
	job.EventEntitySkipped: func(f fields) job.Payload {
		return job.EntitySkipped{Index: f.int("entity_index"), Label: f.str("entity_label"), Code: f.str("code"),
			Reason: f.str("reason"), Classification: f.obj("classification"), Paths: f.strs("paths")}
	},
	job.EventBatchCompleted: func(f fields) job.Payload {
		return job.BatchCompleted{Summary: f.obj("summary"), StoppedEarlyReason: f.str("stopped_early_reason")}
	},
	job.EventFusionStarted: func(f fields) job.Payload {
		return job.FusionStarted{SourceRecordIDs: f.strs("source_record_ids"), ArbitrationModel: f.str("arbitration_model"),
			EntityIndex: f.index("entity_index")}
	},
	job.EventConflictsDetected: func(f fields) job.Payload {
		return job.ConflictsDetected{Agreed: f.int("agreed_fields"), Conflicted: f.int("conflicted_fields"),
			Total: f.int("total_fields")}
	},
	job.EventArbitrationStarted: func(f fields) job.Payload {
		return job.ArbitrationStarted{Model: f.str("arbitration_model"), Conflicts: f.int("conflict_count"),
			Escalated: f.bool("escalated")}
	},
	job.EventArbitrationCompleted: func(f fields) job.Payload {
		p := job.ArbitrationCompleted{Model: f.str("arbitration_model"), Success: f.bool("success"),
			Fallback: f.bool("fallback_to_rule_based"), Cost: f.int64("cost"), InputTokens: f.int("input_tokens"),
			OutputTokens: f.int("output_tokens"), ErrorMessage: f.str("error_message")}
		for _, d := range f.each("decisions") {
			p.Decisions = append(p.Decisions, job.Decision{Path: d.str("path"), Value: d["value"], Reason: d.str("reason")})
		}
		return p
	},
	job.EventFusionCompleted: func(f fields) job.Payload {
		return job.FusionCompleted{Success: f.bool("success"), Merged: f.obj("merged_result"), Report: f["conflict_report"],
			Summary: f["fusion"], Provenance: f["provenance"], RecordID: f.str("record_id"), Cost: f.int64("cost"),
			ProcessingMS: f.int64("processing_time_ms"), InputTokens: f.int("input_tokens"), OutputTokens: f.int("output_tokens"),
			ValidationWarnings: f.strs("validation_warnings"), ErrorMessage: f.str("error_message"),
			ArbiterUsed: f.str("arbitration_model_used"), KeySource: f.str("arbitration_key_source"),
			EntityIndex: f.index("entity_index")}
	},
	job.EventAttachmentCoherence: func(f fields) job.Payload {
		p := job.AttachmentCoherence{Mode: f.str("mode"), ObjectType: f.str("object_type"), Reason: f.str("reason"),
			InputTokens: f.int("input_tokens"), OutputTokens: f.int("output_tokens"), Cost: f.int64("cost")}
		if r := f.obj("reference_attachment"); r != nil {
			rf := fields(r)
			p.Reference = &job.AttachmentFile{Index: rf.int("index"), Filename: rf.str("filename")}
		}
		for _, e := range f.each("excluded_attachments") {
			p.Excluded = append(p.Excluded, job.AttachmentFile{Index: e.int("index"), Filename: e.str("filename")})
		}
		return p
	},
	job.EventSampleInstanceRoster: func(f fields) job.Payload {
		return job.SampleInstanceRoster{Instances: f.strs("instances")}
	},
	job.EventSampleInstanceProgress: func(f fields) job.Payload {
		return job.SampleInstanceProgress{Completed: f.int("completed"), Total: f.int("total"), Index: f.int("index"),
			Instance: f.str("instance"), Sample: f.obj("sample"), InputTokens: f.int("input_tokens"),
			OutputTokens: f.int("output_tokens"), Cost: f.int64("cost")}
	},
	job.EventSampleClarificationPause: func(f fields) job.Payload {
		p := job.SampleClarificationPause{EntityTitle: f.str("entity_title"), Round: f.int("round"),
			SourceMode: f.str("source_mode"), TimeoutSeconds: f.int("timeout_seconds")}
		for _, q := range f.each("questions") {
			sq := job.SampleQuestion{ID: q.str("id"), Label: q.str("label"), Text: q.str("text"),
				AllowMultiple: q.bool("allow_multiple"), DefaultOptionID: q.str("default_option_id")}
			for _, o := range q.each("options") {
				sq.Options = append(sq.Options, job.SampleOption{ID: o.str("id"), Label: o.str("label")})
			}
			p.Questions = append(p.Questions, sq)
		}
		return p
	},
}

// objects reads a list of objects (a null element is a nil map).
func objects(l []any) []map[string]any {
	if l == nil {
		return nil
	}
	out := make([]map[string]any, len(l))
	for i, v := range l {
		out[i] = asObject(v)
	}
	return out
}

func asObject(v any) map[string]any { m, _ := v.(map[string]any); return m }

func floatOf(v any) float64 { f, _ := v.(float64); return f }
