package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
)

func (s *Server) registerSchemaGenRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/generate/stream", s.generateStream).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/generate/sync", s.generateSync).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/samples/conformance", s.sampleConformance).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/prompt/stream", s.promptStream).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/prompt", s.promptSync).Methods(http.MethodPost)
}

func (s *Server) generateStream(w http.ResponseWriter, r *http.Request) {
	var in api.GenerateSchemaRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.gen.StartGeneration(r.Context(), principal(r), toGenerateRequest(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStarted(j, "schema generation"))
}

// blocking runs fn under the request's timeout_seconds (secs; nil:
// DefaultSyncTimeout) and writes its answer; a client that went away gets
// nothing (its job was cancelled).
func blocking[T any](s *Server, w http.ResponseWriter, r *http.Request, secs *int, fn func(ctx context.Context) (T, error)) {
	timeout := DefaultSyncTimeout
	if secs != nil {
		timeout = time.Duration(*secs) * time.Second // 1..3600, checked by the document
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	res, err := fn(ctx)
	switch {
	case err != nil && r.Context().Err() != nil:
		s.log.InfoContext(r.Context(), "sync client went away; job cancelled", "request_id", requestID(r))
	case err != nil:
		s.Error(w, r, err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *Server) generateSync(w http.ResponseWriter, r *http.Request) {
	// The document's SyncGenerateSchemaRequest: the stream route's body and
	// timeout_seconds.
	var in struct {
		api.GenerateSchemaRequest
		TimeoutSeconds *int `json:"timeout_seconds"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	blocking(s, w, r, in.TimeoutSeconds, func(ctx context.Context) (api.GenerateSchemaResponse, error) {
		a, err := s.gen.GenerateSync(ctx, principal(r), toGenerateRequest(in.GenerateSchemaRequest))
		return toGenerateSchemaResponse(a), err
	})
}

// toGenerateSchemaResponse maps a blocking generation's answer (the
// reference's GenerateSchemaResponse and more).
func toGenerateSchemaResponse(a app.SchemaAnswer) api.GenerateSchemaResponse {
	out := api.GenerateSchemaResponse{Success: true, Model: a.Model, RecordId: a.RecordID, Cost: int(a.Cost),
		CostUsd: model.USD(a.Cost), InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, Suggestions: a.Suggestions,
		Schema: a.Schema, SchemaId: a.SchemaID, ProcessingTimeMs: int(a.ProcessingMS), JobId: a.JobID}
	if g := a.Generation; g != nil {
		out.SchemaCreated, out.ExpertiseCount, out.SamplePropertyCount = g.Created, g.ExpertiseCount, g.SamplePropertyCount
	}
	return out
}

// toSchemaPromptResponse maps a blocking edit's answer (the reference's
// SchemaPromptResponse and more).
func toSchemaPromptResponse(a app.SchemaAnswer) api.SchemaPromptResponse {
	return api.SchemaPromptResponse{Success: true, Model: a.Model, RecordId: a.RecordID, Cost: int(a.Cost),
		CostUsd: model.USD(a.Cost), InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, Suggestions: a.Suggestions,
		Schema: a.Schema, SchemaContent: a.Schema, SchemaId: deref(a.SchemaID), ProcessingTimeMs: int(a.ProcessingMS),
		JobId: a.JobID}
}

func (s *Server) sampleConformance(w http.ResponseWriter, r *http.Request) {
	var in api.SampleSetRequest
	if !s.decode(w, r, &in) {
		return
	}
	c, err := s.gen.CheckSamples(r.Context(), principal(r), app.SampleSetRequest{EntitySamples: in.EntitySamples,
		SampleCommonalityThreshold: in.SampleCommonalityThreshold, StrictFieldConformance: in.StrictFieldConformance})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toConformance(c))
}

// toConformance maps the reference's SampleConformanceResponse; nil lists
// stay null, as the domain writes them.
func toConformance(c schema.Conformance) api.SampleConformance {
	out := api.SampleConformance{Ok: c.OK, CommonalityErrors: c.CommonalityErrors, Errors: c.Errors}
	if c.Sites != nil {
		out.Sites = make([]api.SampleConformance_Sites, 0, len(c.Sites))
	}
	for _, st := range c.Sites {
		out.Sites = append(out.Sites, api.SampleConformance_Sites{Path: st.Path, ArrayItem: st.ArrayItem,
			Observations: st.Observations, AlwaysPresent: st.AlwaysPresent, Drifting: st.Drifting, Shapes: st.Shapes,
			Fatal: st.Fatal})
	}
	return out
}

func toGenerateRequest(in api.GenerateSchemaRequest) app.GenerateRequest {
	return app.GenerateRequest{EntitySamples: in.EntitySamples, Model: deref(in.Model), Language: in.Language,
		SampleCommonalityThreshold: in.SampleCommonalityThreshold, StrictFieldConformance: in.StrictFieldConformance,
		SaveSchema: in.SaveSchema, GenerateSemanticIDs: deref(in.GenerateSemanticIds), AttachmentIDs: deref(in.AttachmentIds),
		SampleInputs: in.SampleInputs}
}

// toEditRequest maps the reference's SchemaPromptRequest on the schema the
// path names.
func toEditRequest(in api.SchemaPromptRequest, r *http.Request) app.EditRequest {
	return app.EditRequest{SchemaID: mux.Vars(r)["id"], Prompt: in.Prompt, Model: deref(in.Model),
		AttachmentIDs: deref(in.AttachmentIds)}
}

func (s *Server) promptStream(w http.ResponseWriter, r *http.Request) {
	var in api.SchemaPromptRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.gen.StartEdit(r.Context(), principal(r), toEditRequest(in, r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, jobStarted(j, "schema edit"))
}

func (s *Server) promptSync(w http.ResponseWriter, r *http.Request) {
	var in api.SchemaPromptRequest
	if !s.decode(w, r, &in) {
		return
	}
	blocking(s, w, r, nil, func(ctx context.Context) (api.SchemaPromptResponse, error) {
		a, err := s.gen.EditSync(ctx, principal(r), toEditRequest(in, r))
		return toSchemaPromptResponse(a), err
	})
}
