package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/domain/modelsel"
)

// The organization's pinned default models by task (what auto resolves to),
// the reference's TaskModelDefaults: read by operators, set by owners.
func (s *Server) registerSettingsRoutes(r *mux.Router) {
	r.HandleFunc("/api/organization/model-defaults", s.getModelDefaults).Methods(http.MethodGet)
	r.HandleFunc("/api/organization/model-defaults", s.setModelDefaults).Methods(http.MethodPut, http.MethodPatch)
}

// modelDefaultsJSON names every task, null where nothing is pinned.
func modelDefaultsJSON(d map[string]string) map[string]*string {
	out := make(map[string]*string, len(modelsel.Tasks()))
	for _, t := range modelsel.Tasks() {
		out[t] = nil
		if k, ok := d[t]; ok {
			out[t] = &k
		}
	}
	return out
}

func (s *Server) getModelDefaults(w http.ResponseWriter, r *http.Request) {
	d, err := s.enrich.ModelDefaults(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelDefaultsJSON(d))
}

// setModelDefaults pins the tasks the body names (a composite key) or
// unpins them (null); tasks it leaves out keep their default.
func (s *Server) setModelDefaults(w http.ResponseWriter, r *http.Request) {
	var in map[string]*string
	if !s.decode(w, r, &in) {
		return
	}
	d, err := s.enrich.SetModelDefaults(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelDefaultsJSON(d))
}
