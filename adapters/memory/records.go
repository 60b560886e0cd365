package memory

import (
	"context"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/ports"
)

// DeleteRecords soft-deletes (or with hard removes) the organization's
// records among ids.
func (s *RecordStore) DeleteRecords(_ context.Context, orgID string, ids []string, hard bool, at time.Time) (ports.RecordDeletion, error) {
	d, _ := s.deleteRecords(orgID, ids, hard, at)
	return d, nil
}

// deleteRecords also returns the records as they were before, for the unit
// of work's undo.
func (s *RecordStore) deleteRecords(orgID string, ids []string, hard bool, at time.Time) (ports.RecordDeletion, []enrichment.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d ports.RecordDeletion
	var before []enrichment.Record
	seen := map[string]bool{}
	for _, id := range ids {
		r, ok := s.records[id]
		if seen[id] || !ok || !inScope(r.OrgID, orgID) {
			continue
		}
		seen[id] = true
		switch {
		case hard:
			before = append(before, r)
			delete(s.records, id)
			d.Deleted = append(d.Deleted, id)
		case r.DeletedAt != nil:
			d.AlreadyDeleted = append(d.AlreadyDeleted, id)
		default:
			before = append(before, r)
			r.DeletedAt = tsPtr(&at)
			s.records[id] = r
			d.Deleted = append(d.Deleted, id)
		}
	}
	return d, before
}

func (t txRecords) DeleteRecords(_ context.Context, orgID string, ids []string, hard bool, at time.Time) (ports.RecordDeletion, error) {
	d, before := t.deleteRecords(orgID, ids, hard, at)
	t.u.add(func() { t.putBack(before) })
	return d, nil
}
