package httpapi

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/ports"
)

// registerConceptMigrationRoutes serves the embedding-model migration
// (WIRE.md §12); without the service they answer 503.
func (s *Server) registerConceptMigrationRoutes(r *mux.Router, svc *app.ConceptMigrationService) {
	h := migrationRoutes{s: s, svc: svc}
	r.HandleFunc("/api/semantic-concepts/migration/status", h.status).Methods(http.MethodGet)
	r.HandleFunc("/api/semantic-concepts/migration/preview", h.preview).Methods(http.MethodPost)
	r.HandleFunc("/api/semantic-concepts/migration/start", h.start).Methods(http.MethodPost)
	r.HandleFunc("/api/semantic-concepts/migration/cancel", h.cancel).Methods(http.MethodPost)
}

type migrationRoutes struct {
	s   *Server
	svc *app.ConceptMigrationService
}

// missing answers 503 when the server runs without the migration.
func (h migrationRoutes) missing(w http.ResponseWriter, r *http.Request) bool {
	if h.svc == nil {
		h.s.Error(w, r, fmt.Errorf("the embedding-model migration is not available: %w", ports.ErrUnavailable))
		return true
	}
	return false
}

func (h migrationRoutes) status(w http.ResponseWriter, r *http.Request) {
	if h.missing(w, r) {
		return
	}
	m, err := h.svc.Status(r.Context(), principal(r))
	if err != nil {
		h.s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toMigrationStatus(m))
}

// request reads a MigrationStartRequest; false when it answered.
func (h migrationRoutes) request(w http.ResponseWriter, r *http.Request) (app.MigrationRequest, bool) {
	var body api.MigrationStartRequest
	if h.missing(w, r) || !h.s.decode(w, r, &body) {
		return app.MigrationRequest{}, false
	}
	return app.MigrationRequest{TargetModel: body.TargetModel, SourceModel: deref(body.SourceModel), ConceptTypes: deref(body.ConceptTypes)}, true
}

func (h migrationRoutes) preview(w http.ResponseWriter, r *http.Request) {
	req, ok := h.request(w, r)
	if !ok {
		return
	}
	p, err := h.svc.Preview(r.Context(), principal(r), req)
	if err != nil {
		h.s.Error(w, r, err)
		return
	}
	out := api.MigrationPreviewResponse{Collisions: make([]api.MigrationCollisionPair, 0, len(p.Collisions)),
		CollisionsSampled: p.CollisionsSampled, ConceptCount: p.ConceptCount, ConceptTypes: &p.ConceptTypes,
		EstimatedCostUsd: p.EstimatedCostUSD, EstimatedTokens: p.EstimatedTokens, Note: &p.Note, SourceModel: &p.SourceModel,
		TargetDims: p.TargetDims, TargetModel: p.TargetModel}
	if p.ConceptTypes == nil {
		out.ConceptTypes = &[]string{}
	}
	for _, c := range p.Collisions {
		out.Collisions = append(out.Collisions, api.MigrationCollisionPair{AText: c.AText, BText: c.BText, ConceptType: c.ConceptType,
			SimilarityNow: c.SimilarityNow, SimilarityAfter: c.SimilarityAfter})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h migrationRoutes) start(w http.ResponseWriter, r *http.Request) {
	req, ok := h.request(w, r)
	if !ok {
		return
	}
	m, err := h.svc.Start(r.Context(), principal(r), req)
	if err != nil {
		h.s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, toMigrationStatus(m))
}

func (h migrationRoutes) cancel(w http.ResponseWriter, r *http.Request) {
	if h.missing(w, r) {
		return
	}
	m, err := h.svc.Cancel(r.Context(), principal(r))
	if err != nil {
		h.s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toMigrationStatus(m))
}

// toMigrationStatus is WIRE.md's MigrationStatusResponse; no migration is
// a null status with zero counts.
func toMigrationStatus(m *ports.ConceptMigration) api.MigrationStatusResponse {
	if m == nil {
		return api.MigrationStatusResponse{ConceptTypes: &[]string{}}
	}
	st := api.MigrationStatusResponseStatus(m.Status)
	types := m.ConceptTypes
	if types == nil {
		types = []string{}
	}
	out := api.MigrationStatusResponse{Status: &st, SourceModel: &m.SourceModel, TargetModel: &m.TargetModel, ConceptTypes: &types,
		TotalCount: m.TotalCount, EmbeddedCount: m.EmbeddedCount, EmbeddingTokens: m.EmbeddingTokens, StartedAt: &m.StartedAt,
		CompletedAt: m.CompletedAt}
	if m.LastError != "" {
		out.LastError = &m.LastError
	}
	return out
}
