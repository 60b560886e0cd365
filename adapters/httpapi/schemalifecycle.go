package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

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

func (s *Server) listDeletedSchemas(w http.ResponseWriter, r *http.Request) {
	ts, err := s.schemas.ListDeleted(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	// The reference's DeletedSchemaItem plus when restoring stops being
	// possible; retention_days is null: the trash keeps schemas until they
	// are deleted permanently.
	out := api.DeletedSchemaList{Schemas: make([]api.DeletedSchemaList_Schemas, 0, len(ts))}
	for _, t := range ts {
		out.Schemas = append(out.Schemas, api.DeletedSchemaList_Schemas{Id: t.Schema.ID, Name: t.Schema.Name,
			DeletedAt: *t.Schema.DeletedAt, HasLinkedDatabase: t.Schema.Linked, RestorableUntil: t.RestorableUntil,
			Restorable: t.Restorable})
	}
	out.Total = len(out.Schemas)
	writeJSON(w, http.StatusOK, out)
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

// toDiff maps the reference's SchemaPublishDiff plus the property lists;
// every list is present, empty when nothing changed.
func toDiff(d schema.Diff) api.PublishDiff {
	out := api.PublishDiff{Classification: api.PublishDiffClassification(d.Classification), AddedTypes: orEmpty(d.AddedTypes),
		RemovedTypes: orEmpty(d.RemovedTypes), Changed: []api.PublishDiff_Changed{}, RemovedColumns: d.RemovedColumns,
		Transforms: []api.PublishDiff_Transforms{}, AddedProperties: orEmpty(d.AddedProperties),
		RemovedProperties: orEmpty(d.RemovedProperties), ChangedProperties: []api.PublishDiff_ChangedProperties{}}
	if out.RemovedColumns == nil {
		out.RemovedColumns = map[string][]string{}
	}
	for _, c := range d.Changed {
		cols, rels, none := orEmpty(c.AddedColumns), orEmpty(c.AddedRelationships), []string{}
		out.Changed = append(out.Changed, api.PublishDiff_Changed{EntityType: c.EntityType, AddedColumns: &cols,
			AddedRelationships: &rels, AddedTables: &none, AddedIndexes: &none, RemovedIndexes: &none})
	}
	for _, t := range d.Transforms {
		out.Transforms = append(out.Transforms, api.PublishDiff_Transforms{Kind: api.PublishDiffTransformsKind(t.Kind),
			EntityType: t.EntityType, Path: t.Path, Detail: t.Detail})
	}
	for _, c := range d.ChangedProperties {
		out.ChangedProperties = append(out.ChangedProperties, api.PublishDiff_ChangedProperties{EntityType: c.EntityType,
			Path: c.Path, Keywords: c.Keywords})
	}
	return out
}

func (s *Server) publishSchema(w http.ResponseWriter, r *http.Request) {
	var in api.PublishRequest
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
	pin := app.PublishInput{ConfirmTransforms: deref(in.ConfirmTransforms), KeyLanguage: deref(in.KeyLanguage)}
	sc, diff, ids, err := s.schemas.PublishShipping(r.Context(), principal(r), mux.Vars(r)["id"], pin)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	// delta_ids: the schema deltas shipping the new contract's DDL, one per
	// linked registration that had DDL to ship.
	out := api.PublishResult{Published: true, Diff: toDiff(diff), SavedSchema: toSchema(sc), DeltaIds: make([]int, 0, len(ids))}
	for _, id := range ids {
		out.DeltaIds = append(out.DeltaIds, int(id))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) validatePublish(w http.ResponseWriter, r *http.Request) {
	sc, p, err := s.schemas.ValidatePublish(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toPublishPreview(sc, p))
}

// toPublishPreview maps what a publish would do; no key language is
// suggested or adopted, and no database is registered, yet.
func toPublishPreview(sc *schema.Schema, p schema.Preview) api.PublishPreview {
	out := api.PublishPreview{CanPublish: p.CanPublish(), Diff: toDiff(p.Diff), Errors: make([]string, 0, len(p.Blockers)),
		BlockerCodes: make([]string, 0, len(p.Blockers)), PublishState: api.PublishPreviewPublishState(p.State),
		RequiresConfirm: p.RequiresConfirm, RequiresKeyLanguage: p.RequiresKeyLanguage,
		KeyLanguage: nilIfEmpty(sc.KeyLanguage), Databases: []string{}}
	for _, b := range p.Blockers {
		out.Errors = append(out.Errors, b.Error())
		if e, ok := app.AsError(app.LifecycleError(b)); ok {
			out.BlockerCodes = append(out.BlockerCodes, e.Code)
		}
	}
	return out
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
