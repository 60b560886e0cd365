package httpapi

import (
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
}

func (s *Server) batchFetch(w http.ResponseWriter, r *http.Request) {
	var in batchFetchRequest
	if !s.decode(w, r, &in) {
		return
	}
	q := app.FetchInput{URL: in.URL, Batch: in.Batch}
	if a := in.Auth; a != nil {
		q.Auth = &app.FetchAuthInput{Type: a.AuthType, BearerToken: a.BearerToken, APIKeyHeader: a.APIKeyHeader,
			APIKeyValue: a.APIKeyValue, BasicUsername: a.BasicUsername, BasicPassword: a.BasicPassword}
	}
	res, err := s.fetch.Fetch(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, batchFetchResponse{Entities: res.Entities, Total: res.Total, FetchTimeMS: res.FetchTimeMS,
		Format: string(res.Format)})
}
