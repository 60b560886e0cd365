package postgres

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

// DeleteRecords soft-deletes (or with hard removes) the organization's
// records among ids, in one statement.
func (s *RecordStore) DeleteRecords(ctx context.Context, orgID string, ids []string, hard bool, at time.Time) (ports.RecordDeletion, error) {
	var d ports.RecordDeletion
	if len(ids) == 0 {
		return d, nil
	}
	var rows []struct {
		ID      string `bun:"id"`
		Already bool   `bun:"already"`
	}
	var err error
	// Every organization's (ports.AllOrgs) matches any org_id.
	all := orgID == ports.AllOrgs
	if hard {
		err = s.db.NewRaw(`DELETE FROM records WHERE (? OR org_id = ?) AND id IN (?) RETURNING id, false AS already`,
			all, orgID, bun.In(ids)).Scan(ctx, &rows)
	} else {
		// hit sees the rows as they were before the update.
		err = s.db.NewRaw(`WITH hit AS (SELECT id, deleted_at FROM records WHERE (? OR org_id = ?) AND id IN (?) FOR UPDATE),
  upd AS (UPDATE records SET deleted_at = ? WHERE id IN (SELECT id FROM hit WHERE deleted_at IS NULL) RETURNING id)
SELECT id, deleted_at IS NOT NULL AS already FROM hit`, all, orgID, bun.In(ids), utc(at)).Scan(ctx, &rows)
	}
	if err != nil {
		return d, fail(err, "delete records")
	}
	already := make(map[string]bool, len(rows))
	for _, r := range rows {
		already[r.ID] = r.Already
	}
	seen := map[string]bool{}
	for _, id := range ids { // in the caller's order
		a, ok := already[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		if a {
			d.AlreadyDeleted = append(d.AlreadyDeleted, id)
		} else {
			d.Deleted = append(d.Deleted, id)
		}
	}
	return d, nil
}
