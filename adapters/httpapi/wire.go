package httpapi

import (
	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
)

// syncResult is the blocking variant's answer: the reference's
// SingleEnrichmentSyncResponse plus our status, record_ids and cost (in
// micro-credits). Nullable fields are always present.
type syncResult struct {
	JobID     string         `json:"job_id"`
	Status    string         `json:"status"`
	Success   bool           `json:"success"`
	IsFused   bool           `json:"is_fused"`
	Model     *string        `json:"model"`
	Result    map[string]any `json:"result"`
	RecordID  string         `json:"record_id"`
	RecordIDs []string       `json:"record_ids"`
	usageJSON
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
	usageJSON
	ProcessingMS int64   `json:"processing_time_ms"`
	ErrorCode    *string `json:"error_code"`
	ErrorMessage *string `json:"error_message"`
	Database     any     `json:"database"`
}

// toSyncResult builds the answer; profile_limits is null (unrestricted:
// there are no plans yet) whether include_profile_limits asked for it or not.
func toSyncResult(res *app.SyncResult, perModel bool) syncResult {
	out := syncResult{JobID: res.Job.ID, Status: string(res.Job.State), Success: true, Result: res.Result,
		RecordID: res.RecordID, RecordIDs: res.RecordIDs, ProcessingMS: res.ProcessingMS, FailedModels: []failedModel{}}
	var in, outT int
	var first *string
	for _, m := range res.Models {
		in += m.InputTokens
		outT += m.OutputTokens
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
	out.Model, out.usageJSON = first, usage(res.Cost, in, outT)
	if res.IsFused {
		// The fused result is no one model's.
		out.IsFused, out.Model, out.Fusion, out.SourceModels = true, nil, res.Fusion, res.SourceModels
	}
	if perModel && out.PerModelResults == nil {
		out.PerModelResults = []modelResult{}
	}
	return out
}

func toModelResult(m app.ModelResult) modelResult {
	out := modelResult{Model: m.Model, Success: m.Success, Result: m.Result, usageJSON: usage(m.Cost, m.InputTokens, m.OutputTokens),
		ProcessingMS: m.ProcessingMS}
	if m.RecordID != "" {
		out.RecordID = &m.RecordID
	}
	if !m.Success {
		out.ErrorCode, out.ErrorMessage = &m.ErrorCode, &m.ErrorMessage
	}
	return out
}

// toOptions maps GET /api/enrichment/options to the reference's shape
// (EnrichmentOptionsResponse), plus strategy_names (the strategies as plain
// names, our earlier form).
func toOptions(o app.Options, c app.Caller) api.EnrichmentOptions {
	out := api.EnrichmentOptions{Models: make([]api.ModelOption, 0, len(o.Models)), Languages: o.Languages,
		DefaultModels: toDefaults(o.Defaults), DefaultModelsWebSearch: toDefaults(o.DefaultsWebSearch),
		OrganizationName: c.OrgName, StrategyNames: []string{}}
	if c.KeyName != "" {
		out.ApiKeyName, out.ApiKeyRole = &c.KeyName, &c.KeyRole
	}
	for _, st := range o.Strategies {
		out.Strategies = append(out.Strategies, api.Strategy{Name: api.StrategyName(st), Description: st.Describe()})
		out.StrategyNames = append(out.StrategyNames, string(st))
	}
	for _, m := range o.Models {
		out.Models = append(out.Models, toModelOption(m, o.Available[m.Key.String()]))
	}
	return out
}

// toModelOption is one model (the reference's LLMModel). Prices are USD per
// million tokens (the reference's unit), and micro-credits per million
// tokens beside them; capability flags are true or absent, never false, as
// the reference writes them.
func toModelOption(m model.Info, available bool) api.ModelOption {
	out := api.ModelOption{Key: m.Key.String(), Provider: m.Key.Provider, Model: m.Key.Model, DisplayName: m.DisplayName,
		InputPrice: model.USD(m.Price.InputPerMTok), OutputPrice: model.USD(m.Price.OutputPerMTok),
		InputPriceMicroCredits: int(m.Price.InputPerMTok), OutputPriceMicroCredits: int(m.Price.OutputPerMTok),
		IsAvailable: available, Sandbox: trueOrAbsent(m.Sandbox), SupportsWebSearch: trueOrAbsent(m.WebSearch),
		SupportsVision: trueOrAbsent(m.Vision), SupportsPdfInput: trueOrAbsent(m.PDFInput),
		SupportsResponseSchema: trueOrAbsent(m.ResponseSchema), SupportsStrictStructuredOutput: trueOrAbsent(m.StrictOutput),
		SupportsReasoning: trueOrAbsent(m.Reasoning), SupportsToolCalls: trueOrAbsent(m.ToolCalls),
		SupportsAudioInput: trueOrAbsent(m.AudioInput), SupportsVideoInput: trueOrAbsent(m.VideoInput)}
	if m.ContextLength != 0 {
		out.ContextLength = &m.ContextLength
	}
	return out
}

// trueOrAbsent is a capability flag as the reference writes it: true, or
// left out.
func trueOrAbsent(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

// toDefaults maps the reference's DefaultModelSelection by task; selected_by
// says why (pinned, configured, sandbox) while nothing is benchmarked
// (source and overall are then null).
func toDefaults(picks map[string]modelsel.Pick) map[string]api.DefaultModel {
	out := make(map[string]api.DefaultModel, len(picks))
	for task, p := range picks {
		out[task] = api.DefaultModel{Key: p.Model.Key.String(), DisplayName: app.DisplayName(p.Model), Pinned: p.Pinned,
			ScenarioNames: []string{}, SelectedBy: api.DefaultModelSelectedBy(p.Source)}
	}
	return out
}

// usageJSON is what a run cost: micro-credits and US dollars, and tokens.
type usageJSON struct {
	Cost         int64   `json:"cost"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
}

func usage(cost int64, in, out int) usageJSON {
	return usageJSON{Cost: cost, CostUSD: model.USD(cost), InputTokens: in, OutputTokens: out}
}
