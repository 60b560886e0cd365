package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/schema"
)

// registerSchemaLifecycleRoutes adds the saved-schema lifecycle. It runs
// before registerSchemaRoutes: /api/schema/saved/deleted must match before
// /api/schema/saved/{id}.
func (s *Server) registerSchemaLifecycleRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/saved/deleted", s.listDeletedSchemas).Methods(http.MethodGet)
	r.HandleFunc("/api/schema/saved/{id}", s.updateSchema).Methods(http.MethodPatch)
	r.HandleFunc("/api/schema/saved/{id}", s.deleteSchema).Methods(http.MethodDelete)
	r.HandleFunc("/api/schema/saved/{id}/permanent", s.deleteSchemaPermanently).Methods(http.MethodDelete)
	r.HandleFunc("/api/schema/saved/{id}/restore", s.restoreSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/duplicate", s.duplicateSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/publish", s.publishSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/publish/validate", s.validatePublish).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}/enrichment-data", s.purgeSchemaData).Methods(http.MethodDelete)
}

// boolQuery reads an optional boolean query parameter (absent: false).
func boolQuery(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, app.Invalid(name, "%s must be true or false", name)
	}
	return b, nil
}

func (s *Server) updateSchema(w http.ResponseWriter, r *http.Request) {
	var in api.UpdateSchemaRequest
	if !s.decode(w, r, &in) {
		return
	}
	sc, err := s.schemas.Update(r.Context(), principal(r), mux.Vars(r)["id"], toSchemaUpdate(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSchema(sc))
}

func toSchemaUpdate(in api.UpdateSchemaRequest) app.SchemaUpdate {
	return app.SchemaUpdate{Name: in.Name, Description: in.Description, Tags: in.Tags, IsPinned: in.IsPinned,
		Schema: in.Schema, SchemaContent: in.SchemaContent, KeyLanguage: in.KeyLanguage, EntitySamples: in.EntitySamples,
		FormValues: in.FormValues, AmbiguityCheckEnabled: in.AmbiguityCheckEnabled}
}

func (s *Server) deleteSchema(w http.ResponseWriter, r *http.Request) {
	cascade, err := boolQuery(r, "cascade")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	d, err := s.schemas.Delete(r.Context(), principal(r), mux.Vars(r)["id"], cascade)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	until := d.RestorableUntil
	out := api.SchemaDeletion{Id: d.Schema.ID, Name: d.Schema.Name, Deleted: true, DeletedAt: d.Schema.DeletedAt,
		RestorableUntil: &until, Unlinked: orEmpty(d.Released),
		Message: "schema moved to the trash; POST .../restore brings it back until restorable_until"}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSchemaPermanently(w http.ResponseWriter, r *http.Request) {
	cascade, err := boolQuery(r, "cascade")
	if err != nil {
		s.Error(w, r, err)
		return
	}
	d, err := s.schemas.DeletePermanently(r.Context(), principal(r), mux.Vars(r)["id"], cascade)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SchemaDeletion{Id: d.Schema.ID, Name: d.Schema.Name, Deleted: true, Permanent: true,
		DeletedAt: d.Schema.DeletedAt, Unlinked: orEmpty(d.Released), Message: "schema deleted permanently; its records stay"})
}

func orEmpty(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func (s *Server) restoreSchema(w http.ResponseWriter, r *http.Request) {
	sc, err := s.schemas.Restore(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSchema(sc))
}

// trashedJSON is the reference's DeletedSchemaItem plus when restoring
// stops being possible.
type trashedJSON struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	DeletedAt         time.Time `json:"deleted_at"`
	HasBenchmark      bool      `json:"has_benchmark"`
	HasLinkedDatabase bool      `json:"has_linked_database"`
	RestorableUntil   time.Time `json:"restorable_until"`
	Restorable        bool      `json:"restorable"`
}

func (s *Server) listDeletedSchemas(w http.ResponseWriter, r *http.Request) {
	ts, err := s.schemas.ListDeleted(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]trashedJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, trashedJSON{ID: t.Schema.ID, Name: t.Schema.Name, DeletedAt: *t.Schema.DeletedAt,
			HasLinkedDatabase: t.Schema.Linked, RestorableUntil: t.RestorableUntil, Restorable: t.Restorable})
	}
	// retention_days is null: the trash keeps schemas until they are
	// deleted permanently.
	writeJSON(w, http.StatusOK, map[string]any{"schemas": out, "total": len(out), "retention_days": nil})
}

func (s *Server) duplicateSchema(w http.ResponseWriter, r *http.Request) {
	// include_database_model is the reference's; this service keeps no
	// database model apart from the document, so it changes nothing.
	if _, err := boolQuery(r, "include_database_model"); err != nil {
		s.Error(w, r, err)
		return
	}
	sc, err := s.schemas.Duplicate(r.Context(), principal(r), mux.Vars(r)["id"], r.URL.Query().Get("new_name"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSchema(sc))
}

// diffJSON is the reference's SchemaPublishDiff plus the property lists.
type diffJSON struct {
	Classification    string               `json:"classification"`
	AddedTypes        []string             `json:"added_types"`
	RemovedTypes      []string             `json:"removed_types"`
	Changed           []tableChangeJSON    `json:"changed"`
	RemovedColumns    map[string][]string  `json:"removed_columns"`
	Transforms        []transformJSON      `json:"transforms"`
	AddedProperties   []string             `json:"added_properties"`
	RemovedProperties []string             `json:"removed_properties"`
	ChangedProperties []propertyChangeJSON `json:"changed_properties"`
}

type tableChangeJSON struct {
	EntityType         string   `json:"entity_type"`
	AddedColumns       []string `json:"added_columns"`
	AddedRelationships []string `json:"added_relationships"`
	AddedTables        []string `json:"added_tables"`
	AddedIndexes       []string `json:"added_indexes"`
	RemovedIndexes     []string `json:"removed_indexes"`
}

type transformJSON struct {
	Kind       string `json:"kind"`
	EntityType string `json:"entity_type"`
	Path       string `json:"path"`
	Detail     string `json:"detail"`
}

type propertyChangeJSON struct {
	EntityType string   `json:"entity_type"`
	Path       string   `json:"path"`
	Keywords   []string `json:"keywords"`
}

func toDiff(d schema.Diff) diffJSON {
	out := diffJSON{Classification: string(d.Classification), AddedTypes: orEmpty(d.AddedTypes),
		RemovedTypes: orEmpty(d.RemovedTypes), Changed: []tableChangeJSON{}, RemovedColumns: d.RemovedColumns,
		Transforms: []transformJSON{}, AddedProperties: orEmpty(d.AddedProperties),
		RemovedProperties: orEmpty(d.RemovedProperties), ChangedProperties: []propertyChangeJSON{}}
	if out.RemovedColumns == nil {
		out.RemovedColumns = map[string][]string{}
	}
	for _, c := range d.Changed {
		out.Changed = append(out.Changed, tableChangeJSON{EntityType: c.EntityType, AddedColumns: orEmpty(c.AddedColumns),
			AddedRelationships: orEmpty(c.AddedRelationships), AddedTables: []string{}, AddedIndexes: []string{}, RemovedIndexes: []string{}})
	}
	for _, t := range d.Transforms {
		out.Transforms = append(out.Transforms, transformJSON{Kind: string(t.Kind), EntityType: t.EntityType, Path: t.Path, Detail: t.Detail})
	}
	for _, c := range d.ChangedProperties {
		out.ChangedProperties = append(out.ChangedProperties, propertyChangeJSON{EntityType: c.EntityType, Path: c.Path, Keywords: c.Keywords})
	}
	return out
}

func (s *Server) publishSchema(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ConfirmTransforms bool    `json:"confirm_transforms"`
		KeyLanguage       *string `json:"key_language"`
	}
	// The body is optional: none is an additive publish.
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.Error(w, r, decodeError(err))
		return
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if !s.decode(w, r, &in) {
			return
		}
	}
	pin := app.PublishInput{ConfirmTransforms: in.ConfirmTransforms}
	if in.KeyLanguage != nil {
		pin.KeyLanguage = *in.KeyLanguage
	}
	sc, diff, err := s.schemas.Publish(r.Context(), principal(r), mux.Vars(r)["id"], pin)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	// delta_ids: no database registration exists yet, so no migration is
	// queued.
	writeJSON(w, http.StatusOK, map[string]any{"published": true, "diff": toDiff(diff), "saved_schema": toSchema(sc),
		"delta_ids": []int64{}})
}

func (s *Server) validatePublish(w http.ResponseWriter, r *http.Request) {
	sc, p, err := s.schemas.ValidatePublish(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	errs := make([]string, 0, len(p.Blockers))
	codes := make([]string, 0, len(p.Blockers))
	for _, b := range p.Blockers {
		errs = append(errs, b.Error())
		if e, ok := app.AsError(app.LifecycleError(b)); ok {
			codes = append(codes, e.Code)
		}
	}
	var suggested *string
	writeJSON(w, http.StatusOK, map[string]any{
		"can_publish": p.CanPublish(), "diff": toDiff(p.Diff), "errors": errs, "blocker_codes": codes,
		"publish_state": string(p.State), "requires_confirm": p.RequiresConfirm,
		"requires_key_language": p.RequiresKeyLanguage, "suggested_key_language": suggested,
		"key_language": nilIfEmpty(sc.KeyLanguage), "adopted_key_language": nil, "databases": []string{},
	})
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) purgeSchemaData(w http.ResponseWriter, r *http.Request) {
	p, err := s.schemas.PurgeEnrichmentData(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.PurgeResult{RecordsDeleted: p.RecordsDeleted, EntitiesDeleted: p.EntitiesDeleted})
}
