package job

import (
	"encoding/json"

	"github.com/entityenrich/enrich/domain/model"
)

// TypeFusion is a merge of stored records (POST /api/fusion/merge and
// /merge/stream).
const TypeFusion Type = "fusion"

// The fusion events (REFERENCE.md §3, §4).
const (
	EventFusionStarted        EventType = "fusion_started"
	EventConflictsDetected    EventType = "conflicts_detected"
	EventArbitrationStarted   EventType = "arbitration_started"
	EventArbitrationCompleted EventType = "arbitration_completed"
	EventFusionCompleted      EventType = "fusion_completed"
)

// FusionStarted opens a fusion of several models' records.
type FusionStarted struct {
	SourceRecordIDs  []string
	ArbitrationModel string // "" when none was requested
	// EntityIndex is the entity's index in a batch (nil: not a batch).
	EntityIndex *int
}

func (FusionStarted) EventType() EventType { return EventFusionStarted }
func (p FusionStarted) Fields() map[string]any {
	m := map[string]any{"status": string(Running), "source_record_ids": p.SourceRecordIDs,
		"arbitration_model": nullable(p.ArbitrationModel)}
	if p.EntityIndex != nil {
		m["entity_index"] = *p.EntityIndex
	}
	return m
}

// ConflictsDetected counts the fields the models agree and disagree on.
type ConflictsDetected struct {
	Agreed, Conflicted, Total int
}

func (ConflictsDetected) EventType() EventType { return EventConflictsDetected }
func (p ConflictsDetected) Fields() map[string]any {
	return map[string]any{"status": string(Running), "agreed_fields": p.Agreed, "conflicted_fields": p.Conflicted,
		"total_fields": p.Total}
}

// ArbitrationStarted opens the arbiter's call.
type ArbitrationStarted struct {
	Model     string
	Conflicts int
	// Escalated: no arbiter was requested; wildly disagreeing numbers
	// called an automatically selected one.
	Escalated bool
}

func (ArbitrationStarted) EventType() EventType { return EventArbitrationStarted }
func (p ArbitrationStarted) Fields() map[string]any {
	return map[string]any{"status": string(Running), "arbitration_model": p.Model, "conflict_count": p.Conflicts,
		"escalated": p.Escalated}
}

// Decision is one field the arbiter decided.
type Decision struct {
	Path   string `json:"path"`
	Value  any    `json:"value"`
	Reason string `json:"reason,omitempty"`
}

// ParseDecisions reads the arbiter's answer, {"decisions": [...]}; decisions
// absent or null are nil.
func ParseDecisions(answer []byte) ([]Decision, error) {
	var d struct {
		Decisions []Decision `json:"decisions"`
	}
	err := json.Unmarshal(answer, &d)
	return d.Decisions, err
}

// ArbitrationCompleted ends the arbiter's call: its decisions applied, or
// the rules standing (Fallback).
type ArbitrationCompleted struct {
	Model                     string
	Success, Fallback         bool
	Decisions                 []Decision
	Cost                      int64
	InputTokens, OutputTokens int
	ErrorMessage              string
}

func (ArbitrationCompleted) EventType() EventType { return EventArbitrationCompleted }
func (p ArbitrationCompleted) Fields() map[string]any {
	d := p.Decisions
	if d == nil {
		d = []Decision{}
	}
	return map[string]any{"status": string(Running), "arbitration_model": p.Model, "success": p.Success,
		"fallback_to_rule_based": p.Fallback, "decisions": d, "cost": p.Cost, "cost_usd": model.USD(p.Cost),
		"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "error_message": nullable(p.ErrorMessage)}
}

// FusionCompleted ends a fusion: the merged result and its record, or the
// reason there is none.
type FusionCompleted struct {
	Success bool
	// Merged is the merged result as clients read it: with the
	// _arbitration_metadata block (fusion.Result.Annotated), which the
	// fused record's output does not hold.
	Merged map[string]any
	// Report is the conflict report (a fusion.Report).
	Report                    any
	Summary                   any
	Provenance                any
	RecordID                  string
	Cost, ProcessingMS        int64
	InputTokens, OutputTokens int
	ValidationWarnings        []string
	ErrorMessage              string
	// ArbiterUsed is the model an arbitration call ran on ("" none), and
	// KeySource the source of its provider key (org, global).
	ArbiterUsed, KeySource string
	// EntityIndex is the entity's index in a batch (nil: not a batch).
	EntityIndex *int
}

func (FusionCompleted) EventType() EventType { return EventFusionCompleted }
func (p FusionCompleted) Fields() map[string]any {
	w := p.ValidationWarnings
	if w == nil {
		w = []string{}
	}
	m := map[string]any{"status": string(Running), "success": p.Success, "merged_result": p.Merged,
		"conflict_report": p.Report, "fusion": p.Summary, "provenance": p.Provenance, "record_id": nullable(p.RecordID),
		"database": nil, "validation_warnings": w, "cost": p.Cost, "cost_usd": model.USD(p.Cost),
		"input_tokens": p.InputTokens, "output_tokens": p.OutputTokens, "processing_time_ms": p.ProcessingMS,
		"arbitration_model_used": nullable(p.ArbiterUsed), "arbitration_key_source": nullable(p.KeySource)}
	if p.ErrorMessage != "" {
		m["error_message"] = p.ErrorMessage
	}
	if p.EntityIndex != nil {
		m["entity_index"] = *p.EntityIndex
	}
	return m
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
