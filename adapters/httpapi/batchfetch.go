package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
)

func (s *Server) registerBatchFetchRoutes(r *mux.Router) {
	r.HandleFunc("/api/batch/fetch", s.batchFetch).Methods(http.MethodPost)
}

// batchFetchRequest is the reference's BatchFetchRequest, plus batch
// (reserved: the batch start's body without entities).
type batchFetchRequest struct {
	URL   string           `json:"url"`
	Auth  *fetchAuthConfig `json:"auth"`
	Batch json.RawMessage  `json:"batch"`
}

// fetchAuthConfig is the reference's AuthConfig.
type fetchAuthConfig struct {
	AuthType      string  `json:"auth_type"`
	BearerToken   *string `json:"bearer_token"`
	APIKeyHeader  *string `json:"api_key_header"`
	APIKeyValue   *string `json:"api_key_value"`
	BasicUsername *string `json:"basic_username"`
	BasicPassword *string `json:"basic_password"`
}

// batchFetchResponse is the reference's BatchFetchResponse plus format.
type batchFetchResponse struct {
	Entities    []json.RawMessage `json:"entities"`
	Total       int               `json:"total"`
	FetchTimeMS int64             `json:"fetch_time_ms"`
	Format      string            `json:"format"`
	// The batch started on the entities, when the request asked for one.
	JobID   *string             `json:"job_id,omitempty"`
	Message string              `json:"message,omitempty"`
	Invalid []app.InvalidEntity `json:"invalid_entities,omitempty"`
}

// input maps the request to the app's; batch, when set, is the body of
// POST /api/batch/start without entities, decoded as strictly.
func (in *batchFetchRequest) input() (app.FetchInput, error) {
	q := app.FetchInput{URL: in.URL}
	if b := bytes.TrimSpace(in.Batch); len(b) > 0 && string(b) != "null" {
		var br app.BatchRequest
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&br); err != nil {
			return q, app.Invalid("batch", "batch must be the body of POST /api/batch/start without entities: %v", err)
		}
		q.Batch = &br
	}
	if a := in.Auth; a != nil {
		q.Auth = &app.FetchAuthInput{Type: a.AuthType, BearerToken: a.BearerToken, APIKeyHeader: a.APIKeyHeader,
			APIKeyValue: a.APIKeyValue, BasicUsername: a.BasicUsername, BasicPassword: a.BasicPassword}
	}
	return q, nil
}

func (s *Server) batchFetch(w http.ResponseWriter, r *http.Request) {
	var in batchFetchRequest
	if !s.decode(w, r, &in) {
		return
	}
	q, err := in.input()
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.fetch.Fetch(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := batchFetchResponse{Entities: res.Entities, Total: res.Total, FetchTimeMS: res.FetchTimeMS, Format: string(res.Format)}
	if b := res.Batch; b != nil {
		out.JobID, out.Invalid = &b.Job.ID, b.Invalid
		out.Message = "batch enrichment started; follow GET /api/llm/stream/" + b.Job.ID
	}
	writeJSON(w, http.StatusOK, out)
}
