package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
)

// batchDeleteIDs reads the reference's BatchDeleteRequest: record_ids is
// another spelling of ids; the field named is the one sent.
func batchDeleteIDs(in api.BatchDeleteRequest) (field string, ids []string, err error) {
	switch ids, recordIDs := deref(in.Ids), deref(in.RecordIds); {
	case ids != nil && recordIDs != nil:
		return "", nil, app.Invalid("record_ids", "send ids or record_ids, not both")
	case ids == nil && recordIDs != nil:
		return "record_ids", recordIDs, nil
	default:
		return "ids", ids, nil
	}
}

// toBatchDelete answers a batch delete (the reference leaves it untyped).
func toBatchDelete(d app.RecordDeletion) api.BatchDeleteResponse {
	how := "soft-deleted"
	if d.Hard {
		how = "deleted permanently"
	}
	return api.BatchDeleteResponse{DeletedCount: len(d.Deleted), DeletedIds: d.Deleted,
		AlreadyDeletedCount: len(d.AlreadyDeleted), AlreadyDeletedIds: d.AlreadyDeleted,
		NotFoundCount: len(d.NotFound), NotFoundIds: d.NotFound, HardDelete: d.Hard,
		Message: plural(len(d.Deleted), "record") + " " + how}
}

func (s *Server) batchDeleteRecords(w http.ResponseWriter, r *http.Request) {
	var in api.BatchDeleteRequest
	if !s.decode(w, r, &in) {
		return
	}
	field, ids, err := batchDeleteIDs(in)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	del := s.records.BatchDelete
	if allOrgs(r) {
		del = s.records.BatchDeleteAcross
	}
	d, err := del(r.Context(), principal(r), field, ids, deref(in.HardDelete))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toBatchDelete(d))
}

// allOrgs reads the records routes' all_orgs (the validator has checked
// that it is a boolean).
func allOrgs(r *http.Request) bool {
	b, err := strconv.ParseBool(r.URL.Query().Get("all_orgs"))
	return err == nil && b
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// createdRange reads the listing's created range: the lower bound
// (inclusive) from since (the reference's), start_date or created_after,
// the upper bound (exclusive) from end_date or created_before. A value is
// YYYY-MM-DD (UTC midnight) or RFC 3339. Two spellings of one bound must
// agree.
func createdRange(q url.Values) (from, before *time.Time, err error) {
	read := func(names ...string) (*time.Time, error) {
		var got *time.Time
		var gotName string
		for _, name := range names {
			raw := q.Get(name)
			if raw == "" {
				continue
			}
			t, err := parseDate(raw)
			if err != nil {
				return nil, app.Invalid(name, "%s must be a date (YYYY-MM-DD) or an RFC 3339 time", name)
			}
			t = t.UTC()
			if got != nil && !got.Equal(t) {
				return nil, app.Invalid(name, "%s and %s disagree", gotName, name)
			}
			got, gotName = &t, name
		}
		return got, nil
	}
	if from, err = read("since", "start_date", "created_after"); err != nil {
		return nil, nil, err
	}
	if before, err = read("end_date", "created_before"); err != nil {
		return nil, nil, err
	}
	return from, before, nil
}
