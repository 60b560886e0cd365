package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the semantic concept routes' refusals.
const (
	// CodeSemanticDisabled (409): the organization cleared its embedding
	// model, so nothing is embedded and no concept resolved by vector.
	CodeSemanticDisabled = "semantic_ids_disabled"
	// CodeConceptExists (409): a create whose text already names a
	// concept of the type.
	CodeConceptExists = "concept_exists"
)

// DefaultConceptNeighbors is how many neighbours the ladder looks at when
// the caller names no number (REFERENCE.md: neighbors 10).
const DefaultConceptNeighbors = 10

// ConceptJudge is the identity judge: an LLM call that says whether text
// names one of the gray-band candidates. The organization pays for it.
type ConceptJudge interface {
	Judge(ctx context.Context, orgID, conceptType, text string, candidates []concept.Neighbor) (concept.Verdict, error)
}

// ConceptService runs the semantic concept vocabulary: the ladder that
// resolves identity texts to concept ids, and the vocabulary's upkeep.
type ConceptService struct {
	Store    ports.ConceptStore
	Vectors  ports.VectorIndex
	Reviews  ports.ConceptReviews
	Links    ports.ConceptLinks
	Settings ports.EmbeddingSettings
	// Schemas and Databases name what a delete touches (delete-impact);
	// nil leaves the names out.
	Schemas   ports.SchemaStore
	Databases ports.DatabaseStore
	Embedder  ports.Embedder
	// Catalog prices embedding calls and checks the setting's models (nil:
	// every model is free and any may be set).
	Catalog ports.EmbeddingCatalog
	// Usage is the ledger embedding and judge calls are charged to (nil:
	// not recorded).
	Usage ports.UsageLedger
	Keys  *KeyRing
	// Guard is asked before each priced embedding call, as before a chat
	// call (nil: every spend goes on).
	Guard *SpendGuard
	// Migrations routes the lookups of a type an embedding-model
	// migration cut over to its target model (nil: none).
	Migrations ports.ConceptMigrations
	// Judge decides the gray band; nil sends it to the review list.
	Judge ConceptJudge
	// DefaultModel embeds for organizations that never chose a model.
	DefaultModel model.Key
	Clock        ports.Clock
	IDs          ports.IDs
	Log          *slog.Logger
	// UoW and Entities (with Schemas) serve a merge's redirect of the
	// entity layer (nil UoW: a merge touches the vocabulary only).
	UoW      ports.UnitOfWork
	Entities ports.EntityStore
	// Records are rewritten by a merge to name the winner (nil: they keep
	// the loser's id).
	Records ports.RecordStore
}

// ResolveMode says what a resolution may do.
type ResolveMode int

const (
	// ResolveProbe only looks: no judge, nothing written.
	ResolveProbe ResolveMode = iota
	// ResolveReport asks the judge but writes nothing (an import that
	// does not mint).
	ResolveReport
	// ResolveWrite mints what the ladder says to mint, adds matched texts
	// as aliases and files review pairs.
	ResolveWrite
)

// ResolveRequest is one identity text to resolve in a slice.
type ResolveRequest struct {
	Type string
	// EmbeddingModel is the slice's model; "" takes the organization's.
	EmbeddingModel string
	Text           string
	// InputID is an id the object already carries: it is kept.
	InputID    string
	Thresholds concept.Thresholds
	// Neighbors is how many neighbours to look at (0: the default).
	Neighbors int
	Mode      ResolveMode
	// Origin marks the aliases a write adds.
	Origin concept.Origin
}

// Resolution is what the ladder decided and what it cost.
type Resolution struct {
	Outcome        concept.Outcome
	EmbeddingModel string
	// Concept is the concept the text resolved to (matched or minted);
	// nil when nothing was minted (probe, report) or the text was blank.
	Concept   *concept.Concept
	Neighbors []concept.Neighbor
	// EmbeddingTokens are the tokens the text's embedding cost.
	EmbeddingTokens int
	Minted          bool
	// JudgeErr is a judge failure the ladder escalated past.
	JudgeErr error
}

// Resolve runs the ladder for one text: the exact rung (free), then the
// neighbours of the text's embedding, the judge for the gray band, and,
// when the request writes, the mint.
func (s *ConceptService) Resolve(ctx context.Context, orgID string, req ResolveRequest) (Resolution, error) {
	if err := concept.CheckConceptType(req.Type); err != nil {
		return Resolution{}, Invalid("concept_type", "%s", err)
	}
	th := req.Thresholds
	if th == (concept.Thresholds{}) {
		th = concept.DefaultThresholds()
	}
	if err := th.Check(); err != nil {
		return Resolution{}, Invalid("threshold", "%s", err)
	}
	in := concept.Input{InputID: req.InputID, Text: req.Text, Thresholds: th}
	if req.InputID != "" || concept.Normalize(req.Text) == "" {
		out, err := concept.Resolve(in)
		return Resolution{Outcome: out}, err
	}
	mk, err := s.ModelFor(ctx, orgID, req.EmbeddingModel)
	if err == nil && req.EmbeddingModel == "" {
		mk, err = s.sliceModel(ctx, orgID, req.Type, mk)
	}
	if err != nil {
		return Resolution{}, err
	}
	res := Resolution{EmbeddingModel: mk.String()}
	slice := concept.Slice{Type: req.Type, EmbeddingModel: mk.String()}
	exact, err := s.Store.FindExact(ctx, orgID, req.Type, req.Text)
	switch {
	case err == nil:
		in.Exact = exact
	case !errors.Is(err, ports.ErrNotFound):
		return Resolution{}, err
	}
	var vec []float32
	if in.Exact == nil {
		vecs, tokens, err := s.Embed(ctx, orgID, mk, []string{concept.Normalize(req.Text)})
		if err != nil {
			return Resolution{}, err
		}
		vec, res.EmbeddingTokens = vecs[0], tokens
		res.Neighbors, err = s.Vectors.Nearest(ctx, orgID, slice, vec, cmpOr(req.Neighbors, DefaultConceptNeighbors))
		if err != nil {
			return Resolution{}, err
		}
		in.Neighbors = res.Neighbors
	}
	if req.Mode != ResolveProbe && s.Judge != nil {
		in.Judge = func(text string, cands []concept.Neighbor) (concept.Verdict, error) {
			return s.Judge.Judge(ctx, orgID, req.Type, text, cands)
		}
	}
	res.Outcome, res.JudgeErr = concept.Resolve(in)
	if res.JudgeErr != nil {
		s.Log.Warn("identity judge failed; the pair goes to review", "org_id", orgID, "err", res.JudgeErr)
	}
	if req.Mode != ResolveWrite {
		return res, nil
	}
	return s.write(ctx, orgID, slice, req, vec, res)
}

// write carries out a written resolution: a matched text becomes an alias
// of its concept (so the next one is an exact hit), a mint creates the
// concept, and gray-band pairs go to the review list.
func (s *ConceptService) write(ctx context.Context, orgID string, slice concept.Slice, req ResolveRequest, vec []float32,
	res Resolution) (Resolution, error) {
	out := res.Outcome
	switch {
	case out.Kind == concept.ExactHit:
		c, err := s.Store.GetConcept(ctx, orgID, out.ConceptID)
		res.Concept = c
		return res, err
	case out.Kind == concept.Match || out.Kind == concept.JudgedMatch:
		c, err := s.Store.AddAlias(ctx, orgID, out.ConceptID, ports.NewAlias{ID: s.IDs.NewID(), Text: req.Text,
			Origin: req.Origin, CreatedAt: s.Clock.Now()})
		if errors.Is(err, ports.ErrConflict) { // another resolution added it meanwhile
			c, err = s.Store.GetConcept(ctx, orgID, out.ConceptID)
		}
		res.Concept = c
		return res, err
	case !out.Mints():
		return res, nil
	}
	c, err := s.Store.CreateConcept(ctx, ports.NewConcept{ID: s.IDs.NewID(), OrgID: orgID, Type: req.Type, AliasID: s.IDs.NewID(),
		Text: req.Text, Origin: req.Origin, EmbeddingModel: slice.EmbeddingModel, Vector: vec, CreatedAt: s.Clock.Now()})
	if errors.Is(err, ports.ErrConflict) {
		// A concurrent resolution minted the same text first: it is
		// this text's concept now.
		n, ferr := s.Store.FindExact(ctx, orgID, req.Type, req.Text)
		if ferr != nil {
			return res, ferr
		}
		res.Outcome = concept.Outcome{Kind: concept.ExactHit, NormalizedText: out.NormalizedText, ConceptID: n.ConceptID,
			Matched: n, Similarity: 1}
		res.Concept, err = s.Store.GetConcept(ctx, orgID, n.ConceptID)
		return res, err
	}
	if err != nil {
		return res, err
	}
	res.Concept, res.Minted = c, true
	res.Outcome.ConceptID = c.ID
	if out.Review() && s.Reviews != nil {
		if err := s.Reviews.FileReviews(ctx, s.reviewPairs(orgID, slice, c.ID, out)); err != nil {
			s.Log.Warn("review pairs not filed", "org_id", orgID, "concept_id", c.ID, "err", err)
		}
	}
	return res, nil
}

// reviewPairs are the pairs a minted concept leaves to a person: one per
// gray-band candidate.
func (s *ConceptService) reviewPairs(orgID string, slice concept.Slice, minted string, out concept.Outcome) []ports.ConceptReview {
	reason := ports.ReviewEscalated
	if out.Kind == concept.Mint {
		reason = ports.ReviewSeparated
	}
	pairs := make([]ports.ConceptReview, 0, len(out.Candidates))
	for _, n := range out.Candidates {
		pairs = append(pairs, ports.ConceptReview{ID: s.IDs.NewID(), OrgID: orgID, Type: slice.Type, EmbeddingModel: slice.EmbeddingModel,
			AID: minted, BID: n.ConceptID, Similarity: n.Similarity, Reason: reason, Detail: out.Reason, CreatedAt: s.Clock.Now()})
	}
	return pairs
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
