package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
)

// registerDatabaseRoutes adds database registrations, their links, the
// dry runs and the relational maps (issue 28).
func (s *Server) registerDatabaseRoutes(r *mux.Router) {
	r.HandleFunc("/api/databases", s.listDatabases).Methods(http.MethodGet)
	r.HandleFunc("/api/databases", s.createDatabase).Methods(http.MethodPost)
	r.HandleFunc("/api/schemas/{schema_id}/databases", s.listDatabases).Methods(http.MethodGet)
	r.HandleFunc("/api/schemas/{schema_id}/databases", s.createDatabase).Methods(http.MethodPost)
	r.HandleFunc("/api/schemas/{schema_id}/databases/validate", s.validateDatabase).Methods(http.MethodPost)
	r.HandleFunc("/api/schemas/{schema_id}/relational-map", s.schemaRelationalMap).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}", s.getDatabase).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}", s.updateDatabase).Methods(http.MethodPatch)
	r.HandleFunc("/api/databases/{database_id}", s.deleteDatabase).Methods(http.MethodDelete)
	r.HandleFunc("/api/databases/{database_id}/relational-map", s.databaseRelationalMap).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/schemas/{schema_id}", s.linkDatabase).Methods(http.MethodPost)
	r.HandleFunc("/api/databases/{database_id}/schemas/{schema_id}", s.unlinkDatabase).Methods(http.MethodDelete)
	r.HandleFunc("/api/databases/{database_id}/schemas/{schema_id}", s.updateDatabaseLink).Methods(http.MethodPatch)
	r.HandleFunc("/api/databases/{database_id}/schemas/{schema_id}/validate", s.validateDatabaseLink).Methods(http.MethodPost)
	r.HandleFunc("/api/schemas/{schema_id}/entities", s.listEntities).Methods(http.MethodGet)
	r.HandleFunc("/api/databases/{database_id}/quarantine/reinject", s.reinjectQuarantined).Methods(http.MethodPost)
}

// settings are the registration fields of a create or an update body.
type settings struct {
	Name                 *string              `json:"name"`
	Dialect              *string              `json:"dialect"`
	PageLimit            *int                 `json:"page_limit"`
	PurgeOnAck           *bool                `json:"purge_on_ack"`
	PurgeEntityState     *bool                `json:"purge_entity_state"`
	OnGaps               *dbsync.OnGaps       `json:"on_gaps"`
	PKStrategy           *dbsync.PKStrategy   `json:"pk_strategy"`
	IndexScalars         *dbsync.IndexScalars `json:"index_scalars"`
	NotifyDebounceS      *int                 `json:"notify_debounce_s"`
	MaxThresholdTimeoutS *int                 `json:"max_threshold_timeout_s"`
	KeyLanguage          *string              `json:"key_language"`
	PropagateNotNull     *bool                `json:"propagate_not_null"`
}

// toFields reads the registration fields of a decoded body (the create's
// and the update's generated types carry the same fields).
func toFields(in any) dbsync.Fields {
	var st settings
	b, _ := json.Marshal(in)
	_ = json.Unmarshal(b, &st)
	return dbsync.Fields(st)
}

func toDatabase(v *app.DatabaseView) api.DatabaseSync {
	d := v.Database
	out := api.DatabaseSync{Id: d.ID, OrganizationId: d.OrgID, Name: d.Name, Dialect: d.Dialect, PageLimit: d.PageLimit,
		PurgeOnAck: d.PurgeOnAck, PurgeEntityState: d.PurgeEntityState, OnGaps: api.DatabaseSyncOnGaps(d.OnGaps),
		PkStrategy: api.DatabaseSyncPkStrategy(d.PKStrategy), IndexScalars: api.DatabaseSyncIndexScalars(d.IndexScalars),
		NotifyDebounceS: d.NotifyDebounceS, MaxThresholdTimeoutS: d.MaxThresholdTimeoutS, PropagateNotNull: d.PropagateNotNull,
		PendingDeltas: int(v.Counters.PendingDeltas), QuarantinedDeltas: int(v.Counters.QuarantinedDeltas),
		EntityCount: int(v.Counters.EntityCount), ShapeShipped: d.ShapeShipped(), SnapshotRequired: d.SnapshotRequired(), CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
		Schemas: make([]api.LinkedSchemaRef, 0, len(v.Schemas))}
	if d.KeyLanguage != "" {
		out.KeyLanguage = &d.KeyLanguage
	}
	for _, l := range v.Schemas {
		shipped := l.Shipped != nil
		ref := api.LinkedSchemaRef{SavedSchemaId: l.SchemaID, SchemaName: l.Name, LinkedAt: l.LinkedAt,
			EnrichmentEnabled: l.EnrichmentEnabled, PublishState: api.LinkedSchemaRefPublishState(l.PublishState),
			ShapeShipped: &shipped}
		if l.ContentHash != "" {
			ref.SchemaContentHash = &l.ContentHash
		}
		if l.WebhookURL != "" {
			ref.WebhookUrl = &l.WebhookURL
		}
		out.Schemas = append(out.Schemas, ref)
	}
	return out
}

func toKeys(ks []app.StampedKeys) []api.EntityTypeKeys {
	out := make([]api.EntityTypeKeys, 0, len(ks))
	for _, k := range ks {
		out = append(out, api.EntityTypeKeys{EntityType: k.EntityType, Path: k.Path, DatabaseKeys: k.Keys, Source: k.Source})
	}
	return out
}

func deltaID(id *int64) *int {
	if id == nil {
		return nil
	}
	v := int(*id)
	return &v
}

func (s *Server) createDatabase(w http.ResponseWriter, r *http.Request) {
	var in api.DatabaseSyncCreateRequest
	if !s.decode(w, r, &in) {
		return
	}
	schemaID := mux.Vars(r)["schema_id"]
	if schemaID == "" {
		schemaID = deref(in.SavedSchemaId)
		if schemaID == "" {
			schemaID = deref(in.SchemaId)
		}
		if schemaID == "" {
			s.Error(w, r, app.Invalid("saved_schema_id", "saved_schema_id is required"))
			return
		}
	}
	c, err := s.dbs.Create(r.Context(), principal(r), schemaID, toFields(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DatabaseSyncCreateResponse{Database: toDatabase(c.View), StampedKeys: toKeys(c.StampedKeys), DdlDeltaId: deltaID(c.DDLDeltaID)}
	if c.CustodyWarning != "" {
		out.CustodyWarning = &c.CustodyWarning
	}
	notices := make([]api.RegistrationNotice, 0, len(c.Notices))
	for _, n := range c.Notices {
		notices = append(notices, api.RegistrationNotice{Option: api.RegistrationNoticeOption(n.Option), Value: n.Value,
			Effect: n.Effect, LockedAfterShip: n.LockedAfterShip})
	}
	out.RegistrationNotices = &notices
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listDatabases(w http.ResponseWriter, r *http.Request) {
	vs, err := s.dbs.List(r.Context(), principal(r), mux.Vars(r)["schema_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DatabaseSyncListResponse{Databases: make([]api.DatabaseSync, 0, len(vs)), Total: len(vs)}
	for _, v := range vs {
		out.Databases = append(out.Databases, toDatabase(v))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getDatabase(w http.ResponseWriter, r *http.Request) {
	v, err := s.dbs.Get(r.Context(), principal(r), mux.Vars(r)["database_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toDatabase(v))
}

func (s *Server) updateDatabase(w http.ResponseWriter, r *http.Request) {
	var in api.DatabaseSyncUpdateRequest
	if !s.decode(w, r, &in) {
		return
	}
	v, err := s.dbs.Update(r.Context(), principal(r), mux.Vars(r)["database_id"], toFields(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toDatabase(v))
}

// unlinkOptions reads the options of an unlink or a delete (force only
// where the route takes it); a value other than true or false is 400
// naming the parameter.
func unlinkOptions(r *http.Request, force bool) (app.UnlinkOptions, error) {
	var o app.UnlinkOptions
	var err error
	if o.DeleteEntityState, err = boolQuery(r, "delete_entity_state"); err != nil {
		return o, err
	}
	if o.ClearDatabaseModel, err = boolQuery(r, "clear_database_model"); err != nil {
		return o, err
	}
	if force {
		o.Force, err = boolQuery(r, "force")
	}
	return o, err
}

func (s *Server) deleteDatabase(w http.ResponseWriter, r *http.Request) {
	o, err := unlinkOptions(r, false)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	if err := s.dbs.Delete(r.Context(), principal(r), mux.Vars(r)["database_id"], o); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) linkDatabase(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	c, err := s.dbs.Link(r.Context(), principal(r), v["database_id"], v["schema_id"], r.URL.Query().Get("key_language"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.DatabaseSyncLinkResponse{Database: toDatabase(c.View), DdlDeltaId: deltaID(c.DDLDeltaID)})
}

func (s *Server) unlinkDatabase(w http.ResponseWriter, r *http.Request) {
	o, err := unlinkOptions(r, true)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	v := mux.Vars(r)
	if err := s.dbs.Unlink(r.Context(), principal(r), v["database_id"], v["schema_id"], o); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) updateDatabaseLink(w http.ResponseWriter, r *http.Request) {
	var in api.LinkUpdateRequest
	if !s.decode(w, r, &in) {
		return
	}
	v := mux.Vars(r)
	d, err := s.dbs.SetEnrichment(r.Context(), principal(r), v["database_id"], v["schema_id"], in.EnrichmentEnabled)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toDatabase(d))
}

func (s *Server) validateDatabase(w http.ResponseWriter, r *http.Request) {
	p, err := s.dbs.ValidateCreate(r.Context(), principal(r), mux.Vars(r)["schema_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	keys := toKeys(p.StampedKeys())
	out := api.DatabaseSyncValidationResult{Valid: p.Valid(), Errors: p.Errors(), RequiresKeyLanguage: p.RequiresKeyLanguage,
		StampedKeys: &keys}
	for _, t := range p.Map.Tables {
		if t.Kind == relmap.KindEntity {
			out.EntityTables++
		} else {
			out.ReferenceTables++
		}
		for _, c := range t.Columns {
			switch {
			case c.Role == relmap.RoleParent:
				out.ReferenceColumns++
			case c.NotNull && (c.Role == relmap.RoleKey || c.Role == relmap.RoleValue || c.Role == relmap.RoleItem):
				out.AlwaysPresentColumns++
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) validateDatabaseLink(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	p, err := s.dbs.ValidateLink(r.Context(), principal(r), v["database_id"], v["schema_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	keys := toKeys(p.StampedKeys())
	writeJSON(w, http.StatusOK, api.DatabaseSyncLinkValidationResult{Valid: p.Valid(), Errors: p.Errors(),
		AlreadyStamped: p.AlreadyLinked, NewTypes: orEmpty(p.NewTypes), NoCommonTypes: len(p.NewTypes) > 0, StampedKeys: &keys})
}

// relationalMap is RelationalMapResponse with the map's own tables.
type relationalMap struct {
	SavedSchemaID string         `json:"saved_schema_id"`
	SchemaName    string         `json:"schema_name"`
	Published     bool           `json:"published"`
	EntityType    string         `json:"entity_type"`
	PKStrategy    string         `json:"pk_strategy"`
	IndexScalars  string         `json:"index_scalars"`
	Tables        []relmap.Table `json:"tables"`
	DDL           []string       `json:"ddl"`
	Error         *string        `json:"error,omitempty"`
}

func toRelationalMap(p *app.Projected) relationalMap {
	out := relationalMap{SavedSchemaID: p.SchemaID, SchemaName: p.SchemaName, Published: p.Published, EntityType: p.Map.EntityType,
		PKStrategy: p.Map.PKStrategy, IndexScalars: p.Map.IndexScalars, Tables: p.Map.Tables, DDL: orEmpty(p.DDL)}
	if out.Tables == nil {
		out.Tables = []relmap.Table{}
	}
	if errs := p.Errors(); len(errs) > 0 {
		out.Error = &errs[0]
	}
	return out
}

func (s *Server) schemaRelationalMap(w http.ResponseWriter, r *http.Request) {
	p, err := s.dbs.SchemaRelationalMap(r.Context(), principal(r), mux.Vars(r)["schema_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRelationalMap(p))
}

func (s *Server) databaseRelationalMap(w http.ResponseWriter, r *http.Request) {
	d, ps, err := s.dbs.DatabaseRelationalMap(r.Context(), principal(r), mux.Vars(r)["database_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := struct {
		DatabaseID string          `json:"database_id"`
		Schemas    []relationalMap `json:"schemas"`
	}{DatabaseID: d.ID, Schemas: make([]relationalMap, 0, len(ps))}
	for _, p := range ps {
		out.Schemas = append(out.Schemas, toRelationalMap(p))
	}
	writeJSON(w, http.StatusOK, out)
}
