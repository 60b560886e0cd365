package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.SchemaStore = (*SchemaStore)(nil)
	_ ports.RecordStore = (*RecordStore)(nil)
)

// SchemaStore keeps saved schemas in memory.
type SchemaStore struct {
	mu      sync.RWMutex
	schemas map[string]schema.Schema
}

// NewSchemaStore returns an empty SchemaStore.
func NewSchemaStore() *SchemaStore { return &SchemaStore{schemas: map[string]schema.Schema{}} }

func cloneSchema(s schema.Schema) *schema.Schema {
	s.Content = cloneJSON(s.Content)
	s.PublishedContent = cloneJSON(s.PublishedContent)
	if s.Tags != nil {
		s.Tags = append([]string{}, s.Tags...)
	}
	s.PublishedAt, s.DeletedAt = tsPtr(s.PublishedAt), tsPtr(s.DeletedAt)
	s.CreatedAt, s.UpdatedAt = ts(s.CreatedAt), ts(s.UpdatedAt)
	return &s
}

// CreateSchema stores sc; an existing id is ErrConflict.
func (s *SchemaStore) CreateSchema(_ context.Context, sc *schema.Schema) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schemas[sc.ID]; ok {
		return fmt.Errorf("memory: create schema %s: %w", sc.ID, ports.ErrConflict)
	}
	s.schemas[sc.ID] = *cloneSchema(*sc)
	return nil
}

// GetSchema returns the schema id of organization orgID.
func (s *SchemaStore) GetSchema(_ context.Context, orgID, id string) (*schema.Schema, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc, ok := s.schemas[id]
	if !ok || sc.OrgID != orgID {
		return nil, fmt.Errorf("memory: get schema %s: %w", id, ports.ErrNotFound)
	}
	return cloneSchema(sc), nil
}

// ListSchemas returns one page of an organization's live schemas, pinned
// first, then most recently updated.
func (s *SchemaStore) ListSchemas(_ context.Context, orgID string, p page.Request) (page.Result[*schema.Schema], error) {
	s.mu.RLock()
	var all []*schema.Schema
	for _, sc := range s.schemas {
		if sc.OrgID == orgID && sc.DeletedAt == nil {
			all = append(all, cloneSchema(sc))
		}
	}
	s.mu.RUnlock()
	return listRanked(all, p), nil
}

// UpdateSchema calls fn on a copy of the schema and stores the copy when fn
// returns nil.
func (s *SchemaStore) UpdateSchema(_ context.Context, orgID, id string, fn func(*schema.Schema) error) (*schema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.schemas[id]
	if !ok || old.OrgID != orgID {
		return nil, fmt.Errorf("memory: update schema %s: %w", id, ports.ErrNotFound)
	}
	c := cloneSchema(old)
	if err := fn(c); err != nil {
		return nil, err
	}
	c.ID, c.OrgID, c.CreatedAt = old.ID, old.OrgID, old.CreatedAt
	s.schemas[id] = *cloneSchema(*c)
	return cloneSchema(*c), nil
}

// RecordStore keeps enrichment records in memory.
type RecordStore struct {
	mu      sync.RWMutex
	records map[string]enrichment.Record
}

// NewRecordStore returns an empty RecordStore.
func NewRecordStore() *RecordStore { return &RecordStore{records: map[string]enrichment.Record{}} }

func cloneRecord(r enrichment.Record) *enrichment.Record {
	r.EntityData = cloneJSON(r.EntityData)
	r.StructuredOutput = cloneJSON(r.StructuredOutput)
	r.CreatedAt = ts(r.CreatedAt)
	r.DeletedAt = tsPtr(r.DeletedAt)
	if r.Fusion != nil {
		var f enrichment.Fusion
		b, _ := json.Marshal(r.Fusion)
		_ = json.Unmarshal(b, &f)
		r.Fusion = &f
	}
	r.Attachments = append([]enrichment.AttachmentRef(nil), r.Attachments...)
	r.SemanticConcepts = append([]enrichment.SemanticConceptRef(nil), r.SemanticConcepts...)
	r.SemanticUnresolved = append([]enrichment.SemanticUnresolved(nil), r.SemanticUnresolved...)
	for i, c := range r.SemanticConcepts {
		if c.Cosine != nil {
			r.SemanticConcepts[i].Cosine = new(*c.Cosine)
		}
	}
	return &r
}

// CreateRecord stores r; an existing id is ErrConflict.
func (s *RecordStore) CreateRecord(_ context.Context, r *enrichment.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[r.ID]; ok {
		return fmt.Errorf("memory: create record %s: %w", r.ID, ports.ErrConflict)
	}
	s.records[r.ID] = *cloneRecord(*r)
	return nil
}

// GetRecord returns the record id of organization orgID.
func (s *RecordStore) GetRecord(_ context.Context, orgID, id string) (*enrichment.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[id]
	if !ok || !inScope(r.OrgID, orgID) || r.DeletedAt != nil {
		return nil, fmt.Errorf("memory: get record %s: %w", id, ports.ErrNotFound)
	}
	return cloneRecord(r), nil
}

// ListRecords returns one page of an organization's records that match f,
// newest first.
func (s *RecordStore) ListRecords(_ context.Context, orgID string, f ports.RecordFilter, p page.Request) (page.Result[*enrichment.Record], error) {
	s.mu.RLock()
	var all []*enrichment.Record
	for _, r := range s.records {
		if !inScope(r.OrgID, orgID) ||
			(f.Type != "" && r.Type != f.Type) ||
			(f.SchemaID != "" && r.SchemaID != f.SchemaID) ||
			(f.JobID != "" && r.JobID != f.JobID) ||
			(f.Model != "" && r.Model != f.Model) ||
			(f.CreatedFrom != nil && r.CreatedAt.Before(*f.CreatedFrom)) ||
			(f.CreatedBefore != nil && !r.CreatedAt.Before(*f.CreatedBefore)) ||
			(r.DeletedAt != nil && !f.IncludeDeleted) {
			continue
		}
		all = append(all, cloneRecord(r))
	}
	s.mu.RUnlock()
	return listPage(all, p, func(r *enrichment.Record) (time.Time, string) { return r.CreatedAt, r.ID }), nil
}

// inScope reports whether a record of org is in a read or delete scoped to
// scope (an organization, or ports.AllOrgs).
func inScope(org, scope string) bool { return scope == ports.AllOrgs || org == scope }
