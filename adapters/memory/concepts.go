package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// ConceptStore is ports.ConceptStore and its exact ports.VectorIndex in
// maps: Nearest compares the query with every vector of the slice. One
// value serves both ports so that deleting a concept drops its vectors.
type ConceptStore struct {
	mu       sync.RWMutex
	concepts map[string]*concept.Concept
	// texts maps (org, type, normalized text) to the concept holding it.
	texts map[[3]string]string
	// vectors maps (concept id, embedding model) to the concept's vector.
	vectors map[[2]string][]float32
}

var (
	_ ports.ConceptStore = (*ConceptStore)(nil)
	_ ports.VectorIndex  = (*ConceptStore)(nil)
)

// NewConceptStore returns an empty vocabulary.
func NewConceptStore() *ConceptStore {
	return &ConceptStore{concepts: map[string]*concept.Concept{}, texts: map[[3]string]string{},
		vectors: map[[2]string][]float32{}}
}

func cloneConcept(c *concept.Concept) *concept.Concept {
	out := *c
	out.Aliases = slices.Clone(c.Aliases)
	return &out
}

func errConcept(id string) error {
	return fmt.Errorf("memory: concept %s: %w", id, ports.ErrNotFound)
}

// owned is the organization's concept id, or nil; the caller holds mu.
func (s *ConceptStore) owned(orgID, id string) *concept.Concept {
	c, ok := s.concepts[id]
	if !ok || c.OrgID != orgID {
		return nil
	}
	return c
}

// CreateConcept implements ports.ConceptStore.
func (s *ConceptStore) CreateConcept(_ context.Context, n ports.NewConcept) (*concept.Concept, error) {
	norm, err := ports.ConceptText(n.Text)
	if err != nil {
		return nil, err
	}
	if len(n.Vector) > 0 {
		if err := ports.CheckVector(n.Vector); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [3]string{n.OrgID, n.Type, norm}
	if _, taken := s.texts[key]; taken {
		return nil, fmt.Errorf("memory: create concept: text %q: %w", norm, ports.ErrConflict)
	}
	if _, taken := s.concepts[n.ID]; taken {
		return nil, fmt.Errorf("memory: create concept %s: %w", n.ID, ports.ErrConflict)
	}
	at := ts(n.CreatedAt)
	c := &concept.Concept{ID: n.ID, OrgID: n.OrgID, Type: n.Type, CanonicalText: n.Text, NormalizedText: norm,
		EmbeddingModel: n.EmbeddingModel, Dims: len(n.Vector), CreatedAt: at,
		Aliases: []concept.Alias{{ID: n.AliasID, Text: n.Text, NormalizedText: norm, IsCanonical: true, Origin: n.Origin, CreatedAt: at}}}
	s.concepts[n.ID] = c
	s.texts[key] = n.ID
	if len(n.Vector) > 0 {
		s.vectors[[2]string{n.ID, n.EmbeddingModel}] = slices.Clone(n.Vector)
	}
	return cloneConcept(c), nil
}

// GetConcept implements ports.ConceptStore.
func (s *ConceptStore) GetConcept(_ context.Context, orgID, id string) (*concept.Concept, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.owned(orgID, id)
	if c == nil {
		return nil, errConcept(id)
	}
	return cloneConcept(c), nil
}

// FindExact implements ports.ConceptStore.
func (s *ConceptStore) FindExact(_ context.Context, orgID, conceptType, text string) (*concept.Neighbor, error) {
	norm := concept.Normalize(text)
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.texts[[3]string{orgID, conceptType, norm}]
	if !ok {
		return nil, fmt.Errorf("memory: find concept text %q: %w", norm, ports.ErrNotFound)
	}
	c := s.concepts[id]
	a, _ := c.AliasByText(norm)
	return &concept.Neighbor{ConceptID: c.ID, AliasID: a.ID, Text: a.Text, CanonicalText: c.CanonicalText,
		IsCanonical: a.IsCanonical, RefCount: c.RefCount, Similarity: 1}, nil
}

// ListConcepts implements ports.ConceptStore.
func (s *ConceptStore) ListConcepts(_ context.Context, orgID string, f ports.ConceptFilter) ([]*concept.Concept, int, error) {
	search := concept.Normalize(f.Search)
	s.mu.RLock()
	var all []*concept.Concept
	for _, c := range s.concepts {
		if c.OrgID == orgID && conceptMatches(c, f, search) {
			all = append(all, cloneConcept(c))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b *concept.Concept) int {
		var c int
		switch f.Sort {
		case ports.SortConceptRefCount:
			c = cmp.Compare(a.RefCount, b.RefCount)
		case ports.SortConceptText:
			c = strings.Compare(a.NormalizedText, b.NormalizedText)
		default:
			c = a.CreatedAt.Compare(b.CreatedAt)
		}
		if c == 0 {
			c = strings.Compare(a.ID, b.ID)
		}
		if f.Descending {
			return -c
		}
		return c
	})
	items := all[min(max(f.Offset, 0), len(all)):]
	return items[:min(len(items), conceptLimit(f.Limit))], len(all), nil
}

// conceptLimit applies page's bounds to a listing's limit.
func conceptLimit(n int) int {
	switch {
	case n <= 0:
		return page.DefaultSize
	case n > page.MaxSize:
		return page.MaxSize
	}
	return n
}

func conceptMatches(c *concept.Concept, f ports.ConceptFilter, search string) bool {
	switch {
	case len(f.Types) > 0 && !slices.Contains(f.Types, c.Type),
		c.RefCount < f.MinRefCount,
		f.CreatedAfter != nil && !c.CreatedAt.After(*f.CreatedAfter),
		f.CreatedBefore != nil && !c.CreatedAt.Before(*f.CreatedBefore):
		return false
	case search == "":
		return true
	}
	return slices.ContainsFunc(c.Aliases, func(a concept.Alias) bool { return strings.Contains(a.NormalizedText, search) })
}

// AddAlias implements ports.ConceptStore.
func (s *ConceptStore) AddAlias(_ context.Context, orgID, conceptID string, a ports.NewAlias) (*concept.Concept, error) {
	norm, err := ports.ConceptText(a.Text)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owned(orgID, conceptID)
	if c == nil {
		return nil, errConcept(conceptID)
	}
	key := [3]string{orgID, c.Type, norm}
	if _, taken := s.texts[key]; taken {
		return nil, fmt.Errorf("memory: add alias: text %q: %w", norm, ports.ErrConflict)
	}
	c.Aliases = append(c.Aliases, concept.Alias{ID: a.ID, Text: a.Text, NormalizedText: norm, Origin: a.Origin, CreatedAt: ts(a.CreatedAt)})
	sortAliases(c.Aliases)
	s.texts[key] = c.ID
	return cloneConcept(c), nil
}

// sortAliases puts aliases oldest first, ties by id: the order the
// ConceptStore returns them in, which concept.RemoveAlias's promotion
// reads.
func sortAliases(as []concept.Alias) {
	slices.SortFunc(as, func(a, b concept.Alias) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// RemoveAlias implements ports.ConceptStore.
func (s *ConceptStore) RemoveAlias(_ context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error) {
	return s.applyAlias(orgID, conceptID, aliasID, concept.RemoveAlias)
}

// PromoteAlias implements ports.ConceptStore.
func (s *ConceptStore) PromoteAlias(_ context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error) {
	return s.applyAlias(orgID, conceptID, aliasID, concept.PromoteAlias)
}

// applyAlias stores what rule makes of the concept, and frees the texts of
// the aliases it dropped.
func (s *ConceptStore) applyAlias(orgID, conceptID, aliasID string, rule func(concept.Concept, string) (concept.Concept, error)) (*concept.Concept, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owned(orgID, conceptID)
	if c == nil {
		return nil, errConcept(conceptID)
	}
	next, err := rule(*cloneConcept(c), aliasID)
	if err != nil {
		return nil, aliasErr(err, conceptID, aliasID)
	}
	for _, a := range c.Aliases {
		if _, kept := next.AliasByText(a.NormalizedText); !kept {
			delete(s.texts, [3]string{orgID, c.Type, a.NormalizedText})
		}
	}
	*c = next
	return cloneConcept(c), nil
}

// aliasErr makes an unknown alias ErrNotFound too, for callers that only
// know the port's errors.
func aliasErr(err error, conceptID, aliasID string) error {
	if err == concept.ErrAliasNotFound {
		return fmt.Errorf("concept %s alias %s: %w: %w", conceptID, aliasID, err, ports.ErrNotFound)
	}
	return fmt.Errorf("concept %s alias %s: %w", conceptID, aliasID, err)
}

// BumpRefCounts implements ports.ConceptStore.
func (s *ConceptStore) BumpRefCounts(_ context.Context, orgID string, bumps []ports.RefBump) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	concepts, aliases := ports.SumRefBumps(bumps)
	for id, d := range concepts {
		if c := s.owned(orgID, id); c != nil {
			c.RefCount = max(0, c.RefCount+d)
		}
	}
	for k, d := range aliases {
		c := s.owned(orgID, k[0])
		if c == nil {
			continue
		}
		for i := range c.Aliases {
			if c.Aliases[i].ID == k[1] {
				c.Aliases[i].RefCount = max(0, c.Aliases[i].RefCount+d)
			}
		}
	}
	return nil
}

// ConceptTypes implements ports.ConceptStore.
func (s *ConceptStore) ConceptTypes(_ context.Context, orgID string) ([]ports.ConceptTypeInfo, error) {
	s.mu.RLock()
	facets := map[concept.Slice]*ports.ConceptTypeInfo{}
	for _, c := range s.concepts {
		if c.OrgID != orgID {
			continue
		}
		f := facets[c.Slice()]
		if f == nil {
			f = &ports.ConceptTypeInfo{Type: c.Type, EmbeddingModel: c.EmbeddingModel}
			facets[c.Slice()] = f
		}
		f.ConceptCount++
		f.Dims = max(f.Dims, c.Dims)
		if c.RefCount == 0 {
			f.UnusedCount++
		}
	}
	s.mu.RUnlock()
	out := make([]ports.ConceptTypeInfo, 0, len(facets))
	for _, f := range facets {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b ports.ConceptTypeInfo) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(a.EmbeddingModel, b.EmbeddingModel))
	})
	return out, nil
}

// DeleteConcepts implements ports.ConceptStore.
func (s *ConceptStore) DeleteConcepts(_ context.Context, orgID string, sel ports.ConceptSelection) ([]string, error) {
	if len(sel.IDs) == 0 && len(sel.Types) == 0 {
		return nil, fmt.Errorf("memory: delete concepts: %w: name ids or types", ports.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for id, c := range s.concepts {
		if c.OrgID != orgID || (len(sel.IDs) > 0 && !slices.Contains(sel.IDs, id)) ||
			(len(sel.Types) > 0 && !slices.Contains(sel.Types, c.Type)) || (sel.UnusedOnly && c.RefCount > 0) {
			continue
		}
		for _, a := range c.Aliases {
			delete(s.texts, [3]string{orgID, c.Type, a.NormalizedText})
		}
		for k := range s.vectors {
			if k[0] == id {
				delete(s.vectors, k)
			}
		}
		delete(s.concepts, id)
		gone = append(gone, id)
	}
	slices.Sort(gone)
	return gone, nil
}

// Upsert implements ports.VectorIndex.
func (s *ConceptStore) Upsert(_ context.Context, orgID string, sl concept.Slice, conceptID string, vector []float32) error {
	if err := ports.CheckVector(vector); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.owned(orgID, conceptID)
	if c == nil || c.Type != sl.Type {
		return errConcept(conceptID)
	}
	s.vectors[[2]string{conceptID, sl.EmbeddingModel}] = slices.Clone(vector)
	if sl.EmbeddingModel == c.EmbeddingModel {
		c.Dims = len(vector)
	}
	return nil
}

// Nearest implements ports.VectorIndex by comparing vector with every
// vector of the slice.
func (s *ConceptStore) Nearest(_ context.Context, orgID string, sl concept.Slice, vector []float32, k int) ([]concept.Neighbor, error) {
	if k < 1 {
		return nil, nil
	}
	s.mu.RLock()
	var ns []concept.Neighbor
	for _, c := range s.concepts {
		v, ok := s.vectors[[2]string{c.ID, sl.EmbeddingModel}]
		if !ok || c.OrgID != orgID || c.Type != sl.Type || len(v) != len(vector) {
			continue
		}
		ns = append(ns, concept.Neighbor{ConceptID: c.ID, Text: c.CanonicalText, CanonicalText: c.CanonicalText,
			IsCanonical: true, RefCount: c.RefCount, Similarity: concept.Cosine(vector, v)})
	}
	s.mu.RUnlock()
	ns = concept.Nearest(ns)
	return ns[:min(k, len(ns))], nil
}

// Delete implements ports.VectorIndex.
func (s *ConceptStore) Delete(_ context.Context, orgID string, sl concept.Slice, conceptID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.owned(orgID, conceptID); c != nil && c.Type == sl.Type {
		delete(s.vectors, [2]string{conceptID, sl.EmbeddingModel})
		if sl.EmbeddingModel == c.EmbeddingModel {
			c.Dims = 0
		}
	}
	return nil
}

// MergeConcepts implements ports.ConceptStore.
func (s *ConceptStore) MergeConcepts(_ context.Context, orgID, winnerID, loserID string) (ports.MergedConcept, error) {
	out, _, err := s.merge(orgID, winnerID, loserID)
	return out, err
}

// merge merges loser into winner and returns its inverse too, for a
// unit of work's undo: the two concepts, the loser's texts and vectors
// as they were.
func (s *ConceptStore) merge(orgID, winnerID, loserID string) (ports.MergedConcept, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, l := s.owned(orgID, winnerID), s.owned(orgID, loserID)
	switch {
	case w == nil:
		return ports.MergedConcept{}, nil, errConcept(winnerID)
	case l == nil:
		return ports.MergedConcept{}, nil, errConcept(loserID)
	}
	merged, moved, err := concept.Merge(*cloneConcept(w), *cloneConcept(l))
	if err != nil {
		return ports.MergedConcept{}, nil, ports.MergeErr(err)
	}
	prevW, prevL := cloneConcept(w), cloneConcept(l)
	texts, vectors := map[[3]string]string{}, map[[2]string][]float32{}
	sortAliases(merged.Aliases)
	for _, a := range l.Aliases {
		key := [3]string{orgID, l.Type, a.NormalizedText}
		if s.texts[key] == loserID {
			texts[key] = loserID
		}
		if _, kept := merged.AliasByText(a.NormalizedText); kept && s.texts[key] == loserID {
			s.texts[key] = winnerID
		} else if s.texts[key] == loserID {
			delete(s.texts, key)
		}
	}
	for k, v := range s.vectors {
		if k[0] == loserID {
			vectors[k] = v
			delete(s.vectors, k)
		}
	}
	delete(s.concepts, loserID)
	*w = merged
	undo := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.concepts[winnerID], s.concepts[loserID] = prevW, prevL
		maps.Copy(s.texts, texts)
		maps.Copy(s.vectors, vectors)
	}
	return ports.MergedConcept{Winner: cloneConcept(w), AliasesMoved: len(moved)}, undo, nil
}
