package postgres

import (
	"context"
	"encoding/json"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/text"
)

// RepointConcept implements ports.RecordStore: the records that name from
// are locked, rewritten by the domain's rule and written back, in one
// transaction (a savepoint inside a unit of work).
func (s *RecordStore) RepointConcept(ctx context.Context, orgID, from, to, canonicalText string) (int, error) {
	for _, v := range []string{orgID, from, to, canonicalText} {
		if _, ok := text.CheckString(v); !ok {
			return 0, nil // no row could hold it
		}
	}
	// The refs are stored with their Go field names (conceptRefsJSON).
	pattern, err := json.Marshal([]map[string]string{{"ConceptID": from}})
	if err != nil {
		return 0, fail(err, "repoint concept "+from)
	}
	n := 0
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n = 0
		var rows []recordRow
		if err := tx.NewSelect().Model(&rows).Where("org_id = ? AND semantic_concepts @> ?::jsonb", orgID, string(pattern)).
			For("UPDATE").Scan(ctx); err != nil {
			return err
		}
		for i := range rows {
			rec := rows[i].record()
			if !rec.RepointConcept(from, to, canonicalText) {
				continue
			}
			row := recordToRow(rec)
			if _, err := tx.NewUpdate().Model(&row).Column("structured_output", "semantic_concepts").WherePK().Exec(ctx); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fail(err, "repoint concept "+from)
	}
	return n, nil
}
