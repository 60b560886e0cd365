package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

// registerEmbeddingModelRoutes serves the organization's embedding-model
// setting. The path is fixed under /api/org-keys, whose /{key_id} routes
// take other methods only; registering it before them all the same keeps
// the literal path first should one ever take GET or PUT.
func (s *Server) registerEmbeddingModelRoutes(r *mux.Router) {
	const path = "/api/org-keys/embedding-model"
	r.HandleFunc(path, s.getEmbeddingModel).Methods(http.MethodGet)
	r.HandleFunc(path, s.setEmbeddingModel).Methods(http.MethodPut)
}

func (s *Server) getEmbeddingModel(w http.ResponseWriter, r *http.Request) {
	m, err := s.concepts.GetEmbeddingModel(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toEmbeddingModelSetting(m))
}

func (s *Server) setEmbeddingModel(w http.ResponseWriter, r *http.Request) {
	var body api.EmbeddingModelSettingRequest
	if !s.decode(w, r, &body) {
		return
	}
	m, err := s.concepts.PutEmbeddingModel(r.Context(), principal(r), deref(body.EmbeddingModel))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toEmbeddingModelSetting(m))
}

// toEmbeddingModelSetting maps the setting; semantic ids off is a null
// model.
func toEmbeddingModelSetting(m app.EmbeddingModelSetting) api.EmbeddingModelSetting {
	return api.EmbeddingModelSetting{EmbeddingModel: nilIfEmpty(m.Model), IsDefault: m.Default, DefaultModel: m.DefaultModel,
		Dims: m.Dims, ConceptCount: m.ConceptCount}
}
