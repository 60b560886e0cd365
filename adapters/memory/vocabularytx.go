package memory

import (
	"context"

	"github.com/entityenrich/enrich/ports"
)

// txVocabulary is ports.VocabularyWriter inside a unit of work: each step
// records its inverse in the unit's undo log, so a merge that fails later
// in its unit leaves the vocabulary, the links and the review list as
// they were. Links and reviews may be nil (the unit keeps none).
type txVocabulary struct {
	concepts *ConceptStore
	links    *ConceptLinks
	reviews  *ConceptReviews
	u        *undoLog
}

var _ ports.VocabularyWriter = txVocabulary{}

func (t txVocabulary) MergeConcepts(_ context.Context, orgID, winnerID, loserID string) (ports.MergedConcept, error) {
	out, undo, err := t.concepts.merge(orgID, winnerID, loserID)
	if err != nil {
		return ports.MergedConcept{}, err
	}
	t.u.add(undo)
	return out, nil
}

func (t txVocabulary) RepointLinks(_ context.Context, orgID, from, to string) (int, error) {
	if t.links == nil {
		return 0, nil
	}
	moved := t.links.repoint(orgID, from, to)
	t.u.add(func() { t.links.unrepoint(moved, from, to) })
	return len(moved), nil
}

func (t txVocabulary) DropReviews(_ context.Context, orgID string, conceptIDs []string) (int, error) {
	if t.reviews == nil {
		return 0, nil
	}
	gone := t.reviews.drop(orgID, conceptIDs)
	t.u.add(func() { t.reviews.refile(gone) })
	return len(gone), nil
}
