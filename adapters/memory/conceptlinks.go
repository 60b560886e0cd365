package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// ConceptLinks is ports.ConceptLinks in a map keyed by (record, path).
type ConceptLinks struct {
	mu    sync.RWMutex
	links map[[2]string]ports.ConceptLink
}

var _ ports.ConceptLinks = (*ConceptLinks)(nil)

// NewConceptLinks returns an empty link store.
func NewConceptLinks() *ConceptLinks {
	return &ConceptLinks{links: map[[2]string]ports.ConceptLink{}}
}

func cloneLink(l ports.ConceptLink) ports.ConceptLink {
	if l.Cosine != nil {
		l.Cosine = new(*l.Cosine)
	}
	l.CreatedAt = ts(l.CreatedAt)
	return l
}

// AddLinks implements ports.ConceptLinks.
func (s *ConceptLinks) AddLinks(_ context.Context, links []ports.ConceptLink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range links {
		s.links[[2]string{l.RecordID, l.JSONPath}] = cloneLink(l)
	}
	return nil
}

// LinksOf implements ports.ConceptLinks.
func (s *ConceptLinks) LinksOf(_ context.Context, orgID, conceptID string, limit int) ([]ports.ConceptLink, error) {
	s.mu.RLock()
	var out []ports.ConceptLink
	for _, l := range s.links {
		if l.OrgID == orgID && l.ConceptID == conceptID {
			out = append(out, cloneLink(l))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ports.ConceptLink) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.RecordID, b.RecordID), cmp.Compare(a.JSONPath, b.JSONPath))
	})
	if limit < 0 {
		limit = 0
	}
	return out[:min(limit, len(out))], nil
}

// UseOf implements ports.ConceptLinks.
func (s *ConceptLinks) UseOf(_ context.Context, orgID string, conceptIDs []string) (ports.ConceptUse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var use ports.ConceptUse
	for _, l := range s.links {
		if l.OrgID != orgID || !slices.Contains(conceptIDs, l.ConceptID) {
			continue
		}
		use.RecordLinks++
		if l.SchemaID != "" && !slices.Contains(use.SchemaIDs, l.SchemaID) {
			use.SchemaIDs = append(use.SchemaIDs, l.SchemaID)
		}
	}
	slices.Sort(use.SchemaIDs)
	return use, nil
}

// RepointLinks implements ports.ConceptLinks.
func (s *ConceptLinks) RepointLinks(_ context.Context, orgID, from, to string) (int, error) {
	moved := s.repoint(orgID, from, to)
	return len(moved), nil
}

// repoint also returns the keys of the links it moved, for a unit of
// work's undo.
func (s *ConceptLinks) repoint(orgID, from, to string) [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var moved [][2]string
	for k, l := range s.links {
		if l.OrgID == orgID && l.ConceptID == from {
			// The alias keeps its id: a merge moves the loser's aliases
			// to the winner.
			l.ConceptID = to
			s.links[k] = l
			moved = append(moved, k)
		}
	}
	return moved
}

// unrepoint moves the links back (the inverse of repoint).
func (s *ConceptLinks) unrepoint(keys [][2]string, from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if l, ok := s.links[k]; ok && l.ConceptID == to {
			l.ConceptID = from
			s.links[k] = l
		}
	}
}

// DeleteLinks implements ports.ConceptLinks.
func (s *ConceptLinks) DeleteLinks(_ context.Context, orgID string, conceptIDs []string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, l := range s.links {
		if l.OrgID == orgID && slices.Contains(conceptIDs, l.ConceptID) {
			delete(s.links, k)
			n++
		}
	}
	return n, nil
}
