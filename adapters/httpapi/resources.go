package httpapi

import (
	"cmp"
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

func (s *Server) registerSchemaRoutes(r *mux.Router) {
	r.HandleFunc("/api/schema/saved", s.listSchemas).Methods(http.MethodGet)
	r.HandleFunc("/api/schema/saved", s.createSchema).Methods(http.MethodPost)
	r.HandleFunc("/api/schema/saved/{id}", s.getSchema).Methods(http.MethodGet)
}

func (s *Server) registerRecordRoutes(r *mux.Router) {
	r.HandleFunc("/api/records", s.listRecords).Methods(http.MethodGet)
	// Before /api/records/{id}, which would answer it 405.
	r.HandleFunc("/api/records/sync-to-database", s.syncRecordsToDatabase).Methods(http.MethodPost)
	r.HandleFunc("/api/records/{id}", s.getRecord).Methods(http.MethodGet)
	r.HandleFunc("/api/records/batch-delete", s.batchDeleteRecords).Methods(http.MethodPost)
}

// pageRequest reads page_size (or the reference client's limit), cursor,
// and page (a numbered page, when no cursor is sent). The document bounds
// them.
func pageRequest(r *http.Request) (page.Request, error) {
	q := r.URL.Query()
	size := 0
	for _, name := range []string{"limit", "page_size"} { // page_size wins
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return page.Request{}, app.Invalid(name, "%s must be an integer", name)
			}
			size = n
		}
	}
	if v := q.Get("page"); v != "" && q.Get("cursor") == "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return page.Request{}, app.Invalid("page", "page must be an integer")
		}
		pr, err := page.Numbered(n, size)
		if err != nil {
			return page.Request{}, app.Invalid("page", "%v", err)
		}
		return pr, nil
	}
	pr, err := page.ParseRequest(size, q.Get("cursor"))
	if err != nil && err != page.ErrBadCursor {
		return page.Request{}, app.Invalid("page_size", "%v", err)
	}
	return pr, err
}

func nextCursor(next string) *string {
	if next == "" {
		return nil
	}
	return &next
}

// pageNumber is the number of a page asked by number (or the first); null
// for a page reached by cursor, whose number is not known.
func pageNumber(pr page.Request) *int {
	if pr.After != nil {
		return nil
	}
	n := pr.Offset/pr.Size + 1
	return &n
}

// toSchemaSummary maps a listed saved schema: ours (description, linked)
// and the reference's (tags, is_pinned, publish_state, property_count).
func toSchemaSummary(sc *schema.Schema) api.SchemaSummary {
	return api.SchemaSummary{Id: sc.ID, Name: sc.Name, Description: sc.Description, Linked: sc.Linked,
		PropertyCount: sc.PropertyCount(), Tags: orEmpty(sc.Tags), IsPinned: sc.IsPinned,
		PublishState: api.SchemaSummaryPublishState(sc.PublishState()), ContentHash: sc.ContentHash,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
}

// toSchema maps a full saved schema: the summary's fields, the document as
// schema and as schema_content (the reference's name), the input contract
// of what enrichment runs on (the published contract of a published linked
// schema), and the published contract (null until the first publish), when
// and with which key-language lock.
func toSchema(sc *schema.Schema) api.Schema {
	c := schema.ContractOfJSON(sc.Contract())
	return api.Schema{Id: sc.ID, Name: sc.Name, Description: sc.Description, Linked: sc.Linked,
		PropertyCount: sc.PropertyCount(), Tags: orEmpty(sc.Tags), IsPinned: sc.IsPinned,
		PublishState: api.SchemaPublishState(sc.PublishState()), ContentHash: sc.ContentHash,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt, Schema: sc.Content, SchemaContent: sc.Content,
		InputContract: &api.EnrichmentInputContract{IdentifyingKeys: c.IdentifyingKeys, Preserve: c.Preserve,
			ArrayItemKeys: c.ArrayItemKeys},
		PublishedContent: sc.PublishedContent, PublishedAt: sc.PublishedAt, KeyLanguage: nilIfEmpty(sc.KeyLanguage)}
}

func toNewSchema(in api.CreateSchemaRequest) app.NewSchemaInput {
	return app.NewSchemaInput{Name: in.Name, Description: deref(in.Description), Schema: in.Schema,
		SchemaContent: in.SchemaContent, Linked: deref(in.Linked), Tags: deref(in.Tags), IsPinned: deref(in.IsPinned),
		EntitySamples: in.EntitySamples, FormValues: in.FormValues, GenerationParams: in.GenerationParams,
		AmbiguityCheckEnabled: in.AmbiguityCheckEnabled}
}

func (s *Server) listSchemas(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.schemas.List(r.Context(), principal(r), pr)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.SchemaList{Schemas: make([]api.SchemaSummary, 0, len(res.Items)), NextCursor: nextCursor(res.Next),
		Total: res.Total}
	for _, sc := range res.Items {
		out.Schemas = append(out.Schemas, toSchemaSummary(sc))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createSchema(w http.ResponseWriter, r *http.Request) {
	var in api.CreateSchemaRequest
	if !s.decode(w, r, &in) {
		return
	}
	sc, err := s.schemas.Create(r.Context(), principal(r), toNewSchema(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSchema(sc))
}

func (s *Server) getSchema(w http.ResponseWriter, r *http.Request) {
	sc, err := s.schemas.Get(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSchema(sc))
}

func toRecordDetail(rc *enrichment.Record) api.Record {
	return api.Record{RecordSummary: toRecordSummary(rc), EntityData: rc.EntityData, EntityInputData: rc.EntityData,
		StructuredOutput: rc.StructuredOutput, ValidationErrors: []string{}, Attachments: toAttachmentRefs(rc.Attachments),
		SemanticConcepts: toConceptRefs(rc.SemanticConcepts), SemanticUnresolved: toUnresolvedRefs(rc.SemanticUnresolved)}
}

func toUnresolvedRefs(us []enrichment.SemanticUnresolved) []api.SemanticUnresolvedRef {
	out := make([]api.SemanticUnresolvedRef, 0, len(us))
	for _, u := range us {
		out = append(out, api.SemanticUnresolvedRef{JsonPath: u.JSONPath, ConceptType: u.ConceptType, Text: u.Text,
			Reason: api.SemanticUnresolvedRefReason(u.Reason)})
	}
	return out
}

func toConceptRefs(refs []enrichment.SemanticConceptRef) []api.SemanticConceptRef {
	out := make([]api.SemanticConceptRef, 0, len(refs))
	for _, c := range refs {
		out = append(out, api.SemanticConceptRef{CanonicalText: c.CanonicalText, ConceptId: c.ConceptID, ConceptType: c.ConceptType,
			Cosine: c.Cosine, JsonPath: c.JSONPath})
	}
	return out
}

func toAttachmentRefs(refs []enrichment.AttachmentRef) []api.AttachmentRef {
	out := make([]api.AttachmentRef, 0, len(refs))
	for _, a := range refs {
		r := api.AttachmentRef{Id: a.ID, Filename: a.Filename, MediaType: a.MediaType, SizeBytes: a.SizeBytes, Sha256: a.SHA256,
			Mode: api.AttachmentRefMode(a.Mode), ExtractionKind: api.AttachmentRefExtractionKind(a.Kind)}
		if a.Capability != "" {
			r.RequiresCapability = &a.Capability
		}
		out = append(out, r)
	}
	return out
}

func toRecordList(res page.Result[*enrichment.Record], pr page.Request) api.RecordList {
	out := api.RecordList{Records: make([]api.RecordSummary, 0, len(res.Items)), NextCursor: nextCursor(res.Next),
		Page: pageNumber(pr), PageSize: pr.Size, Total: res.Total, TotalPages: page.Pages(res.Total, pr.Size)}
	for _, rc := range res.Items {
		out.Records = append(out.Records, toRecordSummary(rc))
	}
	return out
}

// toRecordSummary maps a record to our fields and the reference's
// RecordSummary fields that the stored data supports. Every stored record is
// a successful model's; entity ids do not exist yet (entity_id is null).
func toRecordSummary(rc *enrichment.Record) api.RecordSummary {
	out := api.RecordSummary{Id: rc.ID, Type: api.RecordSummaryType(rc.Type), SchemaId: rc.SchemaID, JobId: rc.JobID,
		Model: rc.Model, ModelCompositeKey: rc.Model, ModelName: rc.Model, Strategy: string(rc.Strategy),
		Cost: int(rc.Cost), CostUsd: model.USD(rc.Cost), InputTokens: rc.InputTokens, OutputTokens: rc.OutputTokens,
		WebSearchCalls: rc.WebSearchCalls, Success: true, Sandbox: rc.Sandbox, CreatedAt: rc.CreatedAt, IsDeleted: rc.DeletedAt != nil, DeletedAt: rc.DeletedAt}
	if rc.SchemaID != "" {
		out.SavedSchemaId = &rc.SchemaID
	}
	if k, err := model.ParseKey(rc.Model); err == nil {
		out.ModelName = k.Model
	}
	setFusionFields(&out, rc)
	return out
}

func (s *Server) listRecords(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	q, err := recordQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.records.List(r.Context(), principal(r), q, pr)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRecordList(res, pr))
}

// recordQuery reads the listing's filters: type, schema_id (or the
// reference's saved_schema_id), job_id, model (or the reference's
// deprecated provider), success, include_deleted and the created range
// (createdRange).
func recordQuery(r *http.Request) (app.RecordQuery, error) {
	q := r.URL.Query()
	f := app.RecordQuery{RecordFilter: ports.RecordFilter{Type: enrichment.RecordType(q.Get("type")),
		SchemaID: cmp.Or(q.Get("schema_id"), q.Get("saved_schema_id")), JobID: q.Get("job_id"),
		Model: cmp.Or(q.Get("model"), q.Get("provider"))}}
	for _, b := range []struct {
		name string
		dst  func(bool)
	}{{"success", func(v bool) { f.Success = &v }}, {"include_deleted", func(v bool) { f.IncludeDeleted = v }},
		{"all_orgs", func(v bool) { f.AllOrgs = v }}} {
		if v := q.Get(b.name); v != "" {
			v, err := strconv.ParseBool(v)
			if err != nil {
				return f, app.Invalid(b.name, "%s must be true or false", b.name)
			}
			b.dst(v)
		}
	}
	var err error
	f.CreatedFrom, f.CreatedBefore, err = createdRange(q)
	return f, err
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request) {
	get := s.records.Get
	if allOrgs(r) {
		get = s.records.GetAcross
	}
	rc, err := get(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRecordDetail(rc))
}
