package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerBatchRoutes(r *mux.Router) {
	r.HandleFunc("/api/batch/start", s.batchStart).Methods(http.MethodPost)
}

// batchStart starts a batch enrichment job: the reference's
// BatchEnrichmentJobResponse {job_id, message, total}, plus the entities the
// schema's input contract refuses (they are skipped).
func (s *Server) batchStart(w http.ResponseWriter, r *http.Request) {
	var in api.BatchRequest
	if !s.decode(w, r, &in) {
		return
	}
	b, err := s.batches.StartBatch(r.Context(), principal(r), toBatchRequest(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, batchStarted(b))
}

// toBatchRequest maps the reference's BatchEnrichmentRequest to the app's
// (also the batch job's stored request); entity_data and
// pause_timeout_seconds are passed on for the app to refuse by name.
func toBatchRequest(in api.BatchRequest) app.BatchRequest {
	return app.BatchRequest{Entities: in.Entities, SelectedIndices: deref(in.SelectedIndices),
		EnrichRequest: toEnrichRequest(api.EnrichRequest{EntityData: in.EntityData, SchemaId: in.SchemaId,
			Models: in.Models, Model: in.Model, Strategy: (*api.EnrichRequestStrategy)(in.Strategy),
			EnableWebSearch: in.EnableWebSearch, Languages: in.Languages, EnableResponseSchema: in.EnableResponseSchema,
			EnableStrictStructuredOutput: in.EnableStrictStructuredOutput, DatabaseSync: in.DatabaseSync,
			ClassificationModel: in.ClassificationModel, ArbitrationModel: in.ArbitrationModel,
			AttachmentIds: in.AttachmentIds, TargetSchema: in.TargetSchema, PauseTimeoutSeconds: in.PauseTimeoutSeconds})}
}

func batchStarted(b *app.BatchStarted) api.BatchStarted {
	return api.BatchStarted{JobId: b.Job.ID, Total: b.Total, InvalidEntities: toInvalidEntities(b.Invalid),
		Message: jobStarted(b.Job, "batch enrichment").Message}
}

// toInvalidEntities keeps nil nil (written as null).
func toInvalidEntities(es []app.InvalidEntity) []api.InvalidEntity {
	if es == nil {
		return nil
	}
	out := make([]api.InvalidEntity, 0, len(es))
	for _, e := range es {
		out = append(out, api.InvalidEntity{Index: e.Index, Detail: e.Detail, Paths: e.Paths})
	}
	return out
}
