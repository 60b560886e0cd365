package httpapi

import (
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
)

// syncResult is the blocking variant's answer: the reference's
// SingleEnrichmentSyncResponse plus our status, record_ids and cost (in
// micro-credits). Nullable fields are always present.
type syncResult struct {
	JobID           string         `json:"job_id"`
	Status          string         `json:"status"`
	Success         bool           `json:"success"`
	IsFused         bool           `json:"is_fused"`
	Model           *string        `json:"model"`
	Result          map[string]any `json:"result"`
	RecordID        string         `json:"record_id"`
	RecordIDs       []string       `json:"record_ids"`
	Cost            int64          `json:"cost"`
	CostUSD         float64        `json:"cost_usd"`
	InputTokens     int            `json:"input_tokens"`
	OutputTokens    int            `json:"output_tokens"`
	ProcessingMS    int64          `json:"processing_time_ms"`
	FailedModels    []failedModel  `json:"failed_models"`
	SourceModels    []string       `json:"source_models"`
	Fusion          any            `json:"fusion"`
	Database        any            `json:"database"`
	PerModelResults []modelResult  `json:"per_model_results"`
	ProfileLimits   map[string]any `json:"profile_limits"`
}

type failedModel struct {
	Model        string `json:"model"`
	ErrorMessage string `json:"error_message"`
}

// modelResult is the reference's SingleEnrichmentResponse.
type modelResult struct {
	Model          string         `json:"model"`
	Success        bool           `json:"success"`
	PartialSuccess bool           `json:"partial_success"`
	Cancelled      bool           `json:"cancelled"`
	Result         map[string]any `json:"result"`
	RecordID       *string        `json:"record_id"`
	Cost           int64          `json:"cost"`
	CostUSD        float64        `json:"cost_usd"`
	InputTokens    int            `json:"input_tokens"`
	OutputTokens   int            `json:"output_tokens"`
	ProcessingMS   int64          `json:"processing_time_ms"`
	ErrorCode      *string        `json:"error_code"`
	ErrorMessage   *string        `json:"error_message"`
	Database       any            `json:"database"`
}

// toSyncResult builds the answer; profile_limits is null (unrestricted:
// there are no plans yet) whether include_profile_limits asked for it or not.
func toSyncResult(res *app.SyncResult, perModel bool) syncResult {
	out := syncResult{JobID: res.Job.ID, Status: string(res.Job.State), Success: true, Result: res.Result,
		RecordID: res.RecordID, RecordIDs: res.RecordIDs, Cost: res.Cost, CostUSD: model.USD(res.Cost),
		ProcessingMS: res.ProcessingMS, FailedModels: []failedModel{}}
	var first *string
	for _, m := range res.Models {
		out.InputTokens += m.InputTokens
		out.OutputTokens += m.OutputTokens
		if m.Success && first == nil {
			first = &m.Model
		}
		if !m.Success {
			out.FailedModels = append(out.FailedModels, failedModel{Model: m.Model, ErrorMessage: m.ErrorMessage})
		}
		if perModel {
			out.PerModelResults = append(out.PerModelResults, toModelResult(m))
		}
	}
	out.Model = first
	if perModel && out.PerModelResults == nil {
		out.PerModelResults = []modelResult{}
	}
	return out
}

func toModelResult(m app.ModelResult) modelResult {
	out := modelResult{Model: m.Model, Success: m.Success, Result: m.Result, Cost: m.Cost, CostUSD: model.USD(m.Cost),
		InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, ProcessingMS: m.ProcessingMS}
	if m.RecordID != "" {
		out.RecordID = &m.RecordID
	}
	if !m.Success {
		out.ErrorCode, out.ErrorMessage = &m.ErrorCode, &m.ErrorMessage
	}
	return out
}
