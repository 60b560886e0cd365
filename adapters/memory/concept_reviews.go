package memory

import (
	"cmp"
	"context"

	"slices"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// ConceptReviews is ports.ConceptReviews in a map keyed by organization
// and the pair's two ids, sorted.
type ConceptReviews struct {
	mu    sync.RWMutex
	pairs map[[3]string]ports.ConceptReview
}

var _ ports.ConceptReviews = (*ConceptReviews)(nil)

// NewConceptReviews returns an empty review list.
func NewConceptReviews() *ConceptReviews {
	return &ConceptReviews{pairs: map[[3]string]ports.ConceptReview{}}
}

func reviewKey(r ports.ConceptReview) [3]string {
	lo, hi := min(r.AID, r.BID), max(r.AID, r.BID)
	return [3]string{r.OrgID, lo, hi}
}

// FileReviews implements ports.ConceptReviews.
func (s *ConceptReviews) FileReviews(_ context.Context, pairs []ports.ConceptReview) error {
	for _, p := range pairs {
		if err := ports.CheckReview(p); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pairs {
		k := reviewKey(p)
		if _, filed := s.pairs[k]; !filed {
			p.CreatedAt = ts(p.CreatedAt)
			s.pairs[k] = p
		}
	}
	return nil
}

// ListReviews implements ports.ConceptReviews.
func (s *ConceptReviews) ListReviews(_ context.Context, orgID string, f ports.ReviewFilter) ([]ports.ConceptReview, int, error) {
	s.mu.RLock()
	var all []ports.ConceptReview
	for _, p := range s.pairs {
		if p.OrgID == orgID && (len(f.Types) == 0 || slices.Contains(f.Types, p.Type)) {
			all = append(all, p)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b ports.ConceptReview) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	items := all[min(max(f.Offset, 0), len(all)):]
	return items[:min(len(items), conceptLimit(f.Limit))], len(all), nil
}

// DropReviews implements ports.ConceptReviews.
func (s *ConceptReviews) DropReviews(_ context.Context, orgID string, conceptIDs []string) (int, error) {
	return len(s.drop(orgID, conceptIDs)), nil
}

// drop also returns the pairs it removed, for a unit of work's undo.
func (s *ConceptReviews) drop(orgID string, conceptIDs []string) map[[3]string]ports.ConceptReview {
	gone := map[[3]string]ports.ConceptReview{}
	if len(conceptIDs) == 0 {
		return gone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.pairs {
		if p.OrgID == orgID && (slices.Contains(conceptIDs, p.AID) || slices.Contains(conceptIDs, p.BID)) {
			gone[k] = p
			delete(s.pairs, k)
		}
	}
	return gone
}

// refile puts dropped pairs back (the inverse of drop).
func (s *ConceptReviews) refile(pairs map[[3]string]ports.ConceptReview) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range pairs {
		if _, ok := s.pairs[k]; !ok {
			s.pairs[k] = p
		}
	}
}
