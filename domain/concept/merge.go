package concept

import "errors"

// Errors of a merge.
var (
	// ErrMergeSelf refuses a merge of a concept into itself.
	ErrMergeSelf = errors.New("winner and loser are the same concept")
	// ErrMergeTypes refuses a merge across concept types: ids of two
	// types never name one thing.
	ErrMergeTypes = errors.New("winner and loser are of different concept types")
)

// CheckMerge reports why loser cannot be merged into winner.
func CheckMerge(winner, loser Concept) error {
	switch {
	case winner.ID == loser.ID:
		return ErrMergeSelf
	case winner.Type != loser.Type:
		return ErrMergeTypes
	}
	return nil
}

// Merge is winner once loser is merged into it: loser's aliases move to
// winner as non-canonical aliases of origin merge (one whose normalized
// text winner already holds is dropped, since a text names one alias of a
// type), and the reference counts add up. winner keeps its canonical
// text. moved is the aliases that moved.
func Merge(winner, loser Concept) (merged Concept, moved []Alias, err error) {
	if err := CheckMerge(winner, loser); err != nil {
		return winner, nil, err
	}
	merged = winner
	merged.Aliases = append([]Alias(nil), winner.Aliases...)
	for _, a := range loser.Aliases {
		if _, held := winner.AliasByText(a.NormalizedText); held {
			continue
		}
		a.IsCanonical, a.Origin = false, OriginMerge
		merged.Aliases = append(merged.Aliases, a)
		moved = append(moved, a)
	}
	merged.RefCount = winner.RefCount + loser.RefCount
	return merged, moved, nil
}
