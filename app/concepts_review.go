package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// Bounds of the review and delete routes.
const (
	// DuplicateScan is how many concepts a duplicates listing looks
	// around (the most referenced first): each costs one neighbour lookup.
	DuplicateScan = 500
	// duplicateNeighbors is how many neighbours of each scanned concept
	// are considered.
	duplicateNeighbors = 10
	// DefaultDuplicateBand is the width of the gray band under the
	// threshold: 0.92 − 0.12 = 0.80, the ladder's judge floor.
	DefaultDuplicateBand = concept.DefaultAccept - concept.DefaultJudgeFloor
	// MaxDeleteIDs bounds the ids of one delete.
	MaxDeleteIDs = 1000
)

// ReviewPair is a pair of the review list with its two concepts (nil for
// a concept deleted since).
type ReviewPair struct {
	Review ports.ConceptReview
	A, B   *concept.Concept
}

// ListReviews returns a page of the review list, most similar first, with
// the concepts of each pair, and how many pairs there are.
func (s *ConceptService) ListReviews(ctx context.Context, p *access.Principal, types []string, limit, offset int) ([]ReviewPair, int, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return nil, 0, err
	}
	types, err := conceptTypes("concept_types", types)
	if err != nil {
		return nil, 0, err
	}
	if err := checkPage(limit, offset); err != nil {
		return nil, 0, err
	}
	if s.Reviews == nil {
		return []ReviewPair{}, 0, nil
	}
	rs, total, err := s.Reviews.ListReviews(ctx, p.OrgID, ports.ReviewFilter{Types: types, Limit: limit, Offset: offset})
	if err != nil {
		return nil, 0, err
	}
	out := make([]ReviewPair, 0, len(rs))
	for _, r := range rs {
		pair := ReviewPair{Review: r}
		if pair.A, err = s.optionalConcept(ctx, p.OrgID, r.AID); err != nil {
			return nil, 0, err
		}
		if pair.B, err = s.optionalConcept(ctx, p.OrgID, r.BID); err != nil {
			return nil, 0, err
		}
		out = append(out, pair)
	}
	return out, total, nil
}

func (s *ConceptService) optionalConcept(ctx context.Context, orgID, id string) (*concept.Concept, error) {
	c, err := s.Store.GetConcept(ctx, orgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, nil
	}
	return c, err
}

// DuplicateQuery asks for the pairs in the gray band [Threshold −
// BandWidth, Threshold); nil takes the defaults (0.92 and 0.12).
type DuplicateQuery struct {
	Threshold, BandWidth *float64
	Types                []string
	Limit                int
}

// DuplicatePair is two concepts of one slice in the gray band.
type DuplicatePair struct {
	Slice      concept.Slice
	A          *concept.Concept
	B          concept.Neighbor
	Similarity float64
}

// Duplicates lists the pairs of concepts whose similarity falls in the
// gray band, most similar first. The work is bounded: the DuplicateScan
// most referenced concepts (of the types asked) are looked around, each
// through its own vector's nearest neighbours in its slice, so a pair
// between two rarely used concepts past that bound is not seen.
func (s *ConceptService) Duplicates(ctx context.Context, p *access.Principal, q DuplicateQuery) ([]DuplicatePair, float64, float64, error) {
	if err := access.Authorize(p, access.ActReadConcepts); err != nil {
		return nil, 0, 0, err
	}
	high, width := concept.DefaultAccept, DefaultDuplicateBand
	if q.Threshold != nil {
		high = *q.Threshold
	}
	if q.BandWidth != nil {
		width = *q.BandWidth
	}
	if math.IsNaN(high) || high <= 0 || high > 1 {
		return nil, 0, 0, Invalid("threshold", "threshold %v: want a number greater than 0 and at most 1", high)
	}
	if math.IsNaN(width) || width <= 0 || width > high {
		return nil, 0, 0, Invalid("band_width", "band_width %v: want a number greater than 0 and at most the threshold", width)
	}
	types, err := conceptTypes("concept_types", q.Types)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := checkPage(q.Limit, 0); err != nil {
		return nil, 0, 0, err
	}
	low := math.Round((high-width)*1e9) / 1e9
	scan, err := s.scanConcepts(ctx, p.OrgID, ports.ConceptFilter{Types: types, Sort: ports.SortConceptRefCount, Descending: true}, DuplicateScan)
	if err != nil {
		return nil, 0, 0, err
	}
	pairs, err := s.grayPairs(ctx, scan, low, high)
	if err != nil {
		return nil, 0, 0, err
	}
	return pairs[:min(len(pairs), cmpOr(q.Limit, page.DefaultSize))], low, high, nil
}

// grayPairs are the pairs among the concepts' neighbours in [low, high),
// each once, most similar first (ties by ids).
func (s *ConceptService) grayPairs(ctx context.Context, cs []*concept.Concept, low, high float64) ([]DuplicatePair, error) {
	seen := map[[2]string]bool{}
	var out []DuplicatePair
	for _, c := range cs {
		vec, err := s.vectorOf(ctx, c)
		if err != nil {
			return nil, err
		}
		if vec == nil {
			continue
		}
		ns, err := s.Vectors.Nearest(ctx, c.OrgID, c.Slice(), vec, duplicateNeighbors+1)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			k := [2]string{min(c.ID, n.ConceptID), max(c.ID, n.ConceptID)}
			if n.ConceptID == c.ID || n.Similarity < low || n.Similarity >= high || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, DuplicatePair{Slice: c.Slice(), A: c, B: n, Similarity: n.Similarity})
		}
	}
	slices.SortFunc(out, func(a, b DuplicatePair) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return strings.Compare(a.A.ID+a.B.ConceptID, b.A.ID+b.B.ConceptID)
	})
	return out, nil
}

// scanConcepts pages through the concepts f selects, up to most of them.
func (s *ConceptService) scanConcepts(ctx context.Context, orgID string, f ports.ConceptFilter, most int) ([]*concept.Concept, error) {
	var out []*concept.Concept
	for f.Offset = 0; len(out) < most; f.Offset += page.MaxSize {
		f.Limit = min(page.MaxSize, most-len(out))
		cs, _, err := s.Store.ListConcepts(ctx, orgID, f)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
		if len(cs) < f.Limit {
			break
		}
	}
	return out, nil
}

// ConceptDeletion selects concepts to delete: those among IDs (when set)
// of Types (when set), only the unreferenced ones with UnusedOnly.
type ConceptDeletion struct {
	IDs, Types []string
	UnusedOnly bool
}

// ConceptDeleteResult is what a delete removed.
type ConceptDeleteResult struct {
	Deleted, RecordLinks int
}

// ConceptDeleteImpact is what a delete would touch. ResyncDeltas is this
// project's addition (SPEC.md: the resync cost): the deltas a resync of
// the linked databases would emit for the entities that name the
// concepts, one upsert per entity and registration feeding on its schema
// (dbsync.UpsertDeltas).
type ConceptDeleteImpact struct {
	Concepts, RecordLinks      int
	ResyncDeltas               int
	SchemaNames, DatabaseNames []string
}

// check validates the selection and the caller's right to it: clearing
// whole types without naming ids is the owner's.
func (d ConceptDeletion) check(p *access.Principal, act access.Action) (ports.ConceptSelection, error) {
	if err := access.Authorize(p, act); err != nil {
		return ports.ConceptSelection{}, err
	}
	if len(d.IDs) == 0 && len(d.Types) == 0 {
		return ports.ConceptSelection{}, Invalid("ids", "name the concepts to delete: ids, concept_types or both")
	}
	if len(d.IDs) > MaxDeleteIDs {
		return ports.ConceptSelection{}, Invalid("ids", "at most %d ids per delete", MaxDeleteIDs)
	}
	if err := checkText("ids", d.IDs); err != nil {
		return ports.ConceptSelection{}, err
	}
	types, err := conceptTypes("concept_types", d.Types)
	if err != nil {
		return ports.ConceptSelection{}, err
	}
	if len(d.IDs) == 0 && act == access.ActEditConcepts {
		if err := access.Authorize(p, access.ActClearConceptTypes); err != nil {
			return ports.ConceptSelection{}, fmt.Errorf("clearing whole concept types: %w", err)
		}
	}
	return ports.ConceptSelection{IDs: d.IDs, Types: types, UnusedOnly: d.UnusedOnly}, nil
}

// DeleteConcepts removes the selected concepts with their aliases,
// vectors, record links and review pairs. A concept already gone (or
// another organization's) is not counted: deleting twice is not an error.
func (s *ConceptService) DeleteConcepts(ctx context.Context, p *access.Principal, d ConceptDeletion) (ConceptDeleteResult, error) {
	sel, err := d.check(p, access.ActEditConcepts)
	if err != nil {
		return ConceptDeleteResult{}, err
	}
	ids, err := s.Store.DeleteConcepts(ctx, p.OrgID, sel)
	if err != nil || len(ids) == 0 {
		return ConceptDeleteResult{}, err
	}
	res := ConceptDeleteResult{Deleted: len(ids)}
	if s.Links != nil {
		if res.RecordLinks, err = s.Links.DeleteLinks(ctx, p.OrgID, ids); err != nil {
			return res, err
		}
	}
	if s.Reviews != nil {
		if _, err := s.Reviews.DropReviews(ctx, p.OrgID, ids); err != nil {
			return res, err
		}
	}
	return res, nil
}

// DeleteImpact counts what DeleteConcepts would remove and names the
// schemas of the linked records and the databases those schemas feed.
func (s *ConceptService) DeleteImpact(ctx context.Context, p *access.Principal, d ConceptDeletion) (ConceptDeleteImpact, error) {
	sel, err := d.check(p, access.ActProbeConcepts)
	if err != nil {
		return ConceptDeleteImpact{}, err
	}
	ids, err := s.selected(ctx, p.OrgID, sel)
	if err != nil {
		return ConceptDeleteImpact{}, err
	}
	out := ConceptDeleteImpact{Concepts: len(ids), SchemaNames: []string{}, DatabaseNames: []string{}}
	if len(ids) == 0 {
		return out, nil
	}
	if out.ResyncDeltas, err = s.resyncDeltas(ctx, p.OrgID, ids); err != nil {
		return out, err
	}
	if s.Links == nil {
		return out, nil
	}
	use, err := s.Links.UseOf(ctx, p.OrgID, ids)
	if err != nil {
		return out, err
	}
	out.RecordLinks = use.RecordLinks
	out.SchemaNames, out.DatabaseNames, err = s.schemaAndDatabaseNames(ctx, p.OrgID, use.SchemaIDs)
	return out, err
}

// resyncDeltas counts the deltas a resync would emit for the entities
// naming the concepts ids (as their semantic id or in their state, as a
// merge finds them): one per entity and registration that feeds on its
// schema. The read is a unit of work that writes nothing.
func (s *ConceptService) resyncDeltas(ctx context.Context, orgID string, ids []string) (int, error) {
	if s.UoW == nil || s.Entities == nil {
		return 0, nil
	}
	var found []*dbsync.Entity
	err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if r.Entities == nil {
			return nil
		}
		var err error
		found, err = r.Entities.EntitiesMentioning(ctx, orgID, ids...)
		return err
	})
	if err != nil {
		return 0, err
	}
	feeds, n := map[string]int{}, 0
	for _, e := range found {
		c, seen := feeds[e.SchemaID]
		if !seen {
			dbs, err := s.Entities.SchemaDatabases(ctx, orgID, e.SchemaID)
			if err != nil {
				return 0, err
			}
			c = len(dbsync.Feeds(dbs, e.SchemaID))
			feeds[e.SchemaID] = c
		}
		n += c
	}
	return n, nil
}

// selected are the ids a selection names, as DeleteConcepts reads it.
func (s *ConceptService) selected(ctx context.Context, orgID string, sel ports.ConceptSelection) ([]string, error) {
	var cs []*concept.Concept
	if len(sel.IDs) == 0 {
		all, err := s.scanConcepts(ctx, orgID, ports.ConceptFilter{Types: sel.Types}, math.MaxInt)
		if err != nil {
			return nil, err
		}
		cs = all
	}
	for _, id := range sel.IDs {
		c, err := s.optionalConcept(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		if c != nil && (len(sel.Types) == 0 || slices.Contains(sel.Types, c.Type)) {
			cs = append(cs, c)
		}
	}
	ids := []string{}
	for _, c := range cs {
		if (!sel.UnusedOnly || c.RefCount == 0) && !slices.Contains(ids, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

// schemaAndDatabaseNames names the schemas and the registrations linked
// to them, sorted; a schema deleted since is left out.
func (s *ConceptService) schemaAndDatabaseNames(ctx context.Context, orgID string, schemaIDs []string) ([]string, []string, error) {
	schemas, dbs := []string{}, []string{}
	for _, id := range schemaIDs {
		if s.Schemas != nil {
			sc, err := s.Schemas.GetSchema(ctx, orgID, id)
			switch {
			case err == nil:
				schemas = append(schemas, sc.Name)
			case !errors.Is(err, ports.ErrNotFound):
				return nil, nil, err
			}
		}
		if s.Databases != nil {
			ds, err := s.Databases.ListDatabases(ctx, orgID, id)
			if err != nil {
				return nil, nil, err
			}
			for _, d := range ds {
				dbs = append(dbs, d.Name)
			}
		}
	}
	slices.Sort(schemas)
	slices.Sort(dbs)
	return slices.Compact(schemas), slices.Compact(dbs), nil
}

// DeleteConcept deletes one concept: a concept already gone answers a
// count of 0.
func (s *ConceptService) DeleteConcept(ctx context.Context, p *access.Principal, id string) (ConceptDeleteResult, error) {
	if err := checkText("concept_id", id); err != nil {
		return ConceptDeleteResult{}, err
	}
	return s.DeleteConcepts(ctx, p, ConceptDeletion{IDs: []string{id}})
}
