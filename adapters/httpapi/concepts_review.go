package httpapi

import (
	"net/http"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/page"
)

func (s *Server) conceptReview(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", page.DefaultSize)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	offset, err := queryInt(q, "offset", 0)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	pairs, total, err := s.concepts.ListReviews(r.Context(), principal(r), conceptTypesParam(q), limit, offset)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.ConceptReviewList{Items: make([]api.ConceptReviewPair, 0, len(pairs)), Total: total, Limit: limit, Offset: offset}
	for _, p := range pairs {
		rv := p.Review
		item := api.ConceptReviewPair{Id: rv.ID, Reason: rv.Reason, Detail: nilIfEmpty(rv.Detail), CreatedAt: rv.CreatedAt,
			DuplicatePair: api.DuplicatePair{AId: rv.AID, BId: rv.BID, ConceptType: rv.Type, EmbeddingModel: rv.EmbeddingModel,
				Similarity: rv.Similarity}}
		if p.A != nil {
			item.AText, item.ARefCount = p.A.CanonicalText, p.A.RefCount
		}
		if p.B != nil {
			item.BText, item.BRefCount = p.B.CanonicalText, p.B.RefCount
		}
		out.Items = append(out.Items, item)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) conceptDuplicates(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var dq app.DuplicateQuery
	var err error
	if dq.Threshold, err = queryFloat(q, "threshold"); err != nil {
		s.Error(w, r, err)
		return
	}
	if dq.BandWidth, err = queryFloat(q, "band_width"); err != nil {
		s.Error(w, r, err)
		return
	}
	if dq.Limit, err = queryInt(q, "limit", page.DefaultSize); err != nil {
		s.Error(w, r, err)
		return
	}
	dq.Types = conceptTypesParam(q)
	pairs, low, high, err := s.concepts.Duplicates(r.Context(), principal(r), dq)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DuplicatePairList{BandLow: low, BandHigh: high, Items: make([]api.DuplicatePair, 0, len(pairs))}
	for _, p := range pairs {
		out.Items = append(out.Items, api.DuplicatePair{AId: p.A.ID, AText: p.A.CanonicalText, ARefCount: p.A.RefCount,
			BId: p.B.ConceptID, BText: p.B.CanonicalText, BRefCount: p.B.RefCount, ConceptType: p.Slice.Type,
			EmbeddingModel: p.Slice.EmbeddingModel, Similarity: p.Similarity})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) conceptDeletion(w http.ResponseWriter, r *http.Request) (app.ConceptDeletion, bool) {
	var body api.ConceptDeleteRequest
	if !s.decode(w, r, &body) {
		return app.ConceptDeletion{}, false
	}
	d := app.ConceptDeletion{IDs: deref(body.Ids), Types: deref(body.ConceptTypes)}
	if body.UnusedOnly != nil {
		d.UnusedOnly = *body.UnusedOnly
	}
	return d, true
}

func (s *Server) deleteConcepts(w http.ResponseWriter, r *http.Request) {
	d, ok := s.conceptDeletion(w, r)
	if !ok {
		return
	}
	res, err := s.concepts.DeleteConcepts(r.Context(), principal(r), d)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptDeleteResult{DeletedCount: res.Deleted, RecordLinkCount: res.RecordLinks})
}

func (s *Server) conceptDeleteImpact(w http.ResponseWriter, r *http.Request) {
	d, ok := s.conceptDeletion(w, r)
	if !ok {
		return
	}
	im, err := s.concepts.DeleteImpact(r.Context(), principal(r), d)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ConceptDeleteImpact{ConceptCount: im.Concepts, RecordLinkCount: im.RecordLinks,
		SchemaNames: im.SchemaNames, DatabaseNames: im.DatabaseNames, ResyncDeltaCount: im.ResyncDeltas})
}

func toConceptSummary(c *concept.Concept) api.SemanticConceptSummary {
	aliases := make([]api.ConceptAlias, 0, len(c.Aliases))
	for _, a := range c.Aliases {
		aliases = append(aliases, api.ConceptAlias{Id: a.ID, Text: a.Text, NormalizedText: a.NormalizedText, IsCanonical: a.IsCanonical,
			RefCount: a.RefCount, Origin: nilIfEmpty(string(a.Origin)), CreatedAt: a.CreatedAt})
	}
	return api.SemanticConceptSummary{Id: c.ID, ConceptType: c.Type, CanonicalText: c.CanonicalText, NormalizedText: c.NormalizedText,
		RefCount: c.RefCount, AliasCount: len(c.Aliases), Aliases: &aliases, EmbeddingModel: c.EmbeddingModel, Dims: c.Dims,
		CreatedAt: c.CreatedAt}
}

func toConceptDetail(d app.ConceptDetail) api.SemanticConceptDetail {
	out := api.SemanticConceptDetail{SemanticConceptSummary: toConceptSummary(d.Concept), Records: make([]api.ConceptRecordLink, 0, len(d.Links))}
	for _, l := range d.Links {
		at := l.CreatedAt
		out.Records = append(out.Records, api.ConceptRecordLink{RecordId: l.RecordID, JsonPath: l.JSONPath, Cosine: l.Cosine, CreatedAt: &at,
			EntityName: nilIfEmpty(l.EntityName), SchemaName: nilIfEmpty(l.SchemaName)})
	}
	return out
}

func toNeighbors(ns []concept.Neighbor) []api.ConceptNeighbor {
	out := make([]api.ConceptNeighbor, 0, len(ns))
	for _, n := range ns {
		id := n.AliasID
		if id == "" {
			id = n.ConceptID
		}
		out = append(out, api.ConceptNeighbor{Id: id, SemanticId: n.ConceptID, CanonicalText: n.CanonicalText, IsCanonical: n.IsCanonical,
			RefCount: n.RefCount, Similarity: n.Similarity})
	}
	return out
}

func toProbe(p app.Probe) api.ConceptProbeResponse {
	out := api.ConceptProbeResponse{ConceptType: p.Type, NormalizedText: p.NormalizedText, Outcome: p.Outcome, Detail: nilIfEmpty(p.Detail),
		EmbeddingModel: nilIfEmpty(p.EmbeddingModel), EmbeddingTokens: p.Tokens, Similarity: p.Similarity, Threshold: p.Threshold,
		Neighbors: toNeighbors(p.Neighbors)}
	if p.Matched != nil {
		out.MatchedId, out.MatchedText = &p.Matched.ConceptID, &p.Matched.Text
	}
	return out
}
