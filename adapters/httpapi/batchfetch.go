package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerBatchFetchRoutes(r *mux.Router) {
	r.HandleFunc("/api/batch/fetch", s.batchFetch).Methods(http.MethodPost)
}

// toFetchInput maps the reference's BatchFetchRequest (its AuthConfig
// included); batch, the batch start's body without entities, is decoded
// strictly into the generated BatchRequest, the batch start's body, and
// mapped as POST /api/batch/start maps it.
func toFetchInput(in api.BatchFetchRequest) (app.FetchInput, error) {
	q := app.FetchInput{URL: in.Url}
	if b := bytes.TrimSpace(in.Batch); len(b) > 0 && string(b) != "null" {
		var in api.BatchRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return q, app.Invalid("batch", "batch must be the body of POST /api/batch/start without entities: %v", err)
		}
		br := toBatchRequest(in)
		q.Batch = &br
	}
	if a := in.Auth; a != nil {
		q.Auth = &app.FetchAuthInput{Type: string(deref(a.AuthType)), BearerToken: a.BearerToken, APIKeyHeader: a.ApiKeyHeader,
			APIKeyValue: a.ApiKeyValue, BasicUsername: a.BasicUsername, BasicPassword: a.BasicPassword}
	}
	return q, nil
}

// toFetchResponse maps the reference's BatchFetchResponse plus format, and
// the batch started on the entities when the request asked for one.
func toFetchResponse(res app.FetchResult) api.BatchFetchResponse {
	out := api.BatchFetchResponse{Entities: res.Entities, Total: res.Total, FetchTimeMs: int(res.FetchTimeMS),
		Format: api.BatchFetchResponseFormat(res.Format)}
	if b := res.Batch; b != nil {
		msg := batchStarted(b).Message
		out.JobId, out.Message = &b.Job.ID, &msg
		if len(b.Invalid) > 0 {
			inv := toInvalidEntities(b.Invalid)
			out.InvalidEntities = &inv
		}
	}
	return out
}

func (s *Server) batchFetch(w http.ResponseWriter, r *http.Request) {
	var in api.BatchFetchRequest
	if !s.decode(w, r, &in) {
		return
	}
	q, err := toFetchInput(in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.fetch.Fetch(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toFetchResponse(res))
}
