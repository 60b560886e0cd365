package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
)

// setFusionFields adds a fused record's fields: the reference's
// fusion_sources, fusion_method and fusion_arbitration_model, and ours: the
// fusion summary, the per-field provenance and the conflict report. Other
// records leave them out.
func setFusionFields(out *api.RecordSummary, rc *enrichment.Record) {
	f := rc.Fusion
	if f == nil {
		return
	}
	sources := make([]api.FusionSource, 0, len(f.Sources))
	for _, src := range f.Sources {
		sources = append(sources, api.FusionSource{RecordId: src.RecordID, ModelName: src.ModelName})
	}
	// A typed nil in the interface is written as null: the arbiter is
	// present on every fused record.
	arbiter := nilIfEmpty(f.Summary.ArbitrationModel)
	out.FusionSources, out.FusionMethod, out.FusionArbitrationModel = &sources, &f.Summary.Method, arbiter
	out.Fusion, out.Provenance, out.ConflictReport = f.Summary, f.Provenance, f.Report
}

func (s *Server) registerFusionRoutes(r *mux.Router) {
	r.HandleFunc("/api/fusion/merge", s.fusionMerge).Methods(http.MethodPost)
	r.HandleFunc("/api/fusion/merge/stream", s.fusionMergeStream).Methods(http.MethodPost)
}

func (s *Server) fusionMergeStream(w http.ResponseWriter, r *http.Request) {
	var in api.FusionRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.fusion.Start(r.Context(), principal(r), toMergeRequest(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStarted(j, "fusion"))
}

func (s *Server) fusionMerge(w http.ResponseWriter, r *http.Request) {
	var in api.FusionRequest
	if !s.decode(w, r, &in) {
		return
	}
	blocking(s, w, r, nil, func(ctx context.Context) (api.FusionResponse, error) {
		res, err := s.fusion.Merge(ctx, principal(r), toMergeRequest(in))
		if err != nil {
			return api.FusionResponse{}, err
		}
		return toFusionResponse(res), nil
	})
}

func toMergeRequest(in api.FusionRequest) app.MergeRequest {
	return app.MergeRequest{ResultIDs: in.ResultIds, ArbitrationModel: in.ArbitrationModel,
		AttachmentIDs: deref(in.AttachmentIds), DatabaseSync: in.DatabaseSync}
}

// fusionCompleted reads the fusion_completed event's data (a map built by
// the app).
type fusionCompleted struct {
	Merged   map[string]any `json:"merged_result"`
	Report   map[string]any `json:"conflict_report"`
	Summary  map[string]any `json:"fusion"`
	Prov     any            `json:"provenance"`
	RecordID string         `json:"record_id"`
	Arbiter  *string        `json:"arbitration_model_used"`
	KeySrc   *string        `json:"arbitration_key_source"`
	Cost     int64          `json:"cost"`
	In       int            `json:"input_tokens"`
	Out      int            `json:"output_tokens"`
	Warnings []string       `json:"validation_warnings"`
	MS       int64          `json:"processing_time_ms"`
}

// toFusionResponse maps the fusion_completed event's data to the
// reference's FusionResponse, plus the job, the fusion summary and the
// provenance. merged_result carries the reference's _arbitration_metadata
// {method, arbitration_model} as the event does (fusion.Result.Annotated);
// the stored record does not.
func toFusionResponse(res *app.MergeResult) api.FusionResponse {
	var d fusionCompleted
	b, _ := json.Marshal(res.Data)
	_ = json.Unmarshal(b, &d)
	out := api.FusionResponse{JobId: res.JobID, Success: true, ProcessingTimeMs: int(d.MS), MergedResult: d.Merged,
		ConflictReport: d.Report, RecordId: d.RecordID, ArbitrationModelUsed: d.Arbiter,
		ArbitrationKeySource: (*api.FusionResponseArbitrationKeySource)(d.KeySrc), Cost: int(d.Cost), Fusion: d.Summary,
		Provenance: d.Prov, ValidationWarnings: d.Warnings}
	if out.ValidationWarnings == nil {
		out.ValidationWarnings = []string{}
	}
	if d.Arbiter != nil {
		usd := model.USD(d.Cost)
		out.CostUsd, out.InputTokens, out.OutputTokens = &usd, &d.In, &d.Out
	}
	if out.MergedResult == nil {
		out.MergedResult = map[string]any{}
	}
	return out
}
