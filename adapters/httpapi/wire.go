package httpapi

import (
	"encoding/json"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
)

// toSyncResult builds the blocking variant's answer: the reference's
// SingleEnrichmentSyncResponse plus our status, record_ids and cost (in
// micro-credits); nullable fields are always present. profile_limits is
// null (unrestricted: there are no plans yet) whether
// include_profile_limits asked for it or not.
func toSyncResult(res *app.SyncResult, perModel bool) api.SyncResult {
	out := api.SyncResult{JobId: res.Job.ID, Status: api.JobState(res.Job.State), Success: true, Result: res.Result,
		RecordId: res.RecordID, RecordIds: res.RecordIDs, ProcessingTimeMs: int(res.ProcessingMS),
		FailedModels: []api.SyncResult_FailedModels{}}
	var in, outT int
	var perModels []api.ModelResult
	for _, m := range res.Models {
		in += m.InputTokens
		outT += m.OutputTokens
		if m.Success && out.Model == nil {
			out.Model = &m.Model
		}
		if !m.Success {
			out.FailedModels = append(out.FailedModels, api.SyncResult_FailedModels{Model: m.Model, ErrorMessage: m.ErrorMessage})
		}
		if perModel {
			perModels = append(perModels, toModelResult(m))
		}
	}
	out.Cost, out.CostUsd, out.InputTokens, out.OutputTokens = int(res.Cost), model.USD(res.Cost), in, outT
	if res.Database != nil {
		out.Database = res.Database
	}
	if res.IsFused {
		// The fused result is no one model's.
		out.IsFused, out.Model, out.Fusion, out.SourceModels = true, nil, asObject(res.Fusion), &res.SourceModels
	}
	if perModel {
		if perModels == nil {
			perModels = []api.ModelResult{}
		}
		out.PerModelResults = &perModels
	}
	return out
}

// toModelResult maps the reference's SingleEnrichmentResponse.
func toModelResult(m app.ModelResult) api.ModelResult {
	out := api.ModelResult{Model: m.Model, Success: m.Success, Result: &m.Result, Cost: int(m.Cost), CostUsd: model.USD(m.Cost),
		InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, ProcessingTimeMs: int(m.ProcessingMS),
		RecordId: nilIfEmpty(m.RecordID)}
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
		IsAvailable: available, Sandbox: trueOrAbsent(m.Sandbox), SupportsWebSearch: trueOrAbsent(modelsel.CanSearch(m)),
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

// asObject is v as a JSON object (a map, its keys written sorted): the
// fusion summary as a run built it is a struct.
func asObject(v any) any {
	if _, ok := v.(map[string]any); ok || v == nil {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return v
	}
	return m
}
