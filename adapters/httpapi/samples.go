package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerSampleRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/sample/generate/stream", s.sampleStream).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/sample/generate/sync", s.sampleSync).Methods(http.MethodPost)
}

// acceptLanguage is the primary language of the Accept-Language header
// ("fr-CH, fr;q=0.9" is "fr"), or empty.
func acceptLanguage(r *http.Request) string {
	h := r.Header.Get("Accept-Language")
	first, _, _ := strings.Cut(h, ",")
	first, _, _ = strings.Cut(first, ";")
	first, _, _ = strings.Cut(strings.TrimSpace(first), "-")
	return strings.ToLower(first)
}

func (s *Server) sampleStream(w http.ResponseWriter, r *http.Request) {
	var in api.GenerateSampleRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.samples.Start(r.Context(), principal(r), toSampleRequest(in, r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStarted(j, "sample generation"))
}

// sampleSyncRequest is the blocking variant's body (the document's
// SyncGenerateSampleRequest): the sample request and timeout_seconds.
type sampleSyncRequest struct {
	api.GenerateSampleRequest
	TimeoutSeconds *int `json:"timeout_seconds"`
}

// toSampleRequest maps the reference's sample request; the language
// defaults to the request's Accept-Language.
func toSampleRequest(in api.GenerateSampleRequest, r *http.Request) app.SampleRequest {
	return app.SampleRequest{EntityType: in.EntityType, Fields: deref(in.Fields), ExtraInstructions: in.ExtraInstructions,
		SampleCount: in.SampleCount, TypicalObjects: deref(in.TypicalObjects), NamingConvention: string(deref(in.NamingConvention)),
		Language: in.Language, EnableWebSearch: deref(in.EnableWebSearch), AutoAnswer: in.AutoAnswer, Model: deref(in.Model),
		AttachmentIDs: deref(in.AttachmentIds), PauseTimeoutSeconds: in.PauseTimeoutSeconds, AcceptLanguage: acceptLanguage(r)}
}

func toSampleResult(res *app.SampleResult) api.SampleResult {
	return api.SampleResult{JobId: res.JobID, Success: res.Success, Model: res.Model, Samples: res.Samples,
		SamplesRequested: res.Requested, SamplesNote: res.Note, InputTokens: res.InputTokens, OutputTokens: res.OutputTokens,
		Cost: int(res.Cost), CostUsd: res.CostUSD, ProcessingTimeMs: int(res.ProcessingMS)}
}

func (s *Server) sampleSync(w http.ResponseWriter, r *http.Request) {
	var in sampleSyncRequest
	if !s.decode(w, r, &in) {
		return
	}
	blocking(s, w, r, in.TimeoutSeconds, func(ctx context.Context) (api.SampleResult, error) {
		res, err := s.samples.Sync(ctx, principal(r), toSampleRequest(in.GenerateSampleRequest, r))
		if err != nil {
			return api.SampleResult{}, err
		}
		return toSampleResult(res), nil
	})
}
