package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

// TestSchemaCreateRefusesHostileText: the embedded library refuses what HTTP
// refuses, naming the field, and stores nothing.
func TestSchemaCreateRefusesHostileText(t *testing.T) {
	store := memory.NewSchemaStore()
	svc := &app.SchemaService{Schemas: store, Compiler: jsonschema.New(schema.Limits{}), Clock: system.Clock{}, IDs: system.IDs{}}
	p := &access.Principal{OrgID: "org", UserID: "u", Role: access.Owner, Scopes: access.DefaultScopes()}
	doc := func(prop, enum string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{"type": "string", "enum": []string{"a", enum}}}})
		return b
	}
	tests := []struct {
		name  string
		in    app.NewSchemaInput
		field string
	}{
		{"NUL in name", app.NewSchemaInput{Name: "Co\x00", Schema: doc("p", "b")}, "name"},
		{"invalid UTF-8 in description", app.NewSchemaInput{Name: "Co", Description: "\xff", Schema: doc("p", "b")}, "description"},
		{"NUL in property name", app.NewSchemaInput{Name: "Co", Schema: json.RawMessage(`{"type":"object","properties":{"na\u0000me":{"type":"string"}}}`)}, `schema.properties.na\u0000me`},
		{"lone surrogate in enum", app.NewSchemaInput{Name: "Co", Schema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","enum":["a","\ud800"]}}}`)}, "schema.properties.p.enum.1"},
		{"invalid bytes in property name", app.NewSchemaInput{Name: "Co", Schema: json.RawMessage("{\"type\":\"object\",\"properties\":{\"\xfe\":{\"type\":\"string\"}}}")}, `schema.properties.\xfe`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			_, err := svc.Create(context.Background(), p, tt.in)
			is.True(errors.Is(err, ports.ErrInvalid))
			e, ok := app.AsError(err)
			is.True(ok)
			is.Equal(e.Field, tt.field)
			is.Equal(e.Code, "invalid_request")
		})
	}
	is := is.New(t)
	res, err := store.ListSchemas(context.Background(), "org", page.Request{})
	is.NoErr(err)
	is.Equal(len(res.Items), 0) // nothing stored
	_, err = svc.Create(context.Background(), p, app.NewSchemaInput{Name: "Co \ufffd", Schema: doc("p\ufffd", "b")})
	is.NoErr(err) // U+FFFD written as such is text
	_, err = svc.Get(context.Background(), p, "id\x00")
	e, _ := app.AsError(err)
	is.Equal(e.Field, "id")
}

func TestCheckEnrichText(t *testing.T) {
	ok := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme \ud83d\ude00"}`), SchemaID: "s", Models: []string{"sandbox::echo"}}
	tests := []struct {
		name  string
		edit  func(*app.EnrichRequest)
		field string
	}{
		{"clean", func(*app.EnrichRequest) {}, ""},
		{"NUL in entity_data key", func(r *app.EnrichRequest) { r.EntityData = json.RawMessage(`{"n\u0000":"x"}`) }, `entity_data.n\u0000`},
		{"lone surrogate in entity_data value", func(r *app.EnrichRequest) { r.EntityData = json.RawMessage(`{"a":{"b":["\udfff"]}}`) }, "entity_data.a.b.0"},
		{"NUL in schema_id", func(r *app.EnrichRequest) { r.SchemaID = "s\x00" }, "schema_id"},
		{"invalid UTF-8 in a model", func(r *app.EnrichRequest) { r.Models = []string{"ok", "\xff"} }, "models.1"},
		{"NUL in model", func(r *app.EnrichRequest) { r.Model = "\x00" }, "model"},
		{"NUL in strategy", func(r *app.EnrichRequest) { r.Strategy = "auto\x00" }, "strategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			req := ok
			tt.edit(&req)
			err := app.CheckEnrichText(req)
			if tt.field == "" {
				is.NoErr(err)
				return
			}
			e, isErr := app.AsError(err)
			is.True(isErr)
			is.Equal(e.Field, tt.field)
		})
	}
}
