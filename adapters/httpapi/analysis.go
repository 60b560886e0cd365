package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/ambiguity"
)

func (s *Server) registerAnalysisRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/analyze-sample", s.analyzeSample).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/analyze", s.analyzeSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/scoping-split", s.scopingSplit).Methods(http.MethodPost)
}

// ambiguityJSON is the reference's AmbiguityCheckResponse, plus the model
// that ran and whether a saved schema was up to date.
type ambiguityJSON struct {
	AnalyzedCount   int                        `json:"analyzed_count"`
	Findings        []ambiguity.Finding        `json:"findings"`
	IdentityScoping []ambiguity.ScopingFinding `json:"identity_scoping"`
	Summary         map[string]int             `json:"summary"`
	RecordID        *string                    `json:"record_id"`
	SchemaID        *string                    `json:"schema_id"`
	Schema          json.RawMessage            `json:"schema"`
	Model           *string                    `json:"model"`
	UpToDate        bool                       `json:"up_to_date"`
}

func toAmbiguity(res *app.AnalysisResult) ambiguityJSON {
	out := ambiguityJSON{AnalyzedCount: res.AnalyzedCount, Findings: res.Findings, IdentityScoping: res.IdentityScoping,
		Summary: res.Summary, Schema: json.RawMessage("null"), UpToDate: res.UpToDate}
	if res.RecordID != "" {
		out.RecordID = &res.RecordID
	}
	if res.Model != "" {
		out.Model = &res.Model
	}
	if res.Schema != nil {
		out.SchemaID = &res.Schema.ID
		out.Schema = res.Schema.Content
	}
	return out
}

func (s *Server) analyzeSample(w http.ResponseWriter, r *http.Request) {
	var in app.AnalyzeSampleInput
	if !s.decode(w, r, &in) {
		return
	}
	res, err := s.analysis.AnalyzeSample(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAmbiguity(res))
}

func (s *Server) analyzeSchema(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	force := false
	if v := q.Get("force"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.Error(w, r, app.Invalid("force", "force must be true or false"))
			return
		}
		force = b
	}
	res, err := s.analysis.AnalyzeSchema(r.Context(), principal(r), mux.Vars(r)["id"], q.Get("model"), force)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAmbiguity(res))
}

// splitJSON is the reference's ScopingSplitResponse, plus the split schema
// when one was sent.
type splitJSON struct {
	Applied       bool            `json:"applied"`
	EntitySamples []any           `json:"entity_samples"`
	Paths         []string        `json:"paths"`
	Reason        *string         `json:"reason"`
	Schema        json.RawMessage `json:"schema"`
}

func (s *Server) scopingSplit(w http.ResponseWriter, r *http.Request) {
	var in app.ScopingSplitInput
	if !s.decode(w, r, &in) {
		return
	}
	res, err := s.analysis.ScopingSplit(r.Context(), principal(r), in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := splitJSON{Applied: res.Applied, EntitySamples: res.Samples, Paths: res.Paths, Schema: json.RawMessage("null")}
	if out.EntitySamples == nil {
		out.EntitySamples = []any{}
	}
	if res.Reason != "" {
		out.Reason = &res.Reason
	}
	if res.Schema != nil {
		out.Schema, _ = json.Marshal(res.Schema)
	}
	writeJSON(w, http.StatusOK, out)
}
