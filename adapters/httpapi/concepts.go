package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// conceptRoutes are the semantic concept routes' actions (issue 30);
// policy.go's table takes them in.
var conceptRoutes = map[Route]access.Action{
	{"GET", "/api/semantic-concepts"}:                                     access.ActReadConcepts,
	{"POST", "/api/semantic-concepts"}:                                    access.ActEditConcepts,
	{"GET", "/api/semantic-concepts/types"}:                               access.ActReadConcepts,
	{"POST", "/api/semantic-concepts/probe"}:                              access.ActProbeConcepts,
	{"GET", "/api/semantic-concepts/review"}:                              access.ActReadConcepts,
	{"GET", "/api/semantic-concepts/duplicates"}:                          access.ActReadConcepts,
	{"POST", "/api/semantic-concepts/delete"}:                             access.ActEditConcepts,
	{"POST", "/api/semantic-concepts/delete-impact"}:                      access.ActProbeConcepts,
	{"GET", "/api/semantic-concepts/{concept_id}"}:                        access.ActReadConcepts,
	{"DELETE", "/api/semantic-concepts/{concept_id}"}:                     access.ActEditConcepts,
	{"GET", "/api/semantic-concepts/{concept_id}/neighbors"}:              access.ActReadConcepts,
	{"DELETE", "/api/semantic-concepts/{semantic_id}/aliases/{alias_id}"}: access.ActEditConcepts,
	{"PUT", "/api/semantic-concepts/{semantic_id}/canonical/{alias_id}"}:  access.ActEditConcepts,
}

// registerConceptFamily registers every /api/semantic-concepts route: the
// fixed paths before /api/semantic-concepts/{concept_id}, which would take
// "export" or "merge" for an id.
func (s *Server) registerConceptFamily(r *mux.Router, svc Services) {
	s.registerConceptMergeRoutes(r)
	s.registerConceptCSVRoutes(r)
	s.registerConceptMigrationRoutes(r, svc.ConceptMigrations)
	s.registerConceptRoutes(r)
}

// registerConceptRoutes registers the routes; the fixed paths come before
// /{concept_id}, which would take them.
func (s *Server) registerConceptRoutes(r *mux.Router) {
	const base = "/api/semantic-concepts"
	r.HandleFunc(base, s.listConcepts).Methods(http.MethodGet)
	r.HandleFunc(base, s.createConcept).Methods(http.MethodPost)
	r.HandleFunc(base+"/types", s.conceptTypes).Methods(http.MethodGet)
	r.HandleFunc(base+"/probe", s.probeConcept).Methods(http.MethodPost)
	r.HandleFunc(base+"/review", s.conceptReview).Methods(http.MethodGet)
	r.HandleFunc(base+"/duplicates", s.conceptDuplicates).Methods(http.MethodGet)
	r.HandleFunc(base+"/delete", s.deleteConcepts).Methods(http.MethodPost)
	r.HandleFunc(base+"/delete-impact", s.conceptDeleteImpact).Methods(http.MethodPost)
	r.HandleFunc(base+"/{concept_id}", s.getConcept).Methods(http.MethodGet)
	r.HandleFunc(base+"/{concept_id}", s.deleteConcept).Methods(http.MethodDelete)
	r.HandleFunc(base+"/{concept_id}/neighbors", s.conceptNeighbors).Methods(http.MethodGet)
	r.HandleFunc(base+"/{semantic_id}/aliases/{alias_id}", s.removeConceptAlias).Methods(http.MethodDelete)
	r.HandleFunc(base+"/{semantic_id}/canonical/{alias_id}", s.promoteConceptAlias).Methods(http.MethodPut)
}

// queryInt reads an integer query parameter (def when absent).
func queryInt(q url.Values, name string, def int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, app.Invalid(name, "%s must be an integer", name)
	}
	return n, nil
}

// queryFloat reads a number query parameter (nil when absent).
func queryFloat(q url.Values, name string) (*float64, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return nil, app.Invalid(name, "%s must be a number", name)
	}
	return &f, nil
}

// queryTime reads an RFC 3339 query parameter (nil when absent).
func queryTime(q url.Values, name string) (*time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, app.Invalid(name, "%s must be an RFC 3339 time", name)
	}
	return &t, nil
}

// conceptTypesParam reads concept_types, repeated or comma-separated.
func conceptTypesParam(q url.Values) []string {
	var out []string
	for _, v := range q["concept_types"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func conceptQuery(q url.Values) (app.ConceptQuery, error) {
	cq := app.ConceptQuery{Types: conceptTypesParam(q), Search: q.Get("search"), SortBy: q.Get("sort_by"), SortOrder: q.Get("sort_order")}
	var err error
	if cq.MinRefCount, err = queryInt(q, "min_ref_count", 0); err != nil {
		return cq, err
	}
	if cq.Limit, err = queryInt(q, "limit", page.DefaultSize); err != nil {
		return cq, err
	}
	if cq.Offset, err = queryInt(q, "offset", 0); err != nil {
		return cq, err
	}
	if cq.CreatedAfter, err = queryTime(q, "created_after"); err != nil {
		return cq, err
	}
	cq.CreatedBefore, err = queryTime(q, "created_before")
	return cq, err
}

func (s *Server) listConcepts(w http.ResponseWriter, r *http.Request) {
	q, err := conceptQuery(r.URL.Query())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	cs, total, err := s.concepts.ListConcepts(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.SemanticConceptList{Items: make([]api.SemanticConceptSummary, 0, len(cs)), Total: total, Limit: q.Limit, Offset: q.Offset}
	for _, c := range cs {
		out.Items = append(out.Items, toConceptSummary(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getConcept(w http.ResponseWriter, r *http.Request) {
	d, err := s.concepts.GetConcept(r.Context(), principal(r), mux.Vars(r)["concept_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toConceptDetail(d))
}

func (s *Server) createConcept(w http.ResponseWriter, r *http.Request) {
	var body api.ConceptCreateRequest
	if !s.decode(w, r, &body) {
		return
	}
	d, err := s.concepts.CreateConcept(r.Context(), principal(r), app.ConceptCreate{Type: deref(body.ConceptType), Text: body.Text,
		EmbeddingModel: deref(body.EmbeddingModel), Threshold: body.Threshold, AliasOf: deref(body.AliasOf)})
	var exists *app.ConceptExists
	if errors.As(err, &exists) {
		code, probe := exists.Err.Code, toProbe(exists.Probe)
		writeJSON(w, http.StatusConflict, api.ConceptExistsError{Error: api.Error{Detail: exists.Err.Detail, Code: &code}, Probe: &probe})
		return
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toConceptDetail(d))
}

func (s *Server) deleteConcept(w http.ResponseWriter, r *http.Request) {
	res, err := s.concepts.DeleteConcept(r.Context(), principal(r), mux.Vars(r)["concept_id"])
	if err == nil && res.Deleted == 0 {
		err = ports.ErrNotFound
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptDeleteResult{DeletedCount: res.Deleted, RecordLinkCount: res.RecordLinks})
}

func (s *Server) conceptNeighbors(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r.URL.Query(), "limit", concept.DefaultNeighbors)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	c, ns, err := s.concepts.Neighbors(r.Context(), principal(r), mux.Vars(r)["concept_id"], limit)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptNeighborList{FocusId: c.ID, ConceptType: c.Type, EmbeddingModel: c.EmbeddingModel,
		Items: toNeighbors(ns)})
}

func (s *Server) removeConceptAlias(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if err := s.concepts.RemoveAlias(r.Context(), principal(r), v["semantic_id"], v["alias_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) promoteConceptAlias(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if err := s.concepts.PromoteAlias(r.Context(), principal(r), v["semantic_id"], v["alias_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) conceptTypes(w http.ResponseWriter, r *http.Request) {
	ts, err := s.concepts.ConceptTypes(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.SemanticConceptTypeInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, api.SemanticConceptTypeInfo{ConceptType: t.Type, EmbeddingModel: t.EmbeddingModel, Dims: t.Dims,
			ConceptCount: t.ConceptCount, UnusedCount: t.UnusedCount})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) probeConcept(w http.ResponseWriter, r *http.Request) {
	var body api.ConceptProbeRequest
	if !s.decode(w, r, &body) {
		return
	}
	pr, err := s.concepts.ProbeConcept(r.Context(), principal(r), app.ProbeRequest{Type: body.ConceptType, Text: body.Text,
		EmbeddingModel: deref(body.EmbeddingModel), Threshold: body.Threshold, Neighbors: body.Neighbors})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toProbe(pr))
}
