package app

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// ConceptExportRequest selects the concepts an export writes: the
// listing's filter, narrowed to the concept types a saved schema's
// semantic_id properties use when SavedSchemaID is set.
type ConceptExportRequest struct {
	Types         []string
	SavedSchemaID string
	Search        string
	MinRefCount   int
	// SortBy is created_at (default), ref_count or canonical_text;
	// SortOrder asc (default) or desc.
	SortBy, SortOrder string
	// IncludeEmbeddings adds each concept's vector in its own model.
	IncludeEmbeddings bool
}

// ConceptExportRow is one exported concept, with its vector when asked
// for and stored.
type ConceptExportRow struct {
	Concept   *concept.Concept
	Embedding []float32
}

// ConceptExport reads the selected concepts page by page, so that an
// export of any size holds one page at a time. Concepts written while it
// runs may be skipped or repeated (the pages are offsets).
type ConceptExport struct {
	svc        *ConceptService
	orgID      string
	filter     ports.ConceptFilter
	embeddings bool
	done       bool
}

// Export checks the request and returns the export's reader; nothing is
// read yet, so the caller can still answer with an error.
func (s *ConceptService) Export(ctx context.Context, p *access.Principal, req ConceptExportRequest) (*ConceptExport, error) {
	if err := access.Authorize(p, access.ActExportConcepts); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		field string
		v     any
	}{{"concept_types", req.Types}, {"saved_schema_id", req.SavedSchemaID}, {"search", req.Search}} {
		if err := checkText(c.field, c.v); err != nil {
			return nil, err
		}
	}
	f := ports.ConceptFilter{Types: req.Types, Search: req.Search, MinRefCount: req.MinRefCount, Limit: page.MaxSize}
	var err error
	if f.Sort, f.Descending, err = conceptOrder(req.SortBy, req.SortOrder, false); err != nil {
		return nil, err
	}
	if req.MinRefCount < 0 {
		return nil, Invalid("min_ref_count", "min_ref_count must not be negative")
	}
	if _, ok := s.Vectors.(ports.VectorBulkReader); req.IncludeEmbeddings && !ok {
		return nil, notSupported("include_embeddings", "this server's vector index cannot read its vectors back")
	}
	e := &ConceptExport{svc: s, orgID: p.OrgID, filter: f, embeddings: req.IncludeEmbeddings}
	if req.SavedSchemaID != "" {
		types, err := s.schemaConceptTypes(ctx, p.OrgID, req.SavedSchemaID)
		if err != nil {
			return nil, err
		}
		if len(req.Types) > 0 {
			types = slices.DeleteFunc(types, func(t string) bool { return !slices.Contains(req.Types, t) })
		}
		// A schema whose properties name no type exports nothing, not
		// every concept.
		e.filter.Types, e.done = types, len(types) == 0
	}
	return e, nil
}

// schemaConceptTypes are the concept types the schema's semantic_id
// properties name, sorted; a property that names none is left out.
func (s *ConceptService) schemaConceptTypes(ctx context.Context, orgID, id string) ([]string, error) {
	if s.Schemas == nil {
		return nil, coded(ports.ErrNotFound, "not_found", "schema %s not found", id)
	}
	sc, err := liveSchema(ctx, s.Schemas, orgID, id)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(sc.Content, &doc); err != nil {
		return nil, err
	}
	props, _ := concept.Properties(doc)
	var types []string
	for _, p := range props {
		if p.ConceptType != "" && !slices.Contains(types, p.ConceptType) {
			types = append(types, p.ConceptType)
		}
	}
	slices.Sort(types)
	return types, nil
}

// Next returns the next page of rows; none at the end.
func (e *ConceptExport) Next(ctx context.Context) ([]ConceptExportRow, error) {
	if e.done {
		return nil, nil
	}
	cs, _, err := e.svc.Store.ListConcepts(ctx, e.orgID, e.filter)
	if err != nil {
		return nil, err
	}
	e.filter.Offset += len(cs)
	e.done = len(cs) < e.filter.Limit
	rows := make([]ConceptExportRow, len(cs))
	for i, c := range cs {
		rows[i].Concept = c
	}
	if !e.embeddings {
		return rows, nil
	}
	return rows, e.vectors(ctx, rows)
}

// vectors fills the rows' embeddings, one read per slice of the page.
func (e *ConceptExport) vectors(ctx context.Context, rows []ConceptExportRow) error {
	vr, _ := e.svc.Vectors.(ports.VectorBulkReader)
	bySlice := map[concept.Slice][]string{}
	for _, r := range rows {
		bySlice[r.Concept.Slice()] = append(bySlice[r.Concept.Slice()], r.Concept.ID)
	}
	for sl, ids := range bySlice {
		vs, err := vr.Vectors(ctx, e.orgID, sl, ids)
		if err != nil {
			return err
		}
		for i := range rows {
			if v, ok := vs[rows[i].Concept.ID]; ok && rows[i].Concept.Slice() == sl {
				rows[i].Embedding = v
			}
		}
	}
	return nil
}
