package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// steppingClock is a clock the test moves.
type steppingClock struct{ t *time.Time }

func (c steppingClock) Now() time.Time { return *c.t }

type uuidish struct{ n int }

func (u *uuidish) NewID() string {
	u.n++
	return "sch" + string(rune('a'+u.n%26)) + string(rune('a'+u.n/26))
}

func newSchemaService(now *time.Time) *app.SchemaService {
	schemas, records := memory.NewSchemaStore(), memory.NewRecordStore()
	return &app.SchemaService{Schemas: schemas, Records: records, Compiler: jsonschema.New(schema.Limits{}), Clock: steppingClock{now}, IDs: &uuidish{}}
}

var schemaOwner = &access.Principal{OrgID: "org1", Role: access.Owner, Scopes: access.DefaultScopes()}

const doc = `{"type":"object","properties":{"name":{"type":"string"}}}`

func TestSaveDeduplicated(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	s := newSchemaService(&now)
	ctx := context.Background()
	first, created, err := s.SaveDeduplicated(ctx, schemaOwner, app.NewSchemaInput{Name: "Generated", Schema: json.RawMessage(doc)})
	is.NoErr(err)
	is.True(created)
	// The same document, formatted otherwise: the same schema.
	again, created, err := s.SaveDeduplicated(ctx, schemaOwner, app.NewSchemaInput{Name: "Other name", Schema: json.RawMessage("{ \"type\": \"object\",\n \"properties\": {\"name\": {\"type\": \"string\"}} }")})
	is.NoErr(err)
	is.True(!created)
	is.Equal(again.ID, first.ID)
	// Another document: a new schema with a unique name.
	other, created, err := s.SaveDeduplicated(ctx, schemaOwner, app.NewSchemaInput{Name: "Generated", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`)})
	is.NoErr(err)
	is.True(created)
	is.Equal(other.Name, "Generated (2)")
	// A trashed schema does not count; another organization's neither.
	_, err = s.Delete(ctx, schemaOwner, first.ID, false)
	is.NoErr(err)
	third, created, err := s.SaveDeduplicated(ctx, schemaOwner, app.NewSchemaInput{Name: "Generated", Schema: json.RawMessage(doc)})
	is.NoErr(err)
	is.True(created)
	is.True(third.ID != first.ID)
	otherOrg := &access.Principal{OrgID: "org2", Role: access.Editor, Scopes: access.DefaultScopes()}
	_, created, err = s.SaveDeduplicated(ctx, otherOrg, app.NewSchemaInput{Name: "Generated", Schema: json.RawMessage(doc)})
	is.NoErr(err)
	is.True(created)
	// Validation and authorization are Create's.
	_, _, err = s.SaveDeduplicated(ctx, schemaOwner, app.NewSchemaInput{Name: "", Schema: json.RawMessage(doc)})
	is.True(errors.Is(err, ports.ErrInvalid))
	operator := &access.Principal{OrgID: "org1", Role: access.Operator, Scopes: access.DefaultScopes()}
	_, _, err = s.SaveDeduplicated(ctx, operator, app.NewSchemaInput{Name: "x", Schema: json.RawMessage(doc)})
	is.True(errors.Is(err, access.ErrForbidden))
}

func TestRestoreWindowOnTheServiceClock(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	s := newSchemaService(&now)
	ctx := context.Background()
	sc, err := s.Create(ctx, schemaOwner, app.NewSchemaInput{Name: "A", Schema: json.RawMessage(doc)})
	is.NoErr(err)
	d, err := s.Delete(ctx, schemaOwner, sc.ID, false)
	is.NoErr(err)
	is.True(d.RestorableUntil.Equal(now.Add(schema.RestoreWindow))) // the domain's one constant
	now = now.Add(schema.RestoreWindow)
	_, err = s.Restore(ctx, schemaOwner, sc.ID)
	is.NoErr(err) // the window's last instant
	_, err = s.Delete(ctx, schemaOwner, sc.ID, false)
	is.NoErr(err)
	now = now.Add(schema.RestoreWindow + time.Second)
	_, err = s.Restore(ctx, schemaOwner, sc.ID)
	e, ok := app.AsError(err)
	is.True(ok)
	is.Equal(e.Code, app.CodeRestoreExpired)
	is.True(errors.Is(err, schema.ErrRestoreExpired))
	trash, err := s.ListDeleted(ctx, schemaOwner)
	is.NoErr(err)
	is.Equal(len(trash), 1)
	is.True(!trash[0].Restorable)
}

func TestPurgeWithoutUnitOfWork(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	s := newSchemaService(&now)
	ctx := context.Background()
	sc, err := s.Create(ctx, schemaOwner, app.NewSchemaInput{Name: "A", Schema: json.RawMessage(doc)})
	is.NoErr(err)
	is.NoErr(s.Records.CreateRecord(ctx, &enrichment.Record{ID: "r1", OrgID: "org1", SchemaID: sc.ID, Type: enrichment.RecordEnrichment, CreatedAt: now}))
	is.NoErr(s.Records.CreateRecord(ctx, &enrichment.Record{ID: "r2", OrgID: "org1", SchemaID: "other", Type: enrichment.RecordEnrichment, CreatedAt: now}))
	editor := &access.Principal{OrgID: "org1", Role: access.Editor, Scopes: access.DefaultScopes()}
	_, err = s.PurgeEnrichmentData(ctx, editor, sc.ID)
	is.True(errors.Is(err, access.ErrForbidden)) // owner only
	p, err := s.PurgeEnrichmentData(ctx, schemaOwner, sc.ID)
	is.NoErr(err)
	is.Equal(p.RecordsDeleted, 1)
	_, err = s.Records.GetRecord(ctx, "org1", "r2")
	is.NoErr(err)
}

func TestUpdateMovesUpdatedAtOnChangeOnly(t *testing.T) {
	is := is.New(t)
	now := time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	s := newSchemaService(&now)
	ctx := context.Background()
	sc, err := s.Create(ctx, schemaOwner, app.NewSchemaInput{Name: "A", Schema: json.RawMessage(doc), Tags: []string{"x"}})
	is.NoErr(err)
	created := sc.UpdatedAt
	now = now.Add(time.Minute)
	same := "A"
	got, err := s.Update(ctx, schemaOwner, sc.ID, app.SchemaUpdate{Name: &same, Tags: &[]string{"x"}, Schema: json.RawMessage(" " + doc)})
	is.NoErr(err)
	is.True(got.UpdatedAt.Equal(created)) // nothing changed
	pin := true
	got, err = s.Update(ctx, schemaOwner, sc.ID, app.SchemaUpdate{IsPinned: &pin})
	is.NoErr(err)
	is.True(got.UpdatedAt.Equal(now))
	now = now.Add(time.Minute)
	got, err = s.Update(ctx, schemaOwner, sc.ID, app.SchemaUpdate{Schema: json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"}}}`)})
	is.NoErr(err)
	is.True(got.UpdatedAt.Equal(now))
	is.True(got.ContentHash != sc.ContentHash)
}
