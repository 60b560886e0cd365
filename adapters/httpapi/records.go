package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/entityenrich/enrich/app"
)

// batchDeleteRequest is the reference's BatchDeleteRequest; record_ids is
// accepted as another spelling of ids.
type batchDeleteRequest struct {
	IDs        []string `json:"ids"`
	RecordIDs  []string `json:"record_ids"`
	HardDelete bool     `json:"hard_delete"`
}

// batchDeleteResponse answers a batch delete (the reference leaves it
// untyped).
type batchDeleteResponse struct {
	DeletedCount        int      `json:"deleted_count"`
	DeletedIDs          []string `json:"deleted_ids"`
	AlreadyDeletedCount int      `json:"already_deleted_count"`
	AlreadyDeletedIDs   []string `json:"already_deleted_ids"`
	NotFoundCount       int      `json:"not_found_count"`
	NotFoundIDs         []string `json:"not_found_ids"`
	HardDelete          bool     `json:"hard_delete"`
	Message             string   `json:"message"`
}

func (s *Server) batchDeleteRecords(w http.ResponseWriter, r *http.Request) {
	var in batchDeleteRequest
	if !s.decode(w, r, &in) {
		return
	}
	field, ids := "ids", in.IDs
	switch {
	case in.IDs == nil && in.RecordIDs != nil:
		field, ids = "record_ids", in.RecordIDs
	case in.IDs != nil && in.RecordIDs != nil:
		s.Error(w, r, app.Invalid("record_ids", "send ids or record_ids, not both"))
		return
	}
	d, err := s.records.BatchDelete(r.Context(), principal(r), field, ids, in.HardDelete)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	how := "soft-deleted"
	if d.Hard {
		how = "deleted permanently"
	}
	writeJSON(w, http.StatusOK, batchDeleteResponse{DeletedCount: len(d.Deleted), DeletedIDs: d.Deleted,
		AlreadyDeletedCount: len(d.AlreadyDeleted), AlreadyDeletedIDs: d.AlreadyDeleted,
		NotFoundCount: len(d.NotFound), NotFoundIDs: d.NotFound, HardDelete: d.Hard,
		Message: plural(len(d.Deleted), "record") + " " + how})
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
