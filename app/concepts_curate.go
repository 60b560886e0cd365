package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// ConceptCreate is a create: a new concept of Type named Text, or, with
// AliasOf, Text added as an alias of that concept.
type ConceptCreate struct {
	Type, Text, EmbeddingModel string
	Threshold                  *float64
	AliasOf                    string
}

// ConceptExists is the refusal of a create whose text already names a
// concept (409 concept_exists): Probe is what the ladder found.
type ConceptExists struct {
	Err   *Error
	Probe Probe
}

func (e *ConceptExists) Error() string { return e.Err.Error() }
func (e *ConceptExists) Unwrap() error { return e.Err }

// CreateConcept adds a concept through the ladder: the text is probed
// first, and when it already names a concept of the type (exactly or at
// the threshold) the create is refused with the probe (ConceptExists).
// Otherwise the concept is minted with the probe's vector; a gray-band
// text files review pairs with its candidates. With AliasOf the text
// becomes an alias of that concept instead: the concept must be the
// organization's (404), and a text another concept holds is refused
// (409 concept_exists); a text the concept already holds is a no-op.
func (s *ConceptService) CreateConcept(ctx context.Context, p *access.Principal, req ConceptCreate) (ConceptDetail, error) {
	if err := access.Authorize(p, access.ActEditConcepts); err != nil {
		return ConceptDetail{}, err
	}
	if req.AliasOf != "" {
		return s.addAlias(ctx, p.OrgID, req)
	}
	pr, vec, err := s.probe(ctx, p.OrgID, ProbeRequest{Type: req.Type, Text: req.Text, EmbeddingModel: req.EmbeddingModel,
		Threshold: req.Threshold})
	if err != nil {
		return ConceptDetail{}, err
	}
	switch pr.Outcome {
	case "unavailable":
		return ConceptDetail{}, coded(ports.ErrConflict, CodeSemanticDisabled, "no embedding for the text: %s", pr.Detail)
	case "exact_hit", "match":
		return ConceptDetail{}, s.exists(pr)
	}
	out := pr.resolution.Outcome
	c, err := s.Store.CreateConcept(ctx, ports.NewConcept{ID: s.IDs.NewID(), OrgID: p.OrgID, Type: req.Type, AliasID: s.IDs.NewID(),
		Text: req.Text, Origin: concept.OriginManual, EmbeddingModel: pr.EmbeddingModel, Vector: vec, CreatedAt: s.Clock.Now()})
	if errors.Is(err, ports.ErrConflict) { // created meanwhile by another caller
		pr.Outcome = "exact_hit"
		return ConceptDetail{}, s.exists(pr)
	}
	if err != nil {
		return ConceptDetail{}, err
	}
	if out.Review() && s.Reviews != nil {
		slice := concept.Slice{Type: req.Type, EmbeddingModel: pr.EmbeddingModel}
		if err := s.Reviews.FileReviews(ctx, s.reviewPairs(p.OrgID, slice, c.ID, out)); err != nil {
			s.Log.Warn("review pairs not filed", "org_id", p.OrgID, "concept_id", c.ID, "err", err)
		}
	}
	return ConceptDetail{Concept: c, Links: []ConceptRecordLink{}}, nil
}

func (s *ConceptService) exists(pr Probe) error {
	id := ""
	if pr.Matched != nil {
		id = pr.Matched.ConceptID
	}
	return &ConceptExists{Err: &Error{Kind: ports.ErrConflict, Code: CodeConceptExists,
		Detail: fmt.Sprintf("the text already names concept %s (%s); add it as an alias with alias_of", id, pr.Outcome)}, Probe: pr}
}

// addAlias adds req.Text to the concept req.AliasOf.
func (s *ConceptService) addAlias(ctx context.Context, orgID string, req ConceptCreate) (ConceptDetail, error) {
	if err := checkText("alias_of", req.AliasOf); err != nil {
		return ConceptDetail{}, err
	}
	if err := checkText("text", req.Text); err != nil {
		return ConceptDetail{}, err
	}
	if concept.Normalize(req.Text) == "" {
		return ConceptDetail{}, Invalid("text", "text is blank once normalized")
	}
	c, err := s.Store.GetConcept(ctx, orgID, req.AliasOf)
	if err != nil {
		return ConceptDetail{}, err
	}
	if req.Type != "" && req.Type != c.Type {
		return ConceptDetail{}, Invalid("concept_type", "concept %s is of type %q, not %q", c.ID, c.Type, req.Type)
	}
	n, err := s.Store.FindExact(ctx, orgID, c.Type, req.Text)
	switch {
	case err == nil && n.ConceptID == c.ID:
		return s.detail(ctx, orgID, c.ID)
	case err == nil:
		sim := 1.0
		return ConceptDetail{}, s.exists(Probe{Type: c.Type, EmbeddingModel: c.EmbeddingModel, NormalizedText: concept.Normalize(req.Text),
			Outcome: "exact_hit", Matched: n, Similarity: &sim, Neighbors: []concept.Neighbor{*n}, Threshold: concept.DefaultAccept})
	case !errors.Is(err, ports.ErrNotFound):
		return ConceptDetail{}, err
	}
	if _, err := s.Store.AddAlias(ctx, orgID, c.ID, ports.NewAlias{ID: s.IDs.NewID(), Text: req.Text, Origin: concept.OriginManual,
		CreatedAt: s.Clock.Now()}); err != nil {
		return ConceptDetail{}, err
	}
	return s.detail(ctx, orgID, c.ID)
}

// RemoveAlias removes one text of a concept: never its last (409
// last_alias). Removing the canonical text promotes the oldest other one,
// whose embedding becomes the concept's vector.
func (s *ConceptService) RemoveAlias(ctx context.Context, p *access.Principal, conceptID, aliasID string) error {
	if err := access.Authorize(p, access.ActEditConcepts); err != nil {
		return err
	}
	before, err := s.Store.GetConcept(ctx, p.OrgID, conceptID)
	if err != nil {
		return err
	}
	after, err := s.Store.RemoveAlias(ctx, p.OrgID, conceptID, aliasID)
	if errors.Is(err, concept.ErrLastAlias) {
		return coded(ports.ErrConflict, CodeLastAlias, "the alias is the concept's only text; delete the concept instead")
	}
	if err != nil {
		return err
	}
	if after.NormalizedText != before.NormalizedText {
		return s.reembed(ctx, after)
	}
	return nil
}

// PromoteAlias makes an alias the concept's canonical text and its
// embedding the concept's vector. The embedding comes first, so that a
// failing embedder changes nothing.
func (s *ConceptService) PromoteAlias(ctx context.Context, p *access.Principal, conceptID, aliasID string) error {
	if err := access.Authorize(p, access.ActEditConcepts); err != nil {
		return err
	}
	c, err := s.Store.GetConcept(ctx, p.OrgID, conceptID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(c.Aliases, func(a concept.Alias) bool { return a.ID == aliasID })
	if i < 0 {
		return fmt.Errorf("concept %s alias %s: %w: %w", conceptID, aliasID, concept.ErrAliasNotFound, ports.ErrNotFound)
	}
	if c.Aliases[i].IsCanonical {
		return nil
	}
	vec, err := s.embedText(ctx, c, c.Aliases[i].NormalizedText)
	if err != nil {
		return err
	}
	if _, err := s.Store.PromoteAlias(ctx, p.OrgID, conceptID, aliasID); err != nil {
		return err
	}
	if vec == nil {
		return nil
	}
	return s.Vectors.Upsert(ctx, p.OrgID, c.Slice(), c.ID, vec)
}

// reembed stores the embedding of c's canonical text as its vector.
func (s *ConceptService) reembed(ctx context.Context, c *concept.Concept) error {
	vec, err := s.embedText(ctx, c, c.NormalizedText)
	if err != nil || vec == nil {
		return err
	}
	return s.Vectors.Upsert(ctx, c.OrgID, c.Slice(), c.ID, vec)
}

// embedText embeds a text of c in c's model; nil for a concept stored
// without a model.
func (s *ConceptService) embedText(ctx context.Context, c *concept.Concept, normalized string) ([]float32, error) {
	if c.EmbeddingModel == "" {
		return nil, nil
	}
	mk, err := model.ParseKey(c.EmbeddingModel)
	if err != nil {
		return nil, err
	}
	vecs, _, err := s.Embed(ctx, c.OrgID, mk, []string{normalized})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}
