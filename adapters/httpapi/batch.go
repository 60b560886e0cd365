package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerBatchRoutes(r *mux.Router) {
	r.HandleFunc("/api/batch/start", s.batchStart).Methods(http.MethodPost)
}

// batchStart starts a batch enrichment job: the reference's
// BatchEnrichmentJobResponse {job_id, message, total}, plus the entities the
// schema's input contract refuses (they are skipped).
func (s *Server) batchStart(w http.ResponseWriter, r *http.Request) {
	var in app.BatchRequest
	if !s.decode(w, r, &in) {
		return
	}
	b, err := s.enrich.StartBatch(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"job_id": b.Job.ID, "total": b.Total, "invalid_entities": b.Invalid,
		"message": "batch enrichment started; follow GET /api/llm/stream/" + b.Job.ID})
}
