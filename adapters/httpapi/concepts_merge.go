package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
)

func (s *Server) registerConceptMergeRoutes(r *mux.Router) {
	r.HandleFunc("/api/semantic-concepts/merge-impact", s.conceptMergeImpact).Methods(http.MethodPost)
	r.HandleFunc("/api/semantic-concepts/merge", s.conceptMerge).Methods(http.MethodPost)
}

func (s *Server) conceptMergeImpact(w http.ResponseWriter, r *http.Request) {
	var body api.ConceptMergeRequest
	if !s.decode(w, r, &body) {
		return
	}
	m, err := s.concepts.MergeImpact(r.Context(), principal(r), body.WinnerId, body.LoserId)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptMergeImpact{AbsorbedEntityCount: m.AbsorbedEntityCount, ConceptType: m.ConceptType,
		DatabaseNames: m.DatabaseNames, EntityCount: m.EntityCount, LoserAliasCount: m.LoserAliasCount,
		LoserRefCount: m.LoserRefCount, LoserText: m.LoserText, ReferrerEntityCount: m.ReferrerEntityCount,
		SchemaNames: m.SchemaNames, WinnerText: m.WinnerText})
}

func (s *Server) conceptMerge(w http.ResponseWriter, r *http.Request) {
	var body api.ConceptMergeRequest
	if !s.decode(w, r, &body) {
		return
	}
	m, err := s.concepts.Merge(r.Context(), principal(r), body.WinnerId, body.LoserId)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptMergeResult{AliasesMoved: m.AliasesMoved, DatabasesNotified: m.DatabasesNotified,
		DeltasQueued: m.DeltasQueued, EntitiesAbsorbed: m.EntitiesAbsorbed, EntitiesRepointed: m.EntitiesRepointed,
		ReferrersRewritten: m.ReferrersRewritten})
}
