package app

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/text"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the concept routes' refusals beside CodeConceptExists.
const (
	// CodeLastAlias (409): the alias is the concept's only text.
	CodeLastAlias = "last_alias"
)

// Bounds of the concept routes.
const (
	// MaxConceptNeighbors bounds a probe's and a neighbour listing's
	// neighbours.
	MaxConceptNeighbors = 100
	// conceptRecordLinks is how many record links a concept's detail shows.
	conceptRecordLinks = 100
)

// ConceptQuery is a listing's filters as the caller sent them.
type ConceptQuery struct {
	Types                       []string
	Search                      string
	MinRefCount                 int
	CreatedAfter, CreatedBefore *time.Time
	// SortBy is created_at (default), ref_count or canonical_text;
	// SortOrder asc or desc (default).
	SortBy, SortOrder string
	Limit, Offset     int
}

// filter checks q and turns it into the store's filter.
func (q ConceptQuery) filter() (ports.ConceptFilter, error) {
	f := ports.ConceptFilter{Search: q.Search, MinRefCount: q.MinRefCount, CreatedAfter: q.CreatedAfter,
		CreatedBefore: q.CreatedBefore, Limit: q.Limit, Offset: q.Offset, Descending: true}
	types, err := conceptTypes("concept_types", q.Types)
	if err != nil {
		return f, err
	}
	f.Types = types
	if err := checkText("search", q.Search); err != nil {
		return f, err
	}
	if f.Sort, f.Descending, err = conceptOrder(q.SortBy, q.SortOrder, true); err != nil {
		return f, err
	}
	if q.MinRefCount < 0 {
		return f, Invalid("min_ref_count", "min_ref_count must not be negative")
	}
	return f, checkPage(q.Limit, q.Offset)
}

// conceptOrder checks a listing's sort_by and sort_order; an empty order
// is descending when desc.
func conceptOrder(by, order string, desc bool) (ports.ConceptSort, bool, error) {
	switch ports.ConceptSort(by) {
	case "", ports.SortConceptCreated, ports.SortConceptRefCount, ports.SortConceptText:
	default:
		return "", false, Invalid("sort_by", "sort_by %q: want created_at, ref_count or canonical_text", by)
	}
	switch order {
	case "":
	case "asc", "desc":
		desc = order == "desc"
	default:
		return "", false, Invalid("sort_order", "sort_order %q: want asc or desc", order)
	}
	return ports.ConceptSort(by), desc, nil
}

// checkPage refuses a limit outside 1..page.MaxSize (0 takes the default)
// and a negative offset.
func checkPage(limit, offset int) error {
	if limit < 0 || limit > page.MaxSize {
		return Invalid("limit", "limit must be between 1 and %d", page.MaxSize)
	}
	if offset < 0 {
		return Invalid("offset", "offset must not be negative")
	}
	return nil
}

// conceptTypes checks a list of concept types named field.
func conceptTypes(field string, types []string) ([]string, error) {
	out := make([]string, 0, len(types))
	for i, t := range types {
		if err := checkConceptType(fmt.Sprintf("%s.%d", field, i), t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func checkConceptType(field, t string) error {
	if err := checkText(field, t); err != nil {
		return err
	}
	if err := concept.CheckConceptType(t); err != nil {
		return Invalid(field, "%s", err)
	}
	return nil
}

// ListConcepts returns a page of the caller's organization's concepts and
// how many match.
func (s *ConceptService) ListConcepts(ctx context.Context, p *access.Principal, q ConceptQuery) ([]*concept.Concept, int, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return nil, 0, err
	}
	f, err := q.filter()
	if err != nil {
		return nil, 0, err
	}
	return s.Store.ListConcepts(ctx, p.OrgID, f)
}

// ConceptDetail is a concept with the records that resolved to it.
type ConceptDetail struct {
	Concept *concept.Concept
	Links   []ConceptRecordLink
}

// ConceptRecordLink is a record's link to the concept with the names a
// person reads it by (WIRE.md §12 ConceptRecordLink): EntityName is the
// identity text the record resolved through (the text of the link's
// alias, or the concept's canonical text when the record carried the id
// or the alias was removed since); SchemaName is the record's schema's
// name ("" when the record has no schema or the schema is gone).
type ConceptRecordLink struct {
	ports.ConceptLink
	EntityName, SchemaName string
}

// GetConcept returns the concept and its newest record links (none when
// no link store is wired).
func (s *ConceptService) GetConcept(ctx context.Context, p *access.Principal, id string) (ConceptDetail, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return ConceptDetail{}, err
	}
	return s.detail(ctx, p.OrgID, id)
}

func (s *ConceptService) detail(ctx context.Context, orgID, id string) (ConceptDetail, error) {
	c, err := s.Store.GetConcept(ctx, orgID, id)
	if err != nil {
		return ConceptDetail{}, err
	}
	d := ConceptDetail{Concept: c, Links: []ConceptRecordLink{}}
	if s.Links == nil {
		return d, nil
	}
	links, err := s.Links.LinksOf(ctx, orgID, id, conceptRecordLinks)
	if err != nil {
		return ConceptDetail{}, err
	}
	schemas := map[string]string{}
	for _, l := range links {
		name, seen := schemas[l.SchemaID]
		if !seen && l.SchemaID != "" && s.Schemas != nil {
			sc, err := s.Schemas.GetSchema(ctx, orgID, l.SchemaID)
			switch {
			case err == nil:
				name = sc.Name
			case !errors.Is(err, ports.ErrNotFound):
				return ConceptDetail{}, err
			}
			schemas[l.SchemaID] = name
		}
		entity := c.CanonicalText
		if a, ok := c.Alias(l.AliasID); ok {
			entity = a.Text
		}
		d.Links = append(d.Links, ConceptRecordLink{ConceptLink: l, EntityName: entity, SchemaName: name})
	}
	return d, nil
}

// ConceptTypes lists the caller's organization's slices with their counts.
func (s *ConceptService) ConceptTypes(ctx context.Context, p *access.Principal) ([]ports.ConceptTypeInfo, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return nil, err
	}
	return s.Store.ConceptTypes(ctx, p.OrgID)
}

// Neighbors are a concept's nearest concepts in its own slice, itself
// left out, most similar first.
func (s *ConceptService) Neighbors(ctx context.Context, p *access.Principal, id string, limit int) (*concept.Concept, []concept.Neighbor, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return nil, nil, err
	}
	if limit == 0 {
		limit = concept.DefaultNeighbors
	}
	if limit < 1 || limit > MaxConceptNeighbors {
		return nil, nil, Invalid("limit", "limit must be between 1 and %d", MaxConceptNeighbors)
	}
	c, err := s.Store.GetConcept(ctx, p.OrgID, id)
	if err != nil {
		return nil, nil, err
	}
	vec, err := s.vectorOf(ctx, c)
	if err != nil || vec == nil {
		return c, []concept.Neighbor{}, err
	}
	ns, err := s.Vectors.Nearest(ctx, p.OrgID, c.Slice(), vec, limit+1)
	if err != nil {
		return nil, nil, err
	}
	out := make([]concept.Neighbor, 0, len(ns))
	for _, n := range ns {
		if n.ConceptID != c.ID && len(out) < limit {
			out = append(out, n)
		}
	}
	return c, out, nil
}

// vectorOf is the concept's stored vector, read back where the index can,
// else the embedding of its normalized canonical text (what the ladder
// stored); nil for a concept stored without one.
func (s *ConceptService) vectorOf(ctx context.Context, c *concept.Concept) ([]float32, error) {
	if c.Dims == 0 {
		return nil, nil
	}
	if vr, ok := s.Vectors.(ports.VectorReader); ok {
		v, err := vr.Vector(ctx, c.OrgID, c.Slice(), c.ID)
		if !errors.Is(err, ports.ErrNotFound) {
			return v, err
		}
	}
	mk, err := model.ParseKey(c.EmbeddingModel)
	if err != nil {
		return nil, err
	}
	vecs, _, err := s.Embed(ctx, c.OrgID, mk, []string{c.NormalizedText})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// ProbeRequest is a dry run of the ladder for one text.
type ProbeRequest struct {
	Type, Text, EmbeddingModel string
	// Threshold is the accept threshold (nil: concept.DefaultAccept);
	// Neighbors how many neighbours to return (nil: the default).
	Threshold *float64
	Neighbors *int
}

// Probe is what the ladder would decide for a text (WIRE.md §12
// ConceptProbeResponse).
type Probe struct {
	Type, EmbeddingModel, NormalizedText string
	// Outcome is exact_hit, match, no_match or unavailable (Detail says
	// why).
	Outcome    string
	Detail     string
	Matched    *concept.Neighbor
	Similarity *float64
	Neighbors  []concept.Neighbor
	Tokens     int
	Threshold  float64
	// resolution is the ladder's, for a create that follows.
	resolution Resolution
	thresholds concept.Thresholds
}

// check validates a probe's or a create's fields and returns the
// ladder's thresholds and neighbour count.
func (r ProbeRequest) check() (concept.Thresholds, int, error) {
	if err := checkConceptType("concept_type", r.Type); err != nil {
		return concept.Thresholds{}, 0, err
	}
	if err := checkText("text", r.Text); err != nil {
		return concept.Thresholds{}, 0, err
	}
	if concept.Normalize(r.Text) == "" {
		return concept.Thresholds{}, 0, Invalid("text", "text is blank once normalized")
	}
	if err := checkText("embedding_model", r.EmbeddingModel); err != nil {
		return concept.Thresholds{}, 0, err
	}
	if r.Threshold != nil {
		if t := *r.Threshold; math.IsNaN(t) || t <= 0 || t > 1 {
			return concept.Thresholds{}, 0, Invalid("threshold", "threshold %v: want a number greater than 0 and at most 1", t)
		}
	}
	n := concept.DefaultNeighbors
	if r.Neighbors != nil {
		n = *r.Neighbors
		if n < 1 || n > MaxConceptNeighbors {
			return concept.Thresholds{}, 0, Invalid("neighbors", "neighbors must be between 1 and %d", MaxConceptNeighbors)
		}
	}
	return concept.DefaultThresholds().WithAccept(r.Threshold), n, nil
}

// ProbeConcept dry-runs the ladder: nothing is created or bumped, and no
// judge is asked. When no embedding can be had (semantic ids off, the
// embedder failed, no key) the outcome is unavailable with the reason.
func (s *ConceptService) ProbeConcept(ctx context.Context, p *access.Principal, req ProbeRequest) (Probe, error) {
	if err := access.Authorize(p, access.ActProbeConcepts); err != nil {
		return Probe{}, err
	}
	pr, _, err := s.probe(ctx, p.OrgID, req)
	return pr, err
}

// probe runs the ladder in probe mode, keeping the text's vector for a
// create that follows.
func (s *ConceptService) probe(ctx context.Context, orgID string, req ProbeRequest) (Probe, []float32, error) {
	th, n, err := req.check()
	if err != nil {
		return Probe{}, nil, err
	}
	pr := Probe{Type: req.Type, NormalizedText: concept.Normalize(req.Text), Threshold: th.Accept, thresholds: th,
		Neighbors: []concept.Neighbor{}}
	rec := &recordingEmbedder{inner: s.Embedder}
	run := *s
	run.Embedder = rec
	res, err := run.Resolve(ctx, orgID, ResolveRequest{Type: req.Type, EmbeddingModel: req.EmbeddingModel, Text: req.Text,
		Thresholds: th, Neighbors: n, Mode: ResolveProbe})
	if err != nil {
		if reason, ok := unavailable(err); ok {
			pr.Outcome, pr.Detail, pr.Tokens = "unavailable", reason, res.EmbeddingTokens
			return pr, nil, nil
		}
		return Probe{}, nil, err
	}
	pr.EmbeddingModel, pr.Tokens, pr.resolution = res.EmbeddingModel, res.EmbeddingTokens, res
	pr.Outcome = concept.ProbeOutcome(res.Outcome.Kind)
	pr.Matched = res.Outcome.Matched
	if res.Outcome.Matched != nil || len(res.Neighbors) > 0 {
		sim := res.Outcome.Similarity
		pr.Similarity = &sim
	}
	if res.Neighbors != nil {
		pr.Neighbors = concept.Nearest(res.Neighbors)
	}
	return pr, rec.vector, nil
}

// unavailable says whether err means no embedding could be had, and why.
func unavailable(err error) (string, bool) {
	var ef embedFailure
	switch e, ok := AsError(err); {
	case ok && e.Code == CodeSemanticDisabled:
		return e.Detail, true
	case errors.As(err, &ef):
		return "the embedder failed: " + text.Storable(ef.err.Error()), true
	case errors.Is(err, rotation.ErrNoUsableKey):
		return "no usable key for the embedding model's provider", true
	}
	return "", false
}

// embedFailure marks an error of the embedder itself.
type embedFailure struct{ err error }

func (e embedFailure) Error() string { return e.err.Error() }
func (e embedFailure) Unwrap() error { return e.err }

// recordingEmbedder keeps the first vector it returns, so that a create
// stores the vector its probe computed instead of paying twice.
type recordingEmbedder struct {
	inner  ports.Embedder
	vector []float32
}

func (r *recordingEmbedder) Embed(ctx context.Context, req ports.EmbedRequest) (ports.EmbedResponse, error) {
	if r.inner == nil {
		return ports.EmbedResponse{}, embedFailure{errors.New("no embedder is configured")}
	}
	resp, err := r.inner.Embed(ctx, req)
	if err != nil {
		return resp, embedFailure{err}
	}
	if len(resp.Vectors) != len(req.Texts) {
		return resp, embedFailure{fmt.Errorf("%d vectors for %d texts", len(resp.Vectors), len(req.Texts))}
	}
	if r.vector == nil && len(resp.Vectors) > 0 {
		r.vector = resp.Vectors[0]
	}
	return resp, nil
}
