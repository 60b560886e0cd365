package httpapi

import (
	"encoding/csv"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

// The semantic concepts' import and export routes.
const (
	conceptImportPath = "/api/semantic-concepts/import"
	conceptExportPath = "/api/semantic-concepts/export"
)

func (s *Server) registerConceptCSVRoutes(r *mux.Router) {
	r.HandleFunc(conceptImportPath, s.importConcepts).Methods(http.MethodPost)
	r.HandleFunc(conceptExportPath, s.exportConcepts).Methods(http.MethodGet)
}

// importConcepts takes JSON or, on this route only, text/csv (the
// validator lets it through as a stream, see ValidateRequests).
func (s *Server) importConcepts(w http.ResponseWriter, r *http.Request) {
	var req app.ConceptImportRequest
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "text/csv" {
		var ok bool
		if req, ok = s.csvImportRequest(w, r); !ok {
			return
		}
	} else {
		var body api.ConceptImportRequest
		if !s.decode(w, r, &body) {
			return
		}
		req = app.ConceptImportRequest{ConceptType: body.ConceptType, Texts: body.Texts, Mint: body.Mint != nil && *body.Mint,
			Threshold: body.Threshold}
	}
	res, err := s.concepts.Import(r.Context(), principal(r), req)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toConceptImportResult(res))
}

// csvImportRequest reads a CSV import: its rows, its type (the query's or
// the file's, which must agree), mint and threshold from the query.
func (s *Server) csvImportRequest(w http.ResponseWriter, r *http.Request) (app.ConceptImportRequest, bool) {
	q := r.URL.Query()
	req := app.ConceptImportRequest{ConceptType: q.Get("concept_type"), Mint: q.Get("mint") == "true"}
	if v := q.Get("threshold"); v != "" {
		th, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.Error(w, r, app.Invalid("threshold", "threshold must be a number"))
			return req, false
		}
		req.Threshold = &th
	}
	body, err := parseConceptCSV(r.Body, app.MaxImportTexts)
	if errors.Is(err, errTooLarge) {
		s.fail(w, r, http.StatusRequestEntityTooLarge, "body_too_large", "", "request body too large")
		return req, false
	}
	if err != nil {
		s.Error(w, r, err)
		return req, false
	}
	switch {
	case body.ConceptType == "":
	case req.ConceptType == "":
		req.ConceptType = body.ConceptType
	case req.ConceptType != body.ConceptType:
		s.Error(w, r, app.Invalid("concept_type", "the query names concept type %q, the file %q", req.ConceptType, body.ConceptType))
		return req, false
	}
	if req.ConceptType == "" {
		s.Error(w, r, app.Invalid("concept_type", "name the concept type: a concept_type column or ?concept_type="))
		return req, false
	}
	req.Texts = body.Texts
	req.RowField = func(i int) string { return lineField(body.Lines[i]) }
	return req, true
}

func toConceptImportResult(res *app.ConceptImportResult) api.ConceptImportResult {
	out := api.ConceptImportResult{ConceptType: res.ConceptType, Threshold: res.Threshold, Minted: res.Minted,
		ExactCount: res.Exact, MatchedCount: res.Matched, WouldMintCount: res.WouldMint, MintedCount: res.MintedCount,
		SkippedCount: res.Skipped, Rows: make([]api.ConceptImportRow, len(res.Rows))}
	if res.EmbeddingModel != "" {
		out.EmbeddingModel = &res.EmbeddingModel
	}
	for i, row := range res.Rows {
		out.Rows[i] = api.ConceptImportRow{Text: row.Text, Normalized: row.Normalized, Outcome: api.ConceptImportRowOutcome(row.Outcome),
			SemanticId: row.SemanticID, Similarity: row.Similarity, MatchedText: row.MatchedText}
	}
	return out
}

// exportConcepts streams the CSV page by page. Refusals come before the
// first byte; a failure after it cuts the response short, so that a client
// never takes a truncated file for a whole one.
func (s *Server) exportConcepts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := app.ConceptExportRequest{SavedSchemaID: q.Get("saved_schema_id"), Search: q.Get("search"),
		SortBy: q.Get("sort_by"), SortOrder: q.Get("sort_order"), IncludeEmbeddings: q.Get("include_embeddings") == "true"}
	for _, v := range q["concept_types"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				req.Types = append(req.Types, t)
			}
		}
	}
	if v := q.Get("min_ref_count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.Error(w, r, app.Invalid("min_ref_count", "min_ref_count must be an integer"))
			return
		}
		req.MinRefCount = n
	}
	exp, err := s.concepts.Export(r.Context(), principal(r), req)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	rows, err := exp.Next(r.Context())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", "attachment; filename=concepts.csv")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	header := exportHeader
	if req.IncludeEmbeddings {
		header = append(header[:len(header):len(header)], "embedding")
	}
	_ = cw.Write(header)
	rc := http.NewResponseController(w)
	for len(rows) > 0 {
		for _, row := range rows {
			_ = cw.Write(exportRecord(row, req.IncludeEmbeddings))
		}
		cw.Flush()
		if cw.Error() != nil {
			return // the client went away
		}
		_ = rc.Flush()
		if rows, err = exp.Next(r.Context()); err != nil {
			s.log.ErrorContext(r.Context(), "concept export cut short", "request_id", requestID(r), "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	cw.Flush() // the header of an empty export
}
