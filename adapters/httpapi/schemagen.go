package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerSchemaGenRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/generate/stream", s.generateStream).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/generate/sync", s.generateSync).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/samples/conformance", s.sampleConformance).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/prompt/stream", s.promptStream).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/prompt", s.promptSync).Methods(http.MethodPost)
}

func (s *Server) generateStream(w http.ResponseWriter, r *http.Request) {
	var in app.GenerateRequest
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.gen.StartGeneration(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"job_id": j.ID, "message": "schema generation started; follow GET /api/llm/stream/" + j.ID})
}

// blocking runs fn under the sync timeout and writes its answer; a client
// that went away gets nothing (its job was cancelled).
func (s *Server) blocking(w http.ResponseWriter, r *http.Request, timeout time.Duration, fn func(ctx context.Context) (map[string]any, error)) {
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
	var in struct {
		app.GenerateRequest
		TimeoutSeconds *int `json:"timeout_seconds"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	timeout := DefaultSyncTimeout
	if in.TimeoutSeconds != nil {
		timeout = time.Duration(*in.TimeoutSeconds) * time.Second // 1..3600, checked by the document
	}
	s.blocking(w, r, timeout, func(ctx context.Context) (map[string]any, error) {
		return s.gen.GenerateSync(ctx, principal(r), in.GenerateRequest)
	})
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
	writeJSON(w, http.StatusOK, c)
}

// promptBody is the reference's SchemaPromptRequest.
type promptBody struct {
	Prompt        string   `json:"prompt"`
	Model         string   `json:"model"`
	AttachmentIDs []string `json:"attachment_ids"`
}

func (in promptBody) request(r *http.Request) app.EditRequest {
	return app.EditRequest{SchemaID: mux.Vars(r)["id"], Prompt: in.Prompt, Model: in.Model, AttachmentIDs: in.AttachmentIDs}
}

func (s *Server) promptStream(w http.ResponseWriter, r *http.Request) {
	var in promptBody
	if !s.decode(w, r, &in) {
		return
	}
	j, err := s.gen.StartEdit(r.Context(), principal(r), in.request(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"job_id": j.ID, "message": "schema edit started; follow GET /api/llm/stream/" + j.ID})
}

func (s *Server) promptSync(w http.ResponseWriter, r *http.Request) {
	var in promptBody
	if !s.decode(w, r, &in) {
		return
	}
	s.blocking(w, r, DefaultSyncTimeout, func(ctx context.Context) (map[string]any, error) {
		return s.gen.EditSync(ctx, principal(r), in.request(r))
	})
}
