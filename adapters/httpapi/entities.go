package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// listEntities serves GET /api/schemas/{schema_id}/entities.
func (s *Server) listEntities(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	eq := ports.EntityQuery{EntityType: q.Get("entity_type"), Limit: app.DefaultEntityLimit}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &eq.Limit}, {"offset", &eq.Offset}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				s.Error(w, r, app.Invalid(p.name, "%s must be an integer", p.name))
				return
			}
			*p.dst = n
		}
	}
	page, err := s.entities.List(r.Context(), principal(r), mux.Vars(r)["schema_id"], eq)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.EntityStateListResponse{Entities: make([]api.EntityStateRow, 0, len(page.Entities)),
		EntityTypes: page.EntityTypes, Total: int(page.Total)}
	for _, e := range page.Entities {
		out.Entities = append(out.Entities, toEntityRow(e))
	}
	writeJSON(w, http.StatusOK, out)
}

func toEntityRow(e *dbsync.Entity) api.EntityStateRow {
	keys := e.Keys
	if keys == nil {
		keys = map[string]string{}
	}
	return api.EntityStateRow{Id: e.ID, EntityType: e.EntityType, KeyIdentity: nilIfEmpty(e.KeyIdentity), Keys: keys,
		SemanticId: nilIfEmpty(e.SemanticID), LastRecordId: nilIfEmpty(e.LastRecordID), Payload: e.Payload,
		Revision: e.Revision, UpdatedAt: e.UpdatedAt}
}

// syncRecordsToDatabase serves POST /api/records/sync-to-database.
func (s *Server) syncRecordsToDatabase(w http.ResponseWriter, r *http.Request) {
	var in api.RecordInjectionRequest
	if !s.decode(w, r, &in) {
		return
	}
	items := make([]app.InjectionItem, len(in.Items))
	for i, it := range in.Items {
		items[i] = app.InjectionItem{RecordID: deref(it.RecordId), SchemaID: deref(it.SavedSchemaId)}
		if it.StructuredOutput != nil {
			items[i].Output = *it.StructuredOutput
		}
	}
	res, err := s.entities.SyncRecords(r.Context(), principal(r), items)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.RecordInjectionResponse{Results: make([]api.RecordInjectionResult, len(res.Results)), Saved: res.Saved,
		Partial: res.Partial, Rejected: res.Rejected, Skipped: res.Skipped}
	for i, x := range res.Results {
		o := api.RecordInjectionResult{Status: api.RecordInjectionResultStatus(x.Status), CreatedRecord: x.CreatedRecord,
			RecordId: nilIfEmpty(x.RecordID), SourceRecordId: nilIfEmpty(x.SourceRecordID), Reason: nilIfEmpty(x.Reason),
			ValidationErrors: x.ValidationErrors}
		if o.ValidationErrors == nil {
			o.ValidationErrors = []string{}
		}
		if x.Database != nil {
			o.Database = app.OutcomeJSON(*x.Database)
		}
		out.Results[i] = o
	}
	writeJSON(w, http.StatusOK, out)
}

// reinjectQuarantined serves POST /api/databases/{id}/quarantine/reinject.
func (s *Server) reinjectQuarantined(w http.ResponseWriter, r *http.Request) {
	var in api.QuarantineActionRequest
	if !s.decode(w, r, &in) {
		return
	}
	sel := quarantineSelection(in)
	out, err := s.entities.Reinject(r.Context(), principal(r), mux.Vars(r)["database_id"], sel)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.QuarantineReinjectResponse{BatchId: nilIfEmpty(out.BatchID), Queued: int(out.Queued),
		Removed: int(out.Removed)})
}
