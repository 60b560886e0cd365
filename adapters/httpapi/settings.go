package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"
	"github.com/oapi-codegen/nullable"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/domain/modelsel"
)

// The organization's pinned default models by task (what auto resolves to),
// the reference's TaskModelDefaults: read by operators, set by owners.
func (s *Server) registerSettingsRoutes(r *mux.Router) {
	r.HandleFunc("/api/organization/model-defaults", s.getModelDefaults).Methods(http.MethodGet)
	r.HandleFunc("/api/organization/model-defaults", s.setModelDefaults).Methods(http.MethodPut, http.MethodPatch)
}

// toModelDefaults names every task, null where nothing is pinned.
func toModelDefaults(d map[string]string) api.ModelDefaults {
	pinned := func(task string) *string {
		if k, ok := d[task]; ok {
			return &k
		}
		return nil
	}
	return api.ModelDefaults{Enrichment: pinned(modelsel.TaskEnrichment),
		SchemaGeneration: pinned(modelsel.TaskSchemaGeneration), SampleGeneration: pinned(modelsel.TaskSampleGeneration)}
}

// toModelDefaultsChange maps the tasks the body names to a key (pin) or nil
// (unpin); tasks it leaves out are not in the change.
func toModelDefaultsChange(in api.ModelDefaultsChange) map[string]*string {
	out := map[string]*string{}
	for task, v := range map[string]nullable.Nullable[string]{modelsel.TaskEnrichment: in.Enrichment,
		modelsel.TaskSchemaGeneration: in.SchemaGeneration, modelsel.TaskSampleGeneration: in.SampleGeneration} {
		if set, key := specified(v); set {
			out[task] = key
		}
	}
	return out
}

func (s *Server) getModelDefaults(w http.ResponseWriter, r *http.Request) {
	d, err := s.models.ModelDefaults(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toModelDefaults(d))
}

// setModelDefaults pins the tasks the body names (a composite key) or
// unpins them (null); tasks it leaves out keep their default.
func (s *Server) setModelDefaults(w http.ResponseWriter, r *http.Request) {
	var in api.ModelDefaultsChange
	if !s.decode(w, r, &in) {
		return
	}
	d, err := s.models.SetModelDefaults(r.Context(), principal(r), toModelDefaultsChange(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toModelDefaults(d))
}
