package app

import (
	"context"
	"errors"
	"slices"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// Codes of a merge's refusals.
const (
	// CodeMergeSelf (400): winner and loser are one concept.
	CodeMergeSelf = "merge_same_concept"
	// CodeMergeTypes (409): winner and loser are of different types.
	CodeMergeTypes = "merge_type_mismatch"
)

// ConceptMergeImpact is what a merge would do (WIRE.md §12
// ConceptMergeImpact). EntityCount counts the entities whose identity
// names the loser (AbsorbedEntityCount of them meet an entity of the
// winner); ReferrerEntityCount the others that name it in their state.
type ConceptMergeImpact struct {
	ConceptType                                           string
	WinnerText, LoserText                                 string
	LoserAliasCount, LoserRefCount                        int
	EntityCount, AbsorbedEntityCount, ReferrerEntityCount int
	SchemaNames, DatabaseNames                            []string
}

// ConceptMergeResult is what a merge did (WIRE.md §12 ConceptMergeResult).
type ConceptMergeResult struct {
	AliasesMoved       int
	DatabasesNotified  int
	DeltasQueued       int
	EntitiesAbsorbed   int
	EntitiesRepointed  int
	ReferrersRewritten int
}

// mergePair reads and checks the pair: both the organization's (404),
// distinct (400), of one type (409).
func (s *ConceptService) mergePair(ctx context.Context, orgID, winnerID, loserID string) (w, l *concept.Concept, err error) {
	if s == nil || s.Store == nil {
		return nil, nil, coded(ErrNotSupported, "not_supported_yet", "semantic concepts are not available on this storage")
	}
	for field, id := range map[string]string{"winner_id": winnerID, "loser_id": loserID} {
		if id == "" {
			return nil, nil, Invalid(field, "%s is required", field)
		}
		if err := checkText(field, id); err != nil {
			return nil, nil, err
		}
	}
	if w, err = s.Store.GetConcept(ctx, orgID, winnerID); err != nil {
		return nil, nil, err
	}
	if l, err = s.Store.GetConcept(ctx, orgID, loserID); err != nil {
		return nil, nil, err
	}
	return w, l, mergeRefusal(concept.CheckMerge(*w, *l))
}

func mergeRefusal(err error) error {
	switch {
	case errors.Is(err, concept.ErrMergeSelf):
		return (&Error{Kind: ports.ErrInvalid, Code: CodeMergeSelf, Detail: err.Error()}).at("loser_id")
	case errors.Is(err, concept.ErrMergeTypes):
		return (&Error{Kind: ports.ErrConflict, Code: CodeMergeTypes, Detail: err.Error()}).at("loser_id")
	}
	return err
}

// redirect plans the merge's redirect of the entity layer in the unit r:
// the entities that name the loser, locked, and what becomes of them.
func redirect(ctx context.Context, r ports.Repos, orgID, loser, winner, batchID string, s *ConceptService) ([]*dbsync.Entity, dbsync.Redirect, error) {
	if r.Entities == nil {
		return nil, dbsync.Redirect{}, nil
	}
	found, err := r.Entities.EntitiesMentioning(ctx, orgID, loser)
	if err != nil || len(found) == 0 {
		return nil, dbsync.Redirect{}, err
	}
	targets, err := dbsync.RedirectTargets(found, loser, winner)
	if err != nil {
		return nil, dbsync.Redirect{}, err
	}
	existing := map[string]*dbsync.Entity{}
	got, err := r.Entities.EntitiesByID(ctx, orgID, targets)
	if err != nil {
		return nil, dbsync.Redirect{}, err
	}
	for _, e := range got {
		existing[e.ID] = e
	}
	plan, err := dbsync.PlanRedirect(found, existing, loser, winner, batchID, s.Clock.Now())
	return found, plan, err
}

// MergeImpact previews the merge of loserID into winnerID: the texts, the
// loser's aliases and references, and the entities, schemas and linked
// databases the redirect would touch. Nothing is written.
func (s *ConceptService) MergeImpact(ctx context.Context, p *access.Principal, winnerID, loserID string) (ConceptMergeImpact, error) {
	if err := access.Authorize(p, access.ActConceptMergeImpact); err != nil {
		return ConceptMergeImpact{}, err
	}
	w, l, err := s.mergePair(ctx, p.OrgID, winnerID, loserID)
	if err != nil {
		return ConceptMergeImpact{}, err
	}
	out := ConceptMergeImpact{ConceptType: w.Type, WinnerText: w.CanonicalText, LoserText: l.CanonicalText,
		LoserAliasCount: len(l.Aliases), LoserRefCount: l.RefCount, SchemaNames: []string{}, DatabaseNames: []string{}}
	if s.UoW == nil {
		return out, nil
	}
	var found []*dbsync.Entity
	var plan dbsync.Redirect
	// A unit that writes nothing: the read sees the entities as a merge
	// would, and its locks go at the end.
	err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		found, plan, err = redirect(ctx, r, p.OrgID, l.ID, w.ID, "", s)
		return err
	})
	if err != nil {
		return ConceptMergeImpact{}, err
	}
	out.EntityCount, out.AbsorbedEntityCount, out.ReferrerEntityCount = plan.Absorbed+plan.Repointed, plan.Absorbed, plan.Referrers
	out.SchemaNames, out.DatabaseNames, err = s.touched(ctx, p.OrgID, found)
	return out, err
}

// touched names the live schemas of the entities and the registrations
// that feed on them, sorted.
func (s *ConceptService) touched(ctx context.Context, orgID string, es []*dbsync.Entity) (schemas, databases []string, err error) {
	schemas, databases = []string{}, []string{}
	seen := map[string]bool{}
	for _, e := range es {
		if seen[e.SchemaID] {
			continue
		}
		seen[e.SchemaID] = true
		if s.Schemas != nil {
			if sc, err := s.Schemas.GetSchema(ctx, orgID, e.SchemaID); err == nil && sc.DeletedAt == nil {
				schemas = append(schemas, sc.Name)
			}
		}
		if s.Entities == nil {
			continue
		}
		dbs, err := s.Entities.SchemaDatabases(ctx, orgID, e.SchemaID)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range dbsync.Feeds(dbs, e.SchemaID) {
			if !slices.Contains(databases, d.Name) {
				databases = append(databases, d.Name)
			}
		}
	}
	slices.Sort(schemas)
	slices.Sort(databases)
	return schemas, databases, nil
}

// Merge merges loserID into winnerID (the owner's) in one unit of work:
// the vocabulary first (aliases, reference counts, the loser and its
// vectors, in one store step that locks both concepts), then the record
// links, the records (their concept refs and output ids), the review
// pairs, and the entity layer's redirect with its deltas (delete deltas
// for the rows that go, upserts for the states written, one batch). A
// failure anywhere leaves all of it as it was, so the merge can simply be
// run again; a merge that committed leaves no loser (a second run is 404).
// Without a unit of work (an embedder's stores) only the stores' steps
// run, one after the other.
func (s *ConceptService) Merge(ctx context.Context, p *access.Principal, winnerID, loserID string) (ConceptMergeResult, error) {
	if err := access.Authorize(p, access.ActConceptMerge); err != nil {
		return ConceptMergeResult{}, err
	}
	w, l, err := s.mergePair(ctx, p.OrgID, winnerID, loserID)
	if err != nil {
		return ConceptMergeResult{}, err
	}
	if s.UoW == nil {
		return s.mergeOutsideUnit(ctx, p.OrgID, w, l)
	}
	var out ConceptMergeResult
	var records int
	err = s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if r.Vocabulary == nil {
			return coded(ErrNotSupported, "not_supported_yet", "concept merges are not available on this storage")
		}
		m, err := r.Vocabulary.MergeConcepts(ctx, p.OrgID, w.ID, l.ID)
		if err != nil {
			return err
		}
		if _, err := r.Vocabulary.RepointLinks(ctx, p.OrgID, l.ID, w.ID); err != nil {
			return err
		}
		if records, err = r.Records.RepointConcept(ctx, p.OrgID, l.ID, w.ID, m.Winner.CanonicalText); err != nil {
			return err
		}
		if _, err := r.Vocabulary.DropReviews(ctx, p.OrgID, []string{l.ID}); err != nil {
			return err
		}
		if out, err = s.redirectEntities(ctx, r, p.OrgID, l.ID, w.ID); err != nil {
			return err
		}
		out.AliasesMoved = m.AliasesMoved
		return nil
	})
	if err != nil {
		return ConceptMergeResult{}, err
	}
	s.Log.Info("concept merge", "org_id", p.OrgID, "winner_id", w.ID, "loser_id", l.ID, "records", records,
		"deltas", out.DeltasQueued)
	return out, nil
}

// mergeOutsideUnit merges with the stores alone, step by step (no entity
// layer): what runs without a unit of work.
func (s *ConceptService) mergeOutsideUnit(ctx context.Context, orgID string, w, l *concept.Concept) (ConceptMergeResult, error) {
	m, err := s.Store.MergeConcepts(ctx, orgID, w.ID, l.ID)
	if err != nil {
		return ConceptMergeResult{}, err
	}
	out := ConceptMergeResult{AliasesMoved: m.AliasesMoved}
	if s.Links != nil {
		if _, err := s.Links.RepointLinks(ctx, orgID, l.ID, w.ID); err != nil {
			return out, err
		}
	}
	if s.Records != nil {
		if _, err := s.Records.RepointConcept(ctx, orgID, l.ID, w.ID, m.Winner.CanonicalText); err != nil {
			return out, err
		}
	}
	if s.Reviews != nil {
		if _, err := s.Reviews.DropReviews(ctx, orgID, []string{l.ID}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// redirectEntities carries out the redirect in the unit r: the feeds of
// every schema it writes are locked first, in registration id order,
// then the rows that go are deleted and the states written.
func (s *ConceptService) redirectEntities(ctx context.Context, r ports.Repos, orgID, loser, winner string) (ConceptMergeResult, error) {
	var out ConceptMergeResult
	_, plan, err := redirect(ctx, r, orgID, loser, winner, s.IDs.NewID(), s)
	if err != nil || len(plan.Writes) == 0 {
		return out, err
	}
	ids, schemas := make([]string, 0, len(plan.Deletes)), []string{}
	for _, e := range plan.Deletes {
		ids, schemas = append(ids, e.ID), append(schemas, e.SchemaID)
	}
	ws := make([]ports.EntityWrite, 0, len(plan.Writes))
	for _, w := range plan.Writes {
		ws, schemas = append(ws, ports.EntityWrite{Write: w}), append(schemas, w.SchemaID)
	}
	slices.Sort(schemas)
	if err := r.Entities.LockFeeds(ctx, slices.Compact(schemas)); err != nil {
		return out, err
	}
	var written []ports.EntityWritten
	if len(ids) > 0 {
		if written, err = r.Entities.DeleteEntities(ctx, orgID, ids, plan.Writes[0].BatchID, s.Clock.Now()); err != nil {
			return out, err
		}
	}
	upserts, err := writeEntities(ctx, r, ws)
	if err != nil {
		return out, err
	}
	dbs := map[string]bool{}
	for _, x := range append(written, upserts...) {
		for db, ids := range x.Deltas {
			dbs[db] = true
			out.DeltasQueued += len(ids)
		}
	}
	out.DatabasesNotified, out.EntitiesAbsorbed, out.EntitiesRepointed, out.ReferrersRewritten = len(dbs),
		plan.Absorbed, plan.Repointed, plan.Referrers
	return out, nil
}
