package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// SchemaService manages saved schemas: their documents and their
// lifecycle (app/schema_lifecycle.go).
type SchemaService struct {
	Schemas  ports.SchemaStore
	Compiler ports.SchemaCompiler
	Clock    ports.Clock
	IDs      ports.IDs
	// Records and UoW serve the purge of a schema's enrichment data (one
	// unit of work; without UoW the purge runs without atomicity).
	Records ports.RecordStore
	UoW     ports.UnitOfWork
	// RestoreWindow is how long a deleted schema can be restored (0:
	// schema.RestoreWindow).
	RestoreWindow time.Duration
	// Users are the schema's users besides database links (benchmarks,
	// later): a schema they use is deleted only with cascade.
	Users []ports.SchemaUser
	// SchemaCache is told of every write (nil: no cache to keep true).
	SchemaCache ports.SchemaCache
}

// SchemaConfig tunes the SchemaService.
type SchemaConfig struct {
	// RestoreWindow is how long a deleted schema can be restored (0:
	// schema.RestoreWindow).
	RestoreWindow time.Duration
}

// NewSchemaService manages the schemas in schemas. uow and cache may be nil
// (see the fields).
func NewSchemaService(schemas ports.SchemaStore, records ports.RecordStore, uow ports.UnitOfWork, compiler ports.SchemaCompiler,
	cache ports.SchemaCache, clock ports.Clock, ids ports.IDs, cfg SchemaConfig) *SchemaService {
	return &SchemaService{Schemas: schemas, Records: records, UoW: uow, Compiler: compiler, SchemaCache: cache, Clock: clock, IDs: ids,
		RestoreWindow: cfg.RestoreWindow}
}

// NewSchemaInput is a schema to save.
type NewSchemaInput struct {
	Name        string
	Description string
	Schema      json.RawMessage
	// SchemaContent is the reference product's name for Schema: either may
	// be sent (both only when equal).
	SchemaContent json.RawMessage
	Linked        bool
	// Tags are free labels (see schema.CheckTags); IsPinned lists the
	// schema first.
	Tags     []string
	IsPinned bool
	// The reference's generation metadata (entity_samples, form_values,
	// generation_params): nowhere to keep it yet, so only null or absent is
	// accepted. AmbiguityCheckEnabled is accepted either way: no ambiguity
	// check exists yet, so both values behave the same.
	EntitySamples, FormValues, GenerationParams json.RawMessage
	AmbiguityCheckEnabled                       *bool
}

// document picks the schema document of in (schema or schema_content).
func (in NewSchemaInput) document() (json.RawMessage, error) {
	null := func(b json.RawMessage) bool { return len(b) == 0 || string(b) == "null" }
	switch {
	case null(in.SchemaContent):
		return in.Schema, nil
	case null(in.Schema):
		return in.SchemaContent, nil
	case !bytes.Equal(compact(in.Schema), compact(in.SchemaContent)):
		return nil, Invalid("schema_content", "schema and schema_content are the same document under two names; send one")
	}
	return in.Schema, nil
}

// Create validates and saves a schema. A document that is not valid JSON
// Schema is rejected with the validator's message; text that no store keeps
// as sent (a NUL, a lone surrogate escape, bytes that are not UTF-8) in the
// name, the description or anywhere in the document, property names
// included, is rejected naming the field. A name that a live schema of the
// organization has gets a unique suffix ("Company (2)").
func (s *SchemaService) Create(ctx context.Context, p *access.Principal, in NewSchemaInput) (*schema.Schema, error) {
	sc, err := s.newSchema(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return sc, s.store(ctx, sc)
}

// newSchema authorizes and validates in and builds the schema it asks for
// (not stored yet).
func (s *SchemaService) newSchema(ctx context.Context, p *access.Principal, in NewSchemaInput) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActCreateSchema); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    any
	}{{"name", in.Name}, {"description", in.Description}, {"schema", in.Schema}, {"schema_content", in.SchemaContent}, {"tags", in.Tags}} {
		if err := checkText(f.name, f.v); err != nil {
			return nil, err
		}
	}
	tags, err := schema.CheckTags(in.Tags)
	if err != nil {
		return nil, fieldError(err)
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"entity_samples", in.EntitySamples}, {"form_values", in.FormValues}, {"generation_params", in.GenerationParams}} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return nil, notSupported(f.name, "%s: keeping generation metadata with a schema is not supported yet; send null", f.name)
		}
	}
	doc, err := in.document()
	if err != nil {
		return nil, err
	}
	field := "schema"
	if len(in.Schema) == 0 || string(in.Schema) == "null" {
		field = "schema_content"
	}
	if err := s.checkDocument(ctx, in.Name, doc, field); err != nil {
		return nil, err
	}
	if len(in.Description) > schema.MaxDescriptionLen {
		return nil, Invalid("description", "description is longer than %d characters", schema.MaxDescriptionLen)
	}
	now := s.Clock.Now()
	sc := &schema.Schema{ID: s.IDs.NewID(), OrgID: p.OrgID, Name: strings.TrimSpace(in.Name), Description: in.Description,
		Linked: in.Linked, Tags: tags, IsPinned: in.IsPinned, CreatedAt: now, UpdatedAt: now}
	sc.SetContent(compact(doc))
	return sc, nil
}

// checkDocument validates a schema document (and the name it goes with)
// sent in field: past the schema limits, 400 schema_too_complex before it
// is compiled.
func (s *SchemaService) checkDocument(ctx context.Context, name string, doc json.RawMessage, field string) error {
	if len(doc) == 0 || string(doc) == "null" {
		return Invalid(field, "%s is required", field)
	}
	if _, err := s.Compiler.Compile(ctx, doc); err != nil {
		if e := compileError(ctx, field, err); e != nil {
			return e
		}
		return Invalid(field, "%s is not a valid JSON Schema: %v", field, err)
	}
	if _, err := schema.CheckShape(name, doc); err != nil {
		var fe *schema.FieldError
		if errors.As(err, &fe) {
			if fe.Field == "schema" {
				fe.Field = field
			}
			return Invalid(fe.Field, "%s", fe.Detail)
		}
		return Invalid(field, "%v", err)
	}
	return nil
}

// fieldError turns a domain validation failure into a 400 naming its field.
func fieldError(err error) error {
	var fe *schema.FieldError
	if errors.As(err, &fe) {
		return Invalid(fe.Field, "%s", fe.Detail)
	}
	return err
}

// store gives sc a name no live schema of its organization has, and
// stores it.
func (s *SchemaService) store(ctx context.Context, sc *schema.Schema) error {
	name, err := s.uniqueName(ctx, sc.OrgID, sc.Name, "")
	if err != nil {
		return err
	}
	sc.Name = name
	if err := s.Schemas.CreateSchema(ctx, sc); err != nil {
		return err
	}
	schemaChanged(ctx, s.SchemaCache, sc.OrgID, sc.ID)
	return nil
}

// uniqueName is name, or name with the first free " (n)" suffix, among the
// organization's live schemas other than self.
func (s *SchemaService) uniqueName(ctx context.Context, orgID, name, self string) (string, error) {
	prefix := schema.NameBase(name)
	if len(prefix) > schema.MaxNameLen-12 { // UniqueName may cut a long base to fit its suffix
		prefix = strings.ToValidUTF8(prefix[:schema.MaxNameLen-12], "")
	}
	taken, err := s.Schemas.SchemaNames(ctx, orgID, prefix)
	if err != nil {
		return "", err
	}
	if self != "" {
		taken = slices.DeleteFunc(taken, func(n string) bool { return n == self })
	}
	return schema.UniqueName(name, taken), nil
}

// Get returns one of the organization's schemas.
func (s *SchemaService) Get(ctx context.Context, p *access.Principal, id string) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActGetSchema); err != nil {
		return nil, err
	}
	if err := checkText("id", id); err != nil {
		return nil, err
	}
	return s.live(ctx, p.OrgID, id)
}

// live returns a schema that is not in the trash: a trashed, unknown or
// another organization's schema is 404.
func (s *SchemaService) live(ctx context.Context, orgID, id string) (*schema.Schema, error) {
	return liveSchema(ctx, s.Schemas, orgID, id)
}

// schemaReader is what reading one schema needs: the store, or the cache
// of job starts.
type schemaReader interface {
	GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error)
}

// jobSchema is liveSchema for a job start: through the cache when there is
// one.
func jobSchema(ctx context.Context, cache ports.SchemaCache, store ports.SchemaStore, orgID, id string) (*schema.Schema, error) {
	if cache == nil {
		return liveSchema(ctx, store, orgID, id)
	}
	return liveSchema(ctx, cache, orgID, id)
}

// schemaChanged tells the cache of job starts, when there is one, that a
// write of the schema has committed; every write of a schema through the
// app calls it before it answers.
func schemaChanged(ctx context.Context, cache ports.SchemaCache, orgID, id string) {
	if cache != nil {
		cache.Changed(ctx, orgID, id)
	}
}

// liveSchema reads one of the organization's schemas that is not in the
// trash: an unknown, foreign or trashed id is 404 not_found.
func liveSchema(ctx context.Context, store schemaReader, orgID, id string) (*schema.Schema, error) {
	sc, err := storedSchema(ctx, store, orgID, id)
	if err != nil {
		return nil, err
	}
	return notTrashed(sc)
}

// storedSchema reads one of the organization's schemas, in the trash or
// not: an unknown or foreign id is 404 not_found.
func storedSchema(ctx context.Context, store schemaReader, orgID, id string) (*schema.Schema, error) {
	sc, err := store.GetSchema(ctx, orgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, schemaNotFound(id)
	}
	return sc, err
}

// notTrashed is sc, unless it is in the trash: then 404 not_found, as if
// it did not exist.
func notTrashed(sc *schema.Schema) (*schema.Schema, error) {
	if sc.Deleted() {
		return nil, schemaNotFound(sc.ID)
	}
	return sc, nil
}

func schemaNotFound(id string) error {
	return coded(ports.ErrNotFound, "not_found", "schema %s not found", id)
}

// List returns a page of the organization's live schemas, pinned first,
// then most recently updated.
func (s *SchemaService) List(ctx context.Context, p *access.Principal, pr page.Request) (page.Result[*schema.Schema], error) {
	if err := access.Authorize(p, access.ActListSchemas); err != nil {
		return page.Result[*schema.Schema]{}, err
	}
	return s.Schemas.ListSchemas(ctx, p.OrgID, pr)
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
