package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// SchemaService manages saved schemas.
type SchemaService struct {
	Schemas  ports.SchemaStore
	Compiler ports.SchemaCompiler
	Clock    ports.Clock
	IDs      ports.IDs
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
	// Tags and IsPinned are the reference's; there is nowhere to keep them
	// yet, so only their empty values are accepted.
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
// included, is rejected naming the field.
func (s *SchemaService) Create(ctx context.Context, p *access.Principal, in NewSchemaInput) (*schema.Schema, error) {
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
	if len(in.Tags) > 0 {
		return nil, notSupported("tags", "tags: schema tags are not supported yet; send none")
	}
	if in.IsPinned {
		return nil, notSupported("is_pinned", "is_pinned: pinning schemas is not supported yet")
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
	in.Schema = doc
	if len(in.Schema) == 0 || string(in.Schema) == "null" {
		return nil, Invalid("schema", "schema (or schema_content) is required")
	}
	if _, err := s.Compiler.Compile(in.Schema); err != nil {
		return nil, Invalid("schema", "schema is not a valid JSON Schema: %v", err)
	}
	if _, err := schema.CheckShape(in.Name, in.Schema); err != nil {
		var fe *schema.FieldError
		if errors.As(err, &fe) {
			return nil, Invalid(fe.Field, "%s", fe.Detail)
		}
		return nil, Invalid("schema", "%v", err)
	}
	if len(in.Description) > schema.MaxDescriptionLen {
		return nil, Invalid("description", "description is longer than %d characters", schema.MaxDescriptionLen)
	}
	now := s.Clock.Now()
	sc := &schema.Schema{ID: s.IDs.NewID(), OrgID: p.OrgID, Name: strings.TrimSpace(in.Name), Description: in.Description,
		Content: compact(in.Schema), Linked: in.Linked, CreatedAt: now, UpdatedAt: now}
	if err := s.Schemas.CreateSchema(ctx, sc); err != nil {
		return nil, err
	}
	return sc, nil
}

// Get returns one of the organization's schemas.
func (s *SchemaService) Get(ctx context.Context, p *access.Principal, id string) (*schema.Schema, error) {
	if err := access.Authorize(p, access.ActGetSchema); err != nil {
		return nil, err
	}
	if err := checkText("id", id); err != nil {
		return nil, err
	}
	sc, err := s.Schemas.GetSchema(ctx, p.OrgID, id)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, coded(ports.ErrNotFound, "not_found", "schema %s not found", id)
	}
	return sc, err
}

// List returns a page of the organization's schemas, newest first.
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
