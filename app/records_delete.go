package app

import (
	"context"
	"slices"
	"time"

	"github.com/entityenrich/enrich/domain/access"
)

// MaxRecordDeletes bounds the ids of one batch delete (SPEC.md's limit).
const MaxRecordDeletes = 100

// RecordDeletion is the answer of a batch delete: the ids deleted by this
// call, those that were soft-deleted already, and those not found (unknown
// or another organization's: the two are not told apart).
type RecordDeletion struct {
	Hard           bool
	Deleted        []string
	AlreadyDeleted []string
	NotFound       []string
}

// BatchDelete deletes up to MaxRecordDeletes of the organization's records:
// a soft delete by default (the records leave listings and reads, and can be
// listed with include_deleted), or with hard for good, which needs the
// owner role (the reference keeps it for administrators; the owner is the
// organization's). field names the request's id list in errors. Repeating a
// delete is harmless.
func (s *RecordService) BatchDelete(ctx context.Context, p *access.Principal, field string, ids []string, hard bool) (RecordDeletion, error) {
	return s.batchDelete(ctx, p, field, ids, hard, false)
}

// BatchDeleteAcross is BatchDelete over every organization's records (the
// reference's all_orgs: system administrators).
func (s *RecordService) BatchDeleteAcross(ctx context.Context, p *access.Principal, field string, ids []string, hard bool) (RecordDeletion, error) {
	return s.batchDelete(ctx, p, field, ids, hard, true)
}

func (s *RecordService) batchDelete(ctx context.Context, p *access.Principal, field string, ids []string, hard, all bool) (RecordDeletion, error) {
	if err := access.Authorize(p, access.ActDeleteRecords); err != nil {
		return RecordDeletion{}, err
	}
	org, err := orgScope(p, all, access.ActDeleteAllRecords)
	if err != nil {
		return RecordDeletion{}, err
	}
	if hard {
		if err := access.Authorize(p, access.ActHardDeleteRecords); err != nil {
			return RecordDeletion{}, err
		}
	}
	if len(ids) == 0 {
		return RecordDeletion{}, Invalid(field, "%s must name at least one record", field)
	}
	if len(ids) > MaxRecordDeletes {
		return RecordDeletion{}, Invalid(field, "%s names %d records; at most %d per call", field, len(ids), MaxRecordDeletes)
	}
	for i, id := range ids {
		if id == "" {
			return RecordDeletion{}, Invalid(field, "%s[%d] is empty", field, i)
		}
	}
	d, err := s.Records.DeleteRecords(ctx, org, ids, hard, s.now())
	if err != nil {
		return RecordDeletion{}, err
	}
	out := RecordDeletion{Hard: hard, Deleted: nonNil(d.Deleted), AlreadyDeleted: nonNil(d.AlreadyDeleted), NotFound: []string{}}
	for _, id := range ids {
		if !slices.Contains(d.Deleted, id) && !slices.Contains(d.AlreadyDeleted, id) && !slices.Contains(out.NotFound, id) {
			out.NotFound = append(out.NotFound, id)
		}
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *RecordService) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}
