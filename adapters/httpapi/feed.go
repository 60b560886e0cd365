package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// registerFeedRoutes adds a registration's delta feed (WIRE §8.4, §8.5,
// §8.7): claims and reads, acks, purges, the summary and the quarantine.
func (s *Server) registerFeedRoutes(r *mux.Router) {
	r.HandleFunc("/api/databases/{database_id}/changes", s.getChanges).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/ack", s.ackChanges).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/clear-acked", s.clearAcked).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/deltas/summary", s.deltaSummary).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/quarantine", s.listQuarantine).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/quarantine/report", s.reportQuarantine).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/quarantine/delete", s.deleteQuarantined).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/quarantine/redrive", s.redriveQuarantined).Methods(http.MethodPost)
}

func databaseID(r *http.Request) string { return mux.Vars(r)["database_id"] }

func (s *Server) getChanges(w http.ResponseWriter, r *http.Request) {
	q, err := app.ParseChanges(r.URL.Query())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	win, err := s.feed.Changes(r.Context(), principal(r), databaseID(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DeltaBatchResponse{Deltas: make([]api.DeltaRow, len(win.Deltas))}
	for i, d := range win.Deltas {
		out.Deltas[i] = toDeltaRow(d)
	}
	out.HasMore = win.HasMore
	if !win.LeaseExpiresAt.IsZero() {
		out.LeaseExpiresAt = &win.LeaseExpiresAt
	}
	if win.NextCursor != 0 {
		out.NextCursor = &win.NextCursor
	}
	out.SnapshotRequired = win.SnapshotRequired
	out.SchemaContentHashes = make(map[string]*string, len(win.ContentHashes))
	for id, h := range win.ContentHashes {
		out.SchemaContentHashes[id] = nilIfEmpty(h)
		if len(win.ContentHashes) == 1 {
			out.SchemaContentHash = nilIfEmpty(h)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func toDeltaRow(d ports.StoredDelta) api.DeltaRow {
	out := api.DeltaRow{Id: d.ID, Kind: api.DeltaRowKind(d.Kind), Op: api.DeltaRowOp(d.Op), Sql: d.SQL, Payload: d.Payload,
		BatchId: nilIfEmpty(d.BatchID), EntityType: nilIfEmpty(d.EntityType), EntityId: nilIfEmpty(d.EntityID),
		SavedSchemaId: nilIfEmpty(d.SchemaID), RecordId: nilIfEmpty(d.RecordID), CreatedAt: d.CreatedAt, AckedAt: d.AckedAt,
		ClaimExpiresAt: d.ClaimExpiresAt, QuarantinedAt: d.QuarantinedAt, ApplyError: nilIfEmpty(d.ApplyError),
		ApplyErrorAt: d.ApplyErrorAt}
	if len(out.Payload) == 0 {
		out.Payload = []byte("{}")
	}
	if d.Kind == delta.Data {
		out.Revision = &d.Revision
	}
	return out
}

func toAckResponse(a ports.AckOutcome) api.DeltaAckResponse {
	return api.DeltaAckResponse{Acked: a.Acked, PurgedDeltas: a.PurgedDeltas, PurgedEntities: a.PurgedEntities}
}

func (s *Server) ackChanges(w http.ResponseWriter, r *http.Request) {
	var in api.DeltaAckRequest
	if !s.decode(w, r, &in) {
		return
	}
	out, err := s.feed.Ack(r.Context(), principal(r), databaseID(r), in.UpToId)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	s.NoteAck(r, in.UpToId)
	writeJSON(w, http.StatusOK, toAckResponse(out))
}

func (s *Server) clearAcked(w http.ResponseWriter, r *http.Request) {
	out, err := s.feed.ClearAcked(r.Context(), principal(r), databaseID(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAckResponse(out))
}

// nilIfZero is n, or nil when it is 0 (no such row).
func nilIfZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func (s *Server) deltaSummary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.feed.Summary(r.Context(), principal(r), databaseID(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.DeltaSummaryResponse{AckWatermarkAt: sum.WatermarkAt, AckWatermarkId: nilIfZero(sum.Watermark),
		AckedCount: sum.AckedCount, FirstDataId: nilIfZero(sum.FirstDataID), MaxId: nilIfZero(sum.MaxID), MinId: nilIfZero(sum.MinID),
		PendingCount: sum.PendingCount, QuarantinedCount: sum.QuarantinedCount, SchemaDeltaCount: sum.SchemaDeltas})
}

func (s *Server) listQuarantine(w http.ResponseWriter, r *http.Request) {
	q, err := s.feed.ListQuarantine(r.Context(), principal(r), databaseID(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.QuarantineListResponse{Entities: make([]api.QuarantinedEntity, 0, len(q.Entities)),
		Migrations: make([]api.QuarantinedMigration, 0, len(q.Migrations)), TotalDeltas: q.Total}
	for _, e := range q.Entities {
		first := e.FirstID
		qe := api.QuarantinedEntity{BatchIds: orEmpty(e.BatchIDs), DeltaCount: e.Count, EntityId: nilIfEmpty(e.EntityID),
			EntityType: nilIfEmpty(e.EntityType), FirstDeltaId: &first, QuarantinedAt: e.QuarantinedAt, SavedSchemaId: nilIfEmpty(e.SchemaID)}
		if e.Failing != nil {
			id := e.Failing.ID
			qe.FailingDeltaId, qe.ApplyError = &id, &e.Failing.ApplyError
		}
		out.Entities = append(out.Entities, qe)
	}
	for _, m := range q.Migrations {
		out.Migrations = append(out.Migrations, api.QuarantinedMigration{ApplyError: nilIfEmpty(m.ApplyError), BatchId: nilIfEmpty(m.BatchID),
			DeltaId: m.ID, QuarantinedAt: m.QuarantinedAt, SavedSchemaId: nilIfEmpty(m.SchemaID), Sql: m.SQL})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) reportQuarantine(w http.ResponseWriter, r *http.Request) {
	var in api.QuarantineReportRequest
	if !s.decode(w, r, &in) {
		return
	}
	res, err := s.feed.Report(r.Context(), principal(r), databaseID(r), in.DeltaId, in.Error)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.QuarantineReportResponse{BatchId: res.BatchKey, Already: res.Already, LeaseReleased: res.LeaseReleased})
}

func (s *Server) deleteQuarantined(w http.ResponseWriter, r *http.Request) {
	var in api.QuarantineActionRequest
	if !s.decode(w, r, &in) {
		return
	}
	sel := quarantineSelection(in)
	out, err := s.feed.DeleteQuarantined(r.Context(), principal(r), databaseID(r), sel)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toAckResponse(out))
}

func (s *Server) redriveQuarantined(w http.ResponseWriter, r *http.Request) {
	var in api.QuarantineRedriveRequest
	if !s.decode(w, r, &in) {
		return
	}
	var ids []int64
	if in.DeltaIds != nil {
		ids = *in.DeltaIds
	}
	out, err := s.feed.Redrive(r.Context(), principal(r), databaseID(r), ids)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.QuarantineRedriveResponse{Queued: out.Queued, Removed: out.Removed})
}

// quarantineSelection is what a quarantine action's body names.
func quarantineSelection(in api.QuarantineActionRequest) ports.QuarantineSelection {
	var sel ports.QuarantineSelection
	if in.DeltaIds != nil {
		sel.DeltaIDs = *in.DeltaIds
	}
	if in.EntityIds != nil {
		sel.EntityIDs = *in.EntityIds
	}
	return sel
}
