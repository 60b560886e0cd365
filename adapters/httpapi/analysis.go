package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/ambiguity"
)

func (s *Server) registerAnalysisRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/analyze-sample", s.analyzeSample).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/analyze", s.analyzeSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/scoping-split", s.scopingSplit).Methods(http.MethodPost)
}

// toAmbiguity maps the reference's AmbiguityCheckResponse, plus the model
// that ran and whether a saved schema was up to date.
func toAmbiguity(res *app.AnalysisResult) api.AmbiguityCheckResponse {
	out := api.AmbiguityCheckResponse{AnalyzedCount: res.AnalyzedCount, Findings: toFindings(res.Findings),
		IdentityScoping: toScopingFindings(res.IdentityScoping), Summary: res.Summary, UpToDate: res.UpToDate,
		RecordId: nilIfEmpty(res.RecordID), Model: nilIfEmpty(res.Model)}
	if res.Schema != nil {
		out.SchemaId, out.Schema = &res.Schema.ID, &res.Schema.Content
	}
	return out
}

// toFindings keeps a nil list nil (written as null) and an empty one empty.
func toFindings(fs []ambiguity.Finding) []api.AmbiguityFinding {
	if fs == nil {
		return nil
	}
	out := make([]api.AmbiguityFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, api.AmbiguityFinding{Path: f.Path, Kind: api.AmbiguityFindingKind(f.Kind),
			Level: api.AmbiguityFindingLevel(f.Level), Interpretations: f.Interpretations, Note: f.Note,
			SuggestedNames: f.SuggestedNames, SuggestedDescription: nilIfEmpty(f.SuggestedDescription)})
	}
	return out
}

func toScopingFindings(fs []ambiguity.ScopingFinding) []api.IdentityScopingFinding {
	if fs == nil {
		return nil
	}
	out := make([]api.IdentityScopingFinding, 0, len(fs))
	for _, f := range fs {
		out = append(out, api.IdentityScopingFinding{Path: f.Path, Mixed: f.Mixed, EntityFields: f.EntityFields,
			PairFields: f.PairFields, SuggestedEntityName: nilIfEmpty(f.SuggestedEntityName), Note: f.Note})
	}
	return out
}

func (s *Server) analyzeSample(w http.ResponseWriter, r *http.Request) {
	var in api.AnalyzeSampleRequest
	if !s.decode(w, r, &in) {
		return
	}
	res, err := s.analysis.AnalyzeSample(r.Context(), principal(r), app.AnalyzeSampleInput{SampleJSON: in.SampleJson,
		ProtectedFields: deref(in.ProtectedFields), Model: deref(in.Model)})
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

func (s *Server) scopingSplit(w http.ResponseWriter, r *http.Request) {
	var in api.ScopingSplitRequest
	if !s.decode(w, r, &in) {
		return
	}
	res, err := s.analysis.ScopingSplit(r.Context(), principal(r), toScopingSplitInput(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toScopingSplit(res))
}

func toScopingSplitInput(in api.ScopingSplitRequest) app.ScopingSplitInput {
	return app.ScopingSplitInput{EntityFields: in.EntityFields, EntityName: in.EntityName, EntitySamples: in.EntitySamples,
		Fields: deref(in.Fields), Path: in.Path, Schema: in.Schema, SchemaContent: in.SchemaContent}
}

// toScopingSplit maps the reference's ScopingSplitResponse, plus the split
// schema when one was sent.
func toScopingSplit(res ambiguity.SplitResult) api.ScopingSplitResponse {
	out := api.ScopingSplitResponse{Applied: res.Applied, EntitySamples: res.Samples, Paths: res.Paths,
		Reason: nilIfEmpty(res.Reason)}
	if out.EntitySamples == nil {
		out.EntitySamples = []any{}
	}
	if res.Schema != nil {
		raw, _ := json.Marshal(res.Schema)
		out.Schema = (*json.RawMessage)(&raw)
	}
	return out
}
