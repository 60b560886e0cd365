package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

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
	var in app.SampleRequest
	if !s.decode(w, r, &in) {
		return
	}
	in.AcceptLanguage = acceptLanguage(r)
	j, err := s.samples.Start(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"job_id": j.ID,
		"message": "sample generation started; follow GET /api/llm/stream/" + j.ID})
}

// sampleSyncRequest is the blocking variant's body: the sample request and
// timeout_seconds.
type sampleSyncRequest struct {
	app.SampleRequest
	TimeoutSeconds *int `json:"timeout_seconds"`
}

func (s *Server) sampleSync(w http.ResponseWriter, r *http.Request) {
	var in sampleSyncRequest
	if !s.decode(w, r, &in) {
		return
	}
	in.AcceptLanguage = acceptLanguage(r)
	blocking(s, w, r, in.TimeoutSeconds, func(ctx context.Context) (*app.SampleResult, error) {
		return s.samples.Sync(ctx, principal(r), in.SampleRequest)
	})
}
