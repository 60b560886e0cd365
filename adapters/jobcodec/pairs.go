package jobcodec

import (
	"slices"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
)

// kind says where a pair holds its value.
type kind uint8

const (
	kindAny    kind = iota // v, written by appendJSON
	kindString             // s
	kindInt                // n
	kindFloat              // f
	kindBool               // b
	kindNull               // null
)

// pair is one field of an event's data. A payload lists its fields as
// pairs (payloadPairs), the plain values unboxed: an event then costs no
// map and no boxing, and the encoder writes the pairs as they are. A map
// (an event this version cannot type) is written through pairs of
// kindAny.
type pair struct {
	key  string
	kind kind
	b    bool
	n    int64
	f    float64
	s    string
	v    any
}

func strPair(k, s string) pair           { return pair{key: k, kind: kindString, s: s} }
func intPair(k string, n int) pair       { return pair{key: k, kind: kindInt, n: int64(n)} }
func int64Pair(k string, n int64) pair   { return pair{key: k, kind: kindInt, n: n} }
func floatPair(k string, f float64) pair { return pair{key: k, kind: kindFloat, f: f} }
func boolPair(k string, b bool) pair     { return pair{key: k, kind: kindBool, b: b} }
func anyPair(k string, v any) pair       { return pair{key: k, kind: kindAny, v: v} }
func usdPair(k string, cost int64) pair  { return floatPair(k, model.USD(cost)) }
func nullPair(k string) pair             { return pair{key: k, kind: kindNull} }
func nullablePair(k string, s string) pair { // s, or null when it is empty
	if s == "" {
		return nullPair(k)
	}
	return strPair(k, s)
}

// mapPairs appends m's fields to ps.
func mapPairs(ps []pair, m map[string]any) []pair {
	for k, v := range m {
		ps = append(ps, anyPair(k, v))
	}
	return ps
}

func sortPairs(ps []pair) {
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.key, b.key) })
}

// pairPool keeps the scratch lists the encoder fills; a list past maxPairs
// is dropped.
var pairPool = sync.Pool{New: func() any { s := make([]pair, 0, 32); return &s }}

const maxPairs = 256

func getPairs() *[]pair { return pairPool.Get().(*[]pair) }

func putPairs(ps *[]pair) {
	if cap(*ps) > maxPairs {
		return
	}
	clear(*ps) // drop what the values point at (past len: cleared before)
	*ps = (*ps)[:0]
	pairPool.Put(ps)
}

// payloadPairs appends the fields of payload p, in the order stores write
// them: its status first, then its own. A batch entity's tag adds (or
// sets) entity_index. False for a payload of a type it does not know.
func payloadPairs(ps []pair, p job.Payload) ([]pair, bool) {
	if x, ok := p.(job.InEntity); ok {
		ps, ok = payloadPairs(ps, x.Payload)
		for i := range ps {
			if ps[i].key == "entity_index" {
				ps[i] = intPair("entity_index", x.Index)
				return ps, ok
			}
		}
		return append(ps, intPair("entity_index", x.Index)), ok
	}
	ps = append(ps, strPair("status", string(job.StatusOf(p))))
	if out, ok := runPairs(ps, p); ok {
		return out, true
	}
	if out, ok := batchPairs(ps, p); ok {
		return out, true
	}
	return otherPairs(ps, p)
}

// runPairs lists the fields of a run's events: an enrichment's, and every
// job's ends.
func runPairs(ps []pair, p job.Payload) ([]pair, bool) {
	switch x := p.(type) {
	case job.StrategySelected:
		return append(ps, strPair("strategy", x.Strategy), strPair("requested", x.Requested), strPair("reason", x.Reason),
			anyPair("signals", x.Signals)), true
	case job.ModelAutoSelected:
		return append(ps, strPair("model", x.Model), strPair("task_type", x.TaskType), boolPair("pinned", x.Pinned),
			strPair("source", x.Source)), true
	case job.ModelStarted:
		return append(ps, strPair("model", x.Model), intPair("entity_index", x.EntityIndex), strPair("strategy", x.Strategy),
			intPair("total_expertises", x.Expertises), boolPair("sandbox", x.Sandbox)), true
	case job.ExpertiseStarted:
		return append(ps, strPair("model", x.Model), strPair("expertise", x.Key), strPair("expertise_key", x.Key),
			strPair("expertise_name", x.Name)), true
	case job.Attempt:
		ps = append(ps, strPair("model", x.Model), strPair("expertise", x.Expertise), intPair("attempt", x.Attempt),
			intPair("max_attempts", x.MaxAttempts))
		if x.Attempt > 1 {
			ps = append(ps, strPair("reason", x.Reason))
		}
		return ps, true
	case job.ProviderQueued:
		return append(ps, strPair("model", x.Model), strPair("expertise", x.Expertise), strPair("provider", x.Provider)), true
	case job.ExpertiseCompleted:
		return expertiseCompletedPairs(ps, x), true
	case job.ModelCompleted:
		return modelCompletedPairs(ps, x), true
	case job.SomeModelsFailed:
		return append(ps, strPair("error_message", x.Message), anyPair("failed_models", x.FailedModels)), true
	case job.JobCompleted:
		return completedPairs(ps, x), true
	case job.JobError:
		return append(ps, strPair("error_code", string(x.Code)), strPair("error_message", x.Msg)), true
	case job.JobFailed:
		return append(ps, strPair("error_code", string(x.Code)), strPair("error_message", x.Msg)), true
	case job.JobCancelled:
		ps = append(ps, strPair("reason", x.Reason))
		if x.Partial {
			ps = append(ps, anyPair("result", x.Result))
		}
		return ps, true
	case job.JobResumed:
		return append(ps, intPair("attempt", x.Attempt), int64Pair("after_event", x.AfterEvent)), true
	case job.JobContinued:
		return append(ps, boolPair("is_paused", false), anyPair("answers", answers(x.Answers)), intPair("round", x.Round)), true
	}
	return ps, false
}

func expertiseCompletedPairs(ps []pair, x job.ExpertiseCompleted) []pair {
	ps = append(ps, strPair("model", x.Model), strPair("expertise_key", x.Key), strPair("expertise_name", x.Name),
		intPair("completed_expertises", x.Completed), intPair("total_expertises", x.Total), boolPair("success", x.Success),
		anyPair("partial_result", x.PartialResult), intPair("tokens", x.InputTokens+x.OutputTokens),
		intPair("input_tokens", x.InputTokens), intPair("output_tokens", x.OutputTokens), int64Pair("cost", x.Cost),
		usdPair("cost_usd", x.Cost), int64Pair("processing_time_ms", x.ProcessingMS))
	if x.KeySource != "" {
		ps = append(ps, strPair("api_key_source", x.KeySource))
	}
	if x.WebSearchCalls > 0 {
		ps = append(ps, intPair("web_search_calls", x.WebSearchCalls))
	}
	if !x.Success {
		ps = append(ps, strPair("error_message", x.ErrorMessage), strPair("error_code", string(x.ErrorCode)))
	}
	return ps
}

func modelCompletedPairs(ps []pair, x job.ModelCompleted) []pair {
	ps = append(ps, strPair("model", x.Model), boolPair("success", x.Success), boolPair("partial_success", x.PartialSuccess),
		boolPair("cancelled", false), int64Pair("cost", x.Cost), usdPair("cost_usd", x.Cost),
		intPair("input_tokens", x.InputTokens), intPair("output_tokens", x.OutputTokens),
		int64Pair("processing_time_ms", x.ProcessingMS), anyPair("expertise_breakdown", breakdowns(x.Breakdown)))
	if x.Success {
		return append(ps, anyPair("result", x.Result), strPair("record_id", x.RecordID))
	}
	return append(ps, strPair("error_message", x.ErrorMessage), strPair("error_code", string(x.ErrorCode)))
}

func completedPairs(ps []pair, x job.JobCompleted) []pair {
	ps = append(ps, anyPair("result", x.Result), anyPair("record_ids", x.RecordIDs), int64Pair("cost", x.Cost),
		usdPair("cost_usd", x.Cost), nullablePair("record_id", x.RecordID)) // a batch has records, but no one record
	if x.Several {
		ps = append(ps, anyPair("results", x.Results), anyPair("failed_models", x.FailedModels))
	}
	if x.Several || x.Fused {
		ps = append(ps, boolPair("is_fused", x.Fused))
	}
	if x.Fused {
		ps = append(ps, anyPair("fusion", x.Fusion), anyPair("source_models", x.SourceModels))
	}
	return ps
}

// batchPairs lists the fields of the classification and batch events.
func batchPairs(ps []pair, p job.Payload) ([]pair, bool) {
	switch x := p.(type) {
	case job.ClassificationStarted:
		return append(ps, strPair("model", x.Model)), true
	case job.ClassificationCompleted:
		return append(ps, strPair("model", x.Model), boolPair("success", x.Success), anyPair("classification", x.Classification),
			nullablePair("error_message", x.ErrorMessage)), true
	case job.ClassificationMismatchPause:
		return append(ps, boolPair("is_paused", true), anyPair("classification", x.Classification),
			intPair("timeout_seconds", x.TimeoutSeconds)), true
	case job.BatchStarted:
		return append(ps, intPair("total_entities", x.Total), intPair("selected_entities", x.Selected)), true
	case job.EntityStarted:
		return append(ps, intPair("entity_index", x.Index), strPair("entity_label", x.Label)), true
	case job.EntityCompleted:
		ps = append(ps, intPair("entity_index", x.Index), strPair("entity_label", x.Label), boolPair("success", x.Success),
			anyPair("results", entityResults(x.Results)), int64Pair("total_cost", x.Cost), usdPair("total_cost_usd", x.Cost),
			int64Pair("total_processing_time_ms", x.ProcessingMS), nullablePair("error", x.Error),
			nullablePair("record_id", x.RecordID))
		if x.Error != "" {
			ps = append(ps, strPair("error_code", string(x.ErrorCode)))
		}
		return ps, true
	case job.EntitySkipped:
		ps = append(ps, intPair("entity_index", x.Index), strPair("entity_label", x.Label), strPair("code", x.Code),
			strPair("reason", x.Reason))
		if x.Classification != nil {
			ps = append(ps, anyPair("classification", x.Classification))
		}
		if len(x.Paths) > 0 {
			ps = append(ps, anyPair("paths", x.Paths))
		}
		return ps, true
	case job.BatchCompleted:
		return append(ps, anyPair("summary", x.Summary), nullablePair("stopped_early_reason", x.StoppedEarlyReason)), true
	}
	return ps, false
}

// otherPairs lists the fields of the fusion, sample and schema events.
func otherPairs(ps []pair, p job.Payload) ([]pair, bool) {
	switch x := p.(type) {
	case job.FusionStarted:
		ps = append(ps, anyPair("source_record_ids", x.SourceRecordIDs), nullablePair("arbitration_model", x.ArbitrationModel))
		return entityIndexPair(ps, x.EntityIndex), true
	case job.ConflictsDetected:
		return append(ps, intPair("agreed_fields", x.Agreed), intPair("conflicted_fields", x.Conflicted),
			intPair("total_fields", x.Total)), true
	case job.ArbitrationStarted:
		return append(ps, strPair("arbitration_model", x.Model), intPair("conflict_count", x.Conflicts),
			boolPair("escalated", x.Escalated)), true
	case job.ArbitrationCompleted:
		return append(ps, strPair("arbitration_model", x.Model), boolPair("success", x.Success),
			boolPair("fallback_to_rule_based", x.Fallback), anyPair("decisions", decisions(x.Decisions)), int64Pair("cost", x.Cost),
			usdPair("cost_usd", x.Cost), intPair("input_tokens", x.InputTokens), intPair("output_tokens", x.OutputTokens),
			nullablePair("error_message", x.ErrorMessage)), true
	case job.FusionCompleted:
		return fusionCompletedPairs(ps, x), true
	case job.DatabaseOutcome:
		ps = append(ps, strPair("record_id", x.RecordID), anyPair("database", x.Database))
		return entityIndexPair(ps, x.EntityIndex), true
	case job.SampleInstanceRoster:
		ps = append(ps, intPair("total", len(x.Instances)), anyPair("instances", x.Instances))
		if len(x.Instances) == 0 {
			return append(ps, nullPair("first_instance")), true
		}
		return append(ps, strPair("first_instance", x.Instances[0])), true
	case job.SampleInstanceProgress:
		return append(ps, intPair("completed", x.Completed), intPair("total", x.Total), intPair("index", x.Index),
			strPair("instance", x.Instance), anyPair("sample", x.Sample), intPair("input_tokens", x.InputTokens),
			intPair("output_tokens", x.OutputTokens), int64Pair("cost", x.Cost), usdPair("cost_usd", x.Cost)), true
	case job.SampleClarificationPause:
		return append(ps, boolPair("is_paused", true), strPair("entity_title", x.EntityTitle),
			anyPair("questions", questions(x.Questions)), intPair("round", x.Round), strPair("source_mode", x.SourceMode),
			intPair("timeout_seconds", x.TimeoutSeconds)), true
	case job.SamplesCompleted:
		return append(ps, strPair("model", x.Model), boolPair("success", true), boolPair("cancelled", false),
			boolPair("partial_success", false), anyPair("samples", x.Samples), intPair("samples_requested", x.Requested),
			strPair("samples_note", x.Note), intPair("input_tokens", x.InputTokens), intPair("output_tokens", x.OutputTokens),
			int64Pair("cost", x.Cost), usdPair("cost_usd", x.Cost), int64Pair("processing_time_ms", x.ProcessingMS),
			nullPair("error_message")), true
	case job.SchemaModelStarted:
		return append(ps, strPair("model", x.Model), boolPair("sandbox", x.Sandbox)), true
	case job.AttachmentCoherence:
		return coherencePairs(ps, x), true
	}
	return ps, false
}

func coherencePairs(ps []pair, x job.AttachmentCoherence) []pair {
	ps = append(ps, strPair("mode", x.Mode), nullablePair("object_type", x.ObjectType), nullablePair("reason", x.Reason))
	if x.Reference != nil {
		ps = append(ps, anyPair("reference_attachment", *x.Reference))
	} else {
		ps = append(ps, nullPair("reference_attachment"))
	}
	ex := x.Excluded
	if ex == nil {
		ex = []job.AttachmentFile{}
	}
	return append(ps, anyPair("excluded_attachments", ex), intPair("input_tokens", x.InputTokens),
		intPair("output_tokens", x.OutputTokens), int64Pair("cost", x.Cost), usdPair("cost_usd", x.Cost))
}

func fusionCompletedPairs(ps []pair, x job.FusionCompleted) []pair {
	w := x.ValidationWarnings
	if w == nil {
		w = []string{}
	}
	ps = append(ps, boolPair("success", x.Success), anyPair("merged_result", x.Merged), anyPair("conflict_report", x.Report),
		anyPair("fusion", x.Summary), anyPair("provenance", x.Provenance), nullablePair("record_id", x.RecordID),
		nullPair("database"), anyPair("validation_warnings", w), int64Pair("cost", x.Cost), usdPair("cost_usd", x.Cost),
		intPair("input_tokens", x.InputTokens), intPair("output_tokens", x.OutputTokens),
		int64Pair("processing_time_ms", x.ProcessingMS), nullablePair("arbitration_model_used", x.ArbiterUsed),
		nullablePair("arbitration_key_source", x.KeySource))
	if x.ErrorMessage != "" {
		ps = append(ps, strPair("error_message", x.ErrorMessage))
	}
	return entityIndexPair(ps, x.EntityIndex)
}

// entityIndexPair adds entity_index when the event is a batch entity's.
func entityIndexPair(ps []pair, i *int) []pair {
	if i == nil {
		return ps
	}
	return append(ps, intPair("entity_index", *i))
}
