package ports

import (
	"fmt"
	"math"

	"github.com/entityenrich/enrich/domain/text"
)

// CheckReview reports why a ConceptReviews store cannot keep p: a pair
// needs two different concept ids, a similarity that is a number, and
// texts a text column can hold (ErrInvalid).
func CheckReview(p ConceptReview) error {
	switch {
	case p.AID == "" || p.BID == "":
		return fmt.Errorf("%w: review pair: a concept id is empty", ErrInvalid)
	case p.AID == p.BID:
		return fmt.Errorf("%w: review pair: a concept paired with itself", ErrInvalid)
	case math.IsNaN(p.Similarity) || math.IsInf(p.Similarity, 0):
		return fmt.Errorf("%w: review pair: similarity is not a finite number", ErrInvalid)
	}
	for _, s := range []string{p.ID, p.OrgID, p.Type, p.EmbeddingModel, p.AID, p.BID, p.Reason, p.Detail} {
		if r, ok := text.CheckString(s); !ok {
			return fmt.Errorf("%w: review pair holds %s", ErrInvalid, r)
		}
	}
	return nil
}
