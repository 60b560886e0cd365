package memory

import (
	"context"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// RepointConcept implements ports.RecordStore.
func (s *RecordStore) RepointConcept(_ context.Context, orgID, from, to, canonicalText string) (int, error) {
	before := s.repointConcept(orgID, from, to, canonicalText)
	return len(before), nil
}

// repointConcept also returns the records as they were before, for the
// unit of work's undo.
func (s *RecordStore) repointConcept(orgID, from, to, canonicalText string) []enrichment.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var before []enrichment.Record
	for id, r := range s.records {
		if r.OrgID != orgID {
			continue
		}
		c := cloneRecord(r)
		if c.RepointConcept(from, to, canonicalText) {
			before = append(before, r)
			s.records[id] = *c
		}
	}
	return before
}

func (t txRecords) RepointConcept(_ context.Context, orgID, from, to, canonicalText string) (int, error) {
	before := t.repointConcept(orgID, from, to, canonicalText)
	t.u.add(func() { t.putBack(before) })
	return len(before), nil
}
