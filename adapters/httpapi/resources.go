package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
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
	r.HandleFunc("/api/records/{id}", s.getRecord).Methods(http.MethodGet)
}

// pageRequest reads page_size and cursor.
func pageRequest(r *http.Request) (page.Request, error) {
	q := r.URL.Query()
	size := 0
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return page.Request{}, app.Invalid("page_size", "page_size must be an integer")
		}
		size = n
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

type schemaJSON struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Schema        json.RawMessage `json:"schema,omitempty"`
	Linked        bool            `json:"linked"`
	PropertyCount int             `json:"property_count"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

func toSchema(sc *schema.Schema, full bool) schemaJSON {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(sc.Content, &doc)
	out := schemaJSON{ID: sc.ID, Name: sc.Name, Description: sc.Description, Linked: sc.Linked,
		PropertyCount: len(doc.Properties), CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
	if full {
		out.Schema = sc.Content
	}
	return out
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
	out := make([]schemaJSON, 0, len(res.Items))
	for _, sc := range res.Items {
		out = append(out, toSchema(sc, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{"schemas": out, "next_cursor": nextCursor(res.Next)})
}

func (s *Server) createSchema(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Linked      bool            `json:"linked"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	sc, err := s.schemas.Create(r.Context(), principal(r), app.NewSchemaInput{Name: in.Name, Description: in.Description, Schema: in.Schema, Linked: in.Linked})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toSchema(sc, true))
}

func (s *Server) getSchema(w http.ResponseWriter, r *http.Request) {
	sc, err := s.schemas.Get(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSchema(sc, true))
}

type recordJSON struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	SchemaID         string          `json:"schema_id"`
	JobID            string          `json:"job_id"`
	Model            string          `json:"model"`
	Strategy         string          `json:"strategy"`
	Cost             int64           `json:"cost"`
	Sandbox          bool            `json:"sandbox"`
	CreatedAt        time.Time       `json:"created_at"`
	EntityData       json.RawMessage `json:"entity_data,omitempty"`
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	InputTokens      *int            `json:"input_tokens,omitempty"`
	OutputTokens     *int            `json:"output_tokens,omitempty"`
}

func toRecord(rc *enrichment.Record, full bool) recordJSON {
	out := recordJSON{ID: rc.ID, Type: string(rc.Type), SchemaID: rc.SchemaID, JobID: rc.JobID, Model: rc.Model,
		Strategy: string(rc.Strategy), Cost: rc.Cost, Sandbox: rc.Sandbox, CreatedAt: rc.CreatedAt}
	if full {
		in, o := rc.InputTokens, rc.OutputTokens
		out.EntityData, out.StructuredOutput, out.InputTokens, out.OutputTokens = rc.EntityData, rc.StructuredOutput, &in, &o
	}
	return out
}

func (s *Server) listRecords(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	q := r.URL.Query()
	f := ports.RecordFilter{Type: enrichment.RecordType(q.Get("type")), SchemaID: q.Get("schema_id"), JobID: q.Get("job_id")}
	res, err := s.records.List(r.Context(), principal(r), f, pr)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]recordJSON, 0, len(res.Items))
	for _, rc := range res.Items {
		out = append(out, toRecord(rc, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": out, "next_cursor": nextCursor(res.Next)})
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request) {
	rc, err := s.records.Get(r.Context(), principal(r), mux.Vars(r)["id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRecord(rc, true))
}
