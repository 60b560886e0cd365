package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ConceptReviews = (*ConceptReviews)(nil)

// ConceptReviews keeps the review list in concept_reviews: lo_id and
// hi_id, the pair's ids sorted, make a pair unique whichever order it is
// filed in.
type ConceptReviews struct{ db bun.IDB }

// NewConceptReviews returns the review list on db.
func NewConceptReviews(db bun.IDB) *ConceptReviews { return &ConceptReviews{db: db} }

type reviewRow struct {
	bun.BaseModel `bun:"table:concept_reviews,alias:r"`

	ID             string    `bun:"id,pk"`
	OrgID          string    `bun:"org_id,notnull"`
	Type           string    `bun:"concept_type,notnull"`
	EmbeddingModel string    `bun:"embedding_model,notnull"`
	AID            string    `bun:"a_id,notnull"`
	BID            string    `bun:"b_id,notnull"`
	LoID           string    `bun:"lo_id,notnull"`
	HiID           string    `bun:"hi_id,notnull"`
	Similarity     float64   `bun:"similarity,notnull"`
	Reason         string    `bun:"reason,notnull"`
	Detail         string    `bun:"detail,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

// FileReviews inserts the pairs; ON CONFLICT keeps a pair's first filing.
func (s *ConceptReviews) FileReviews(ctx context.Context, pairs []ports.ConceptReview) error {
	if len(pairs) == 0 {
		return nil
	}
	rows := make([]reviewRow, 0, len(pairs))
	seen := map[[3]string]bool{}
	for _, p := range pairs {
		if err := ports.CheckReview(p); err != nil {
			return err
		}
		lo, hi := min(p.AID, p.BID), max(p.AID, p.BID)
		// One statement cannot insert a row twice under ON CONFLICT: the
		// first of a call's duplicates is its filing.
		if k := [3]string{p.OrgID, lo, hi}; !seen[k] {
			seen[k] = true
			rows = append(rows, reviewRow{ID: p.ID, OrgID: p.OrgID, Type: p.Type, EmbeddingModel: p.EmbeddingModel, AID: p.AID, BID: p.BID,
				LoID: lo, HiID: hi, Similarity: p.Similarity, Reason: p.Reason, Detail: p.Detail, CreatedAt: utc(p.CreatedAt)})
		}
	}
	if _, err := s.db.NewInsert().Model(&rows).On("CONFLICT (org_id, lo_id, hi_id) DO NOTHING").Exec(ctx); err != nil {
		return conflict(err, "file concept reviews")
	}
	return nil
}

// ListReviews reads a page of the organization's pairs, most similar
// first.
func (s *ConceptReviews) ListReviews(ctx context.Context, orgID string, f ports.ReviewFilter) ([]ports.ConceptReview, int, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = page.DefaultSize
	case limit > page.MaxSize:
		limit = page.MaxSize
	}
	var rows []reviewRow
	q := s.db.NewSelect().Model(&rows).Where("org_id = ?", orgID)
	if len(f.Types) > 0 {
		types := storableOnly(f.Types)
		if len(types) == 0 {
			return []ports.ConceptReview{}, 0, nil
		}
		q = q.Where("concept_type IN (?)", bun.In(types))
	}
	n, err := q.OrderExpr("similarity DESC, id").Limit(int64(limit)).Offset(int64(max(f.Offset, 0))).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, fail(err, "list concept reviews")
	}
	out := make([]ports.ConceptReview, 0, len(rows))
	for _, r := range rows {
		out = append(out, ports.ConceptReview{ID: r.ID, OrgID: r.OrgID, Type: r.Type, EmbeddingModel: r.EmbeddingModel, AID: r.AID, BID: r.BID,
			Similarity: r.Similarity, Reason: r.Reason, Detail: r.Detail, CreatedAt: utc(r.CreatedAt)})
	}
	return out, int(n), nil
}

// DropReviews deletes the pairs naming any of the concepts.
func (s *ConceptReviews) DropReviews(ctx context.Context, orgID string, conceptIDs []string) (int, error) {
	ids := storableOnly(conceptIDs)
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := s.db.NewDelete().Model((*reviewRow)(nil)).Where("org_id = ?", orgID).
		Where("(lo_id IN (?) OR hi_id IN (?))", bun.In(ids), bun.In(ids)).Exec(ctx)
	if err != nil {
		return 0, fail(err, "drop concept reviews")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
